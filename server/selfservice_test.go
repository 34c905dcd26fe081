package server

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testkit/check"
	"github.com/heraldhq/herald/starter"
)

// postForm posts a dashboard form with c, with the CSRF token of the page at from.
func postForm(t *testing.T, c *http.Client, from, path string, form url.Values) (int, string) {
	t.Helper()
	_, page := get(t, c, from)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("%s has no csrf field", from)
	}
	form.Set("csrf", m[1])
	req, err := http.NewRequest(http.MethodPost, shared.http.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, b := check.Do(t, c, req)
	return resp.StatusCode, string(b)
}

func TestRegisterFormNeverTakesAnEndpointOver(t *testing.T) {
	theirs, rcv, c := endpointSession(t, "taken", "globex", shared.acme)

	code, page := postForm(t, c, "/register", "/register", url.Values{"id": {theirs}, "url": {"http://127.0.0.1:9/x"}})
	if code != http.StatusConflict || !strings.Contains(page, "is taken: choose another id") {
		t.Fatalf("register globex's id as acme: status %d, want 409 saying the id is taken:\n%s", code, page)
	}
	if _, st := call(t, "GET", "/v1/endpoints/"+theirs, shared.operator, nil); st["tenant"] != "globex" || st["url"] != rcv.URL {
		t.Fatalf("globex's endpoint changed: %v", st)
	}
	// The endpoint workflow refuses too, atomically: a create-only put of a registered id.
	_, err := shared.starter.PutEndpoint(t.Context(), herald.PutEndpointRequest{ID: theirs, URL: "http://127.0.0.1:9/x", Tenant: "acme", CreateOnly: true})
	if !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), "is taken") {
		t.Fatalf("create-only put of a registered id: %v, want it refused as taken", err)
	}
	if _, st := call(t, "GET", "/v1/endpoints/"+theirs, shared.operator, nil); st["tenant"] != "globex" || st["url"] != rcv.URL {
		t.Fatalf("globex's endpoint changed by a refused create-only put: %v", st)
	}
}

func TestRegisterFormErrorsSayWhatToDo(t *testing.T) {
	c := browserClient(t)
	signIn(t, c, shared.acme)
	for _, tc := range []struct {
		name string
		form url.Values
		says string
	}{
		{"no id", url.Values{"url": {"https://example.com/h"}}, "Give the endpoint an id"},
		{"no URL", url.Values{"id": {uniq("reg")}}, "Give the URL"},
		{"bad id", url.Values{"id": {"a b"}, "url": {"https://example.com/h"}}, "endpoint id"},
		{"bad URL", url.Values{"id": {uniq("reg")}, "url": {"ftp://example.com/h"}}, "ftp"},
		{"bad types", url.Values{"id": {uniq("reg")}, "url": {"https://example.com/h"}, "types": {"order.**"}}, "types"},
	} {
		code, page := postForm(t, c, "/register", "/register", tc.form)
		if m := regexp.MustCompile(`id="error"[^>]*>([^<]*)`).FindStringSubmatch(page); m != nil {
			t.Logf("%s: %s", tc.name, m[1])
		}
		if code != http.StatusBadRequest || !strings.Contains(page, tc.says) {
			t.Errorf("%s: status %d, want 400 saying %q:\n%s", tc.name, code, tc.says, page)
		}
		if id := tc.form.Get("id"); id != "" && id != "a b" {
			if code, _ := call(t, "GET", "/v1/endpoints/"+id, shared.operator, nil); code != http.StatusNotFound {
				t.Errorf("%s: the refused endpoint %s exists (status %d)", tc.name, id, code)
			}
		}
	}
	// Without a CSRF token, nothing is registered.
	id := uniq("reg-csrf")
	req, _ := http.NewRequest(http.MethodPost, shared.http.URL+"/register", strings.NewReader(url.Values{"id": {id}, "url": {"https://example.com/h"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, _ := check.Do(t, c, req); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("register without CSRF: status %d, want 403", resp.StatusCode)
	}
}

func TestOperatorRegistersForATenant(t *testing.T) {
	c := browserClient(t)
	signIn(t, c, shared.operator)
	id := uniq("op-reg")
	code, page := postForm(t, c, "/register?tenant=globex", "/register", url.Values{"id": {id}, "url": {"https://example.com/h"}, "tenant": {"globex"}})
	if code != http.StatusOK || !strings.Contains(page, `id="secret"`) {
		t.Fatalf("operator registers for globex: status %d, want the secret page:\n%s", code, page)
	}
	if _, st := call(t, "GET", "/v1/endpoints/"+id, shared.globex, nil); st["tenant"] != "globex" {
		t.Fatalf("the endpoint is not globex's: %v", st)
	}
	// A tenant's form cannot name another tenant: the field is ignored.
	ac := browserClient(t)
	signIn(t, ac, shared.acme)
	id2 := uniq("acme-reg")
	if code, _ := postForm(t, ac, "/register", "/register", url.Values{"id": {id2}, "url": {"https://example.com/h"}, "tenant": {"globex"}}); code != http.StatusOK {
		t.Fatalf("acme registers: status %d", code)
	}
	if _, st := call(t, "GET", "/v1/endpoints/"+id2, shared.operator, nil); st["tenant"] != "acme" {
		t.Fatalf("acme's registration named tenant globex and got %v", st["tenant"])
	}
}

func TestRotateAndTestEventScope(t *testing.T) {
	theirs, rcv, c := endpointSession(t, "rot-globex", "globex", shared.acme)
	for _, path := range []string{"/endpoints/" + theirs + "/secret", "/endpoints/" + theirs + "/test"} {
		if code, _ := postForm(t, c, "/endpoints", path, url.Values{"grace": {"24h"}}); code != http.StatusNotFound {
			t.Errorf("acme posts %s: status %d, want 404", path, code)
		}
	}
	mine := uniq("rot-acme")
	putEndpoint(t, mine, "acme", rcv.URL, 1, nil)
	if code, page := postForm(t, c, "/endpoints/"+mine+"/settings", "/endpoints/"+mine+"/secret", url.Values{"grace": {"2y"}}); code != http.StatusBadRequest || !strings.Contains(page, "choose how long the old secret keeps signing") {
		t.Fatalf("rotate with an unknown grace: status %d, want 400 saying what to choose:\n%s", code, page)
	}
	code, page := postForm(t, c, "/endpoints/"+mine+"/settings", "/endpoints/"+mine+"/secret", url.Values{"grace": {"0"}})
	if code != http.StatusOK || !strings.Contains(page, "the old one no longer does") {
		t.Fatalf("rotate with no grace: status %d, want the secret page saying the old one no longer signs:\n%s", code, page)
	}
	// Absent, or the zero time while JSON writes absent times as such.
	if _, st := call(t, "GET", "/v1/endpoints/"+mine, shared.acme, nil); st["previous_secret_until"] != nil && st["previous_secret_until"] != "0001-01-01T00:00:00Z" {
		t.Fatalf("rotation with no grace left a previous secret: %v", st["previous_secret_until"])
	}
}
