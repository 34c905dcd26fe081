package server

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// sessionCookieOf returns c's session cookie for the test server.
func sessionCookieOf(t *testing.T, c *http.Client) *http.Cookie {
	t.Helper()
	u, _ := url.Parse(shared.http.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == sessionCookie {
			return ck
		}
	}
	t.Fatal("no session cookie")
	return nil
}

// TestSignOutEndsSessionOnServer: a copy of the cookie taken before signing out no longer
// opens the session; another session of the same token goes on.
func TestSignOutEndsSessionOnServer(t *testing.T) {
	c, other := browserClient(t), browserClient(t)
	signIn(t, c, shared.acme)
	signIn(t, other, shared.acme)
	old := sessionCookieOf(t, c)
	_, page := get(t, c, "/endpoints")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no csrf field on the endpoints page")
	}
	if code := poster(t, c)("/signout", url.Values{"csrf": {m[1]}}); code != http.StatusSeeOther {
		t.Fatalf("sign out: status %d, want 303", code)
	}
	replay := browserClient(t)
	u, _ := url.Parse(shared.http.URL)
	replay.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: old.Value}})
	if code, _ := get(t, replay, "/endpoints"); code != http.StatusSeeOther {
		t.Fatalf("the cookie of a signed-out session still opens it (status %d, want 303 to /signin)", code)
	}
	if code, _ := get(t, other, "/endpoints"); code != http.StatusOK {
		t.Fatalf("another session of the same token: status %d, want 200", code)
	}
}

