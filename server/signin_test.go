package server

import (
	"net/http"
	"net/url"
	"testing"
)

// TestSignInRedirectStaysHome: the reported form, through the sign-in form, answers a
// Location on this site.
func TestSignInRedirectStaysHome(t *testing.T) {
	for _, next := range []string{"/%09/evil.example", "/\\evil.example", "//evil.example", "/\t/evil.example"} {
		f := signinFormFor(t)
		resp, err := f.client.PostForm(shared.http.URL+"/signin", url.Values{"token": {shared.acme}, "csrf": {f.csrf}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/endpoints" {
			t.Errorf("sign in with next %q: %d Location %q, want 303 to /endpoints", next, resp.StatusCode, loc)
		}
	}
}