// TestSignedOutSessionsBounded: the tokens file remembers a signed-out session only until
// it would have expired, and at most maxSignedOut of them; a sign-out past the bound
// replaces the session key, which ends every session, the remembered ones included.
func TestSignedOutSessionsBounded(t *testing.T) {
	store, err := OpenTokenStore(filepath.Join(t.TempDir(), "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	store.maxSignedOut = 3
	tok, _, err := store.Create(false, "acme", "bound")
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := store.Lookup(tok)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := &Server{opts: Options{Tokens: store, SessionTTL: time.Hour, Now: func() time.Time { return now }}}
	open := func(cookie string) bool {
		r, _ := http.NewRequest(http.MethodGet, "/endpoints", nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
		_, ok := s.session(r)
		return ok
	}
	signOut := func(cookie string) {
		t.Helper()
		r, _ := http.NewRequest(http.MethodGet, "/endpoints", nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
		p, ok := s.session(r)
		if !ok {
			t.Fatal("session does not open before signing out")
		}
		if err := store.endSession(p.nonce, p.token.ID, p.expires, now); err != nil {
			t.Fatal(err)
		}
		if open(cookie) {
			t.Fatal("a signed-out session still opens")
		}
	}
	newSession := func() string {
		c, err := s.newSession(tk)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Sessions expire: the ones signed out an hour ago are forgotten.
	for range 3 {
		signOut(newSession())
	}
	now = now.Add(time.Hour + time.Second)
	kept := newSession()
	for range 3 {
		signOut(newSession())
	}
	if n := len(store.file.SignedOut); n != 3 {
		t.Fatalf("%d signed-out sessions remembered, want 3 (the expired ones forgotten)", n)
	}
	// The fourth live sign-out crosses the bound: the key changes, every session ends.
	if !open(kept) {
		t.Fatal("a session that did not sign out does not open")
	}
	last := newSession()
	signOut(last)
	if n := len(store.file.SignedOut); n > 3 {
		t.Fatalf("%d signed-out sessions remembered, past the bound of 3", n)
	}
	if open(kept) || open(last) {
		t.Fatal("past the bound, sessions signed in before still open")
	}
	if !open(newSession()) {
		t.Fatal("past the bound, a new session does not open")
	}
}

// TestSignInRefusesEmptyCSRF: the sign-in form's double submit refuses an empty or short
// token, even when the cookie and the field agree.
func TestSignInRefusesEmptyCSRF(t *testing.T) {
	for _, tok := range []string{"", "x", "short-but-equal"} {
		c := browserClient(t)
		u, _ := url.Parse(shared.http.URL)
		c.Jar.SetCookies(u, []*http.Cookie{{Name: signinCookie, Value: tok}})
		resp, err := c.PostForm(shared.http.URL+"/signin", url.Values{"token": {shared.acme}, "csrf": {tok}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("sign-in with cookie and csrf %q: status %d, want 403", tok, resp.StatusCode)
		}
	}
	// The empty cookie, sent as a header the jar would drop.
	req, _ := http.NewRequest(http.MethodPost, shared.http.URL+"/signin", nil)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", signinCookie+"=")
	req.Body = http.NoBody
	resp, err := browserClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in with an empty cookie and no field: status %d, want 403", resp.StatusCode)
	}
	// A dashboard form with an empty csrf field is refused too.
	c := browserClient(t)
	signIn(t, c, shared.acme)
	if code := poster(t, c)("/signout", url.Values{"csrf": {""}}); code != http.StatusForbidden {
		t.Errorf("sign-out with an empty csrf: status %d, want 403", code)
	}
}

// TestReservedTenantRefusedEverywhere: the operational tenant gets no token, portal link,
// endpoint or fan-out send, by the API, the Go API the CLI uses, or a token written
// before the name was reserved.
func TestReservedTenantRefusedEverywhere(t *testing.T) {
	ops := herald.OpsTenant
	if _, _, err := shared.tokens.Create(false, ops, "reserved"); err == nil {
		t.Error("herald token create --tenant herald-ops: a token was made")
	}
	if _, err := shared.tokens.MintPortalLink("http://127.0.0.1", ops, "", time.Hour, time.Now(), ""); err == nil {
		t.Error("herald portal-link --tenant herald-ops: a link was minted")
	}
	for _, tc := range []struct {
		what, method, path string
		body               map[string]any
	}{
		{"portal link", "POST", "/v1/portal-links", map[string]any{"tenant": ops}},
		{"portal link to its endpoint", "POST", "/v1/portal-links", map[string]any{"tenant": ops, "endpoint": herald.OpsEndpointID}},
		{"endpoint moved in", "PUT", "/v1/endpoints/" + uniq("reserved"), map[string]any{"tenant": ops, "url": "http://127.0.0.1:1/hook"}},
		{"fan-out send", "POST", "/v1/events", map[string]any{"tenant": ops, "type": "order.paid", "data": map[string]any{}}},
	} {
		code, out := call(t, tc.method, tc.path, shared.operator, tc.body)
		if code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400; %v", tc.what, code, out)
		}
	}
	// The dashboard's register form, as an operator naming the tenant.
	c := browserClient(t)
	signIn(t, c, shared.operator)
	_, page := get(t, c, "/register")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no csrf field on the register form")
	}
	id := uniq("reserved-form")
	resp, err := c.PostForm(shared.http.URL+"/register", url.Values{"csrf": {m[1]}, "id": {id}, "url": {"http://127.0.0.1:1/hook"}, "tenant": {ops}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "reserved") {
		t.Errorf("register form with tenant herald-ops: status %d, want 400 saying the name is reserved", resp.StatusCode)
	}
	if _, err := shared.starter.GetEndpoint(t.Context(), id); err == nil {
		t.Errorf("register form with tenant herald-ops registered endpoint %s", id)
	}
	// The Go API refuses without asking Temporal.
	if _, err := shared.starter.Publish(t.Context(), ops, herald.Event{ID: uniq("evt_reserved"), Type: "order.paid", Data: []byte(`{}`)}); err == nil {
		t.Error("starter.Publish to herald-ops: accepted")
	}
	if _, err := shared.starter.PutEndpoint(t.Context(), herald.PutEndpointRequest{ID: uniq("reserved-go"), Tenant: ops, URL: "http://127.0.0.1:1/hook"}); err == nil {
		t.Error("starter.PutEndpoint into herald-ops: accepted")
	}
	// A token for the reserved tenant already in the file opens nothing.
	tok, tk, err := shared.tokens.Create(false, "acme", "then renamed")
	if err != nil {
		t.Fatal(err)
	}
	err = shared.tokens.update(func(f *tokensFile) error {
		for i := range f.Tokens {
			if f.Tokens[i].ID == tk.ID {
				f.Tokens[i].Tenant = ops
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, "GET", "/v1/endpoints", tok, nil); code != http.StatusUnauthorized {
		t.Errorf("a stored token of tenant herald-ops: status %d, want 401", code)
	}
}

// TestSignedOutSessionsPerToken: one token's sign-outs keep at most maxSignedOutPerToken
// entries (its oldest forgotten), so they never fill the list and end other tokens' sessions.
func TestSignedOutSessionsPerToken(t *testing.T) {
	store, err := OpenTokenStore(filepath.Join(t.TempDir(), "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	store.maxSignedOut, store.maxSignedOutPerToken = 4, 2
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := &Server{opts: Options{Tokens: store, SessionTTL: time.Hour, Now: func() time.Time { return now }}}
	session := func(secret string) (string, principal) {
		t.Helper()
		tk, _ := store.Lookup(secret)
		c, err := s.newSession(tk)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodGet, "/endpoints", nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: c})
		p, ok := s.session(r)
		if !ok {
			t.Fatal("a new session does not open")
		}
		return c, p
	}
	opens := func(c string) bool {
		r, _ := http.NewRequest(http.MethodGet, "/endpoints", nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: c})
		_, ok := s.session(r)
		return ok
	}
	busy, _, err := store.Create(false, "acme", "busy")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := store.Create(false, "globex", "other")
	if err != nil {
		t.Fatal(err)
	}
	otherCookie, _ := session(other)
	key := string(store.file.SessionKey)
	var last string
	for range 10 {
		c, p := session(busy)
		now = now.Add(time.Second)
		if err := store.endSession(p.nonce, p.token.ID, p.expires, now); err != nil {
			t.Fatal(err)
		}
		last = c
	}
	if n := len(store.file.SignedOut); n != 2 {
		t.Fatalf("%d signed-out sessions remembered for one token, want 2", n)
	}
	if string(store.file.SessionKey) != key || !opens(otherCookie) {
		t.Fatal("one token's sign-outs replaced the session key and ended another token's session")
	}
	if opens(last) {
		t.Fatal("the latest signed-out session opens again")
	}
}
