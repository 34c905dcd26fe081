package server

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testkit/check"
)

// mintLink mints a portal link through the API as the operator and returns its URL on
// the shared server.
func mintLink(t *testing.T, body map[string]any) string {
	t.Helper()
	code, out := call(t, "POST", "/v1/portal-links", shared.operator, body)
	want(t, "mint a portal link", code, http.StatusCreated, out)
	u, _ := out["url"].(string)
	if !strings.HasPrefix(u, shared.http.URL+PortalPath+"?link=") {
		t.Fatalf("link %q, want it on %s%s", u, shared.http.URL, PortalPath)
	}
	if _, err := time.Parse(time.RFC3339, out["expires_at"].(string)); err != nil {
		t.Fatalf("expires_at %v: %v", out["expires_at"], err)
	}
	return u
}

// openLink opens link with a new cookie jar against base (a server's URL) and returns the
// client (signed in when it opened), the status and the page.
func openLink(t *testing.T, base, link string) (*http.Client, int, string, *http.Response) {
	t.Helper()
	c := browserClient(t)
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, base+u.RequestURI(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, b := check.Do(t, c, req)
	return c, resp.StatusCode, string(b), resp
}

// linkToken is the link's token (its "link" query parameter).
func linkToken(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("link")
}

func TestPortalLinkOpensOnceWithItsTenantsScope(t *testing.T) {
	acmeEP, globexEP := uniq("pl-acme"), uniq("pl-globex")
	rcv := newReceiver(t, http.StatusOK)
	putEndpoint(t, acmeEP, "acme", rcv.URL, 1, nil)
	putEndpoint(t, globexEP, "globex", rcv.URL, 1, nil)
	link := mintLink(t, map[string]any{"tenant": "acme", "ttl": "10m"})

	// A HEAD (a link checker's) does not use the link up.
	head, err := http.Head(link)
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusOK || len(head.Cookies()) != 0 {
		t.Fatalf("HEAD of the link: status %d, cookies %v; want 200 and no session", head.StatusCode, head.Cookies())
	}

	c, code, _, resp := openLink(t, shared.http.URL, link)
	if code != http.StatusSeeOther || resp.Header.Get("Location") != "/endpoints" {
		t.Fatalf("open the link: status %d to %q, want 303 to /endpoints", code, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie %+v, want HttpOnly and SameSite=Lax (a link is opened from another site)", cookie)
	}
	code, page := get(t, c, "/endpoints")
	if code != http.StatusOK || !strings.Contains(page, acmeEP) || strings.Contains(page, globexEP) {
		t.Fatalf("endpoints page: status %d; want acme's %s and not globex's %s:\n%s", code, acmeEP, globexEP, page)
	}
	if !strings.Contains(page, "tenant acme (portal link)") {
		t.Fatal("the header does not say the session is acme's, from a portal link")
	}
	if code, _ := get(t, c, "/endpoints/"+globexEP); code != http.StatusNotFound {
		t.Fatalf("globex's endpoint page: status %d, want 404", code)
	}

	_, code, page, _ = openLink(t, shared.http.URL, link)
	if code != http.StatusGone || !strings.Contains(page, "was used already") {
		t.Fatalf("second open: status %d, want 410 saying it was used already:\n%s", code, page)
	}
}

func TestPortalLinkScopedToOneEndpoint(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	one, other := uniq("pl-one"), uniq("pl-other")
	putEndpoint(t, one, "acme", rcv.URL, 1, nil)
	putEndpoint(t, other, "acme", rcv.URL, 1, nil)
	ev := send(t, shared.acme, other, uniq("evt_pl_other"))
	waitState(t, ev, "delivered")

	link := mintLink(t, map[string]any{"tenant": "acme", "endpoint": one})
	c, code, _, resp := openLink(t, shared.http.URL, link)
	if code != http.StatusSeeOther || resp.Header.Get("Location") != "/endpoints/"+one {
		t.Fatalf("open: status %d to %q, want 303 to /endpoints/%s", code, resp.Header.Get("Location"), one)
	}
	if code, page := get(t, c, "/endpoints"); code != http.StatusOK || !strings.Contains(page, one) || strings.Contains(page, other) {
		t.Fatalf("endpoints page: status %d, want %s only:\n%s", code, one, page)
	}
	for _, path := range []string{"/endpoints/" + other, "/endpoints/" + other + "/settings", "/events/" + ev + "?tenant=acme"} {
		if code, _ := get(t, c, path); code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404 (another endpoint of the tenant)", path, code)
		}
	}
	// Event search lists only the scoped endpoint's deliveries, and refuses the other's.
	if code, page := get(t, c, "/events?tenant=acme"); code != http.StatusOK || strings.Contains(page, ev) {
		t.Errorf("event search: status %d; want 200 without event %s of %s:\n%s", code, ev, other, page)
	}
	if code, page := get(t, c, "/events?endpoint="+other); strings.Contains(page, ev) || !strings.Contains(page, "does not exist") {
		t.Errorf("event search on %s: status %d; want it refused as missing, without %s:\n%s", other, code, ev, page)
	}
	code, page := get(t, c, "/register")
	if code != http.StatusForbidden || !strings.Contains(page, "for endpoint "+one+" only") {
		t.Fatalf("register page: status %d, want 403 saying the session is for %s only:\n%s", code, one, page)
	}
}

func TestPortalLinkExpires(t *testing.T) {
	link := mintLink(t, map[string]any{"tenant": "acme", "ttl": "1m"})
	later := newServer(t, func(o *Options) { o.Now = func() time.Time { return time.Now().Add(2 * time.Minute) } })
	_, code, page, _ := openLink(t, later.URL, link)
	if code != http.StatusGone || !strings.Contains(page, "has expired") || !strings.Contains(page, "Ask for a new one") {
		t.Fatalf("expired link: status %d, want 410 saying it expired and what to do:\n%s", code, page)
	}
	// Refused as expired, it was not used: it still opens in time.
	if _, code, _, _ := openLink(t, shared.http.URL, link); code != http.StatusSeeOther {
		t.Fatalf("the link in time after an expired open: status %d, want 303", code)
	}
}

// newServer starts another server on the shared stack's Temporal, with its own TokenStore
// on the shared tokens file (as another herald serve would), changed by opt.
func newServer(t *testing.T, opt func(*Options)) *httptest.Server {
	t.Helper()
	tokens, err := OpenTokenStore(shared.tokens.Path())
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Starter: shared.starter, Client: shared.client, Tokens: tokens, Namespace: shared.temporal.Namespace(), Logger: quiet}
	if opt != nil {
		opt(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(srv)
	t.Cleanup(h.Close)
	return h
}

func TestPortalLinkOnceAcrossServers(t *testing.T) {
	other := newServer(t, nil)
	link := mintLink(t, map[string]any{"tenant": "acme"})
	if _, code, _, _ := openLink(t, other.URL, link); code != http.StatusSeeOther {
		t.Fatalf("open on the second server: status %d, want 303", code)
	}
	if _, code, _, _ := openLink(t, shared.http.URL, link); code != http.StatusGone {
		t.Fatalf("open again on the first server: status %d, want 410", code)
	}
}

func TestPortalLinkTampered(t *testing.T) {
	link := mintLink(t, map[string]any{"tenant": "acme"})
	tok := linkToken(t, link)
	payload, sig, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	claims["tn"] = "globex"
	other, _ := json.Marshal(claims)
	claims["tn"], claims["x"] = "acme", float64(time.Now().Add(240*time.Hour).Unix())
	longer, _ := json.Marshal(claims)
	forged := func(p []byte) string { return base64.RawURLEncoding.EncodeToString(p) + "." + sig }
	for name, bad := range map[string]string{
		"another tenant":      forged(other),
		"a later expiry":      forged(longer),
		"signature cut short": payload + "." + sig[:len(sig)-4],
		"no signature":        payload,
		"empty":               "",
		"random":              randomString(40),
	} {
		_, code, page, _ := openLink(t, shared.http.URL, shared.http.URL+PortalPath+"?"+url.Values{"link": {bad}}.Encode())
		if code != http.StatusBadRequest || !strings.Contains(page, "is not valid") {
			t.Errorf("%s: status %d, want 400 saying the link is not valid", name, code)
		}
	}
	// The genuine link was not consumed by the forgeries.
	if _, code, _, _ := openLink(t, shared.http.URL, link); code != http.StatusSeeOther {
		t.Fatalf("the genuine link: status %d, want 303", code)
	}
}

func TestPortalLinkSessionEndsWithItsToken(t *testing.T) {
	tok, info, err := shared.tokens.Create(true, "", "mints a link, then revoked")
	if err != nil {
		t.Fatal(err)
	}
	code, out := call(t, "POST", "/v1/portal-links", tok, map[string]any{"tenant": "acme"})
	want(t, "mint", code, http.StatusCreated, out)
	c, code, _, _ := openLink(t, shared.http.URL, out["url"].(string))
	if code != http.StatusSeeOther {
		t.Fatalf("open: status %d", code)
	}
	if code, _ := get(t, c, "/endpoints"); code != http.StatusOK {
		t.Fatalf("endpoints: status %d, want 200", code)
	}
	if err := shared.tokens.Revoke(info.ID); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, c, "/endpoints"); code != http.StatusSeeOther {
		t.Fatalf("endpoints after the minting token was revoked: status %d, want 303 to sign in", code)
	}
}

func TestPortalLinkAPIRefusals(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	globexEP := uniq("pl-refuse")
	putEndpoint(t, globexEP, "globex", rcv.URL, 1, nil)
	for _, tc := range []struct {
		name, token string
		body        any
		code        int
		says        string
	}{
		{"tenant token", shared.acme, map[string]any{"tenant": "acme"}, http.StatusForbidden, "operator token"},
		{"no tenant", shared.operator, map[string]any{}, http.StatusBadRequest, "tenant is missing"},
		{"ttl over 24h", shared.operator, map[string]any{"tenant": "acme", "ttl": "25h"}, http.StatusBadRequest, "give 24h or less"},
		{"negative ttl", shared.operator, map[string]any{"tenant": "acme", "ttl": "-1m"}, http.StatusBadRequest, "shorter than a portal link needs"},
		{"ttl a bare number", shared.operator, `{"tenant":"acme","ttl":5}`, http.StatusBadRequest, `"ttl": 5 is a bare number: give a duration as a string with a unit, like "ttl": "15m"`},
		{"ttl under a minute", shared.operator, map[string]any{"tenant": "acme", "ttl": "5ns"}, http.StatusBadRequest, "shorter than a portal link needs to reach its reader (1m)"},
		{"bad tenant", shared.operator, map[string]any{"tenant": "a b"}, http.StatusBadRequest, "tenant"},
		{"another tenant's endpoint", shared.operator, map[string]any{"tenant": "acme", "endpoint": globexEP}, http.StatusBadRequest, "belongs to tenant globex, not acme"},
		{"unknown endpoint", shared.operator, map[string]any{"tenant": "acme", "endpoint": uniq("nope")}, http.StatusNotFound, "not registered"},
		{"unknown field", shared.operator, map[string]any{"tenant": "acme", "scope": "x"}, http.StatusBadRequest, "unknown field"},
	} {
		code, out := call(t, "POST", "/v1/portal-links", tc.token, tc.body)
		if msg, _ := out["error"].(string); code != tc.code || !strings.Contains(msg, tc.says) {
			t.Errorf("%s: status %d %q, want %d saying %q", tc.name, code, msg, tc.code, tc.says)
		}
	}
	if code, _ := call(t, "POST", "/v1/portal-links", "", map[string]any{"tenant": "acme"}); code != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", code)
	}
}

func TestPortalLinkUsedIDsPruned(t *testing.T) {
	store, err := OpenTokenStore(filepath.Join(t.TempDir(), "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	open := func(ttl time.Duration, at time.Time) error {
		l, err := store.MintPortalLink("https://herald.example.com", "acme", "", ttl, now, "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = store.openPortalLink(linkToken(t, l.URL), at)
		return err
	}
	for i := 0; i < 3; i++ {
		if err := open(time.Minute, now); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(store.file.UsedLinks); n != 3 {
		t.Fatalf("%d used links stored, want 3", n)
	}
	// Two minutes on, the three have expired: opening another forgets them.
	if err := open(time.Hour, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := len(store.file.UsedLinks); n != 1 {
		t.Fatalf("%d used links stored after they expired, want 1 (the last)", n)
	}
	b, err := os.ReadFile(store.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"used_portal_links"`) {
		t.Fatalf("the tokens file does not hold the used links:\n%s", b)
	}
	// A token created next keeps the used links (every change rewrites the file).
	if _, _, err := store.Create(false, "acme", ""); err != nil {
		t.Fatal(err)
	}
	if n := len(store.file.UsedLinks); n != 1 {
		t.Fatalf("creating a token dropped the used links: %d left", n)
	}
}

func TestPortalFrameAncestors(t *testing.T) {
	if _, err := New(Options{Starter: shared.starter, Client: shared.client, Tokens: shared.tokens, FrameAncestors: []string{"https://app.example.com; script-src *"}}); err == nil {
		t.Fatal("a frame ancestor with a CSP directive in it was accepted")
	}
	framed := newServer(t, func(o *Options) { o.FrameAncestors = []string{"https://app.example.com", "https://*.example.org"} })
	link := mintLink(t, map[string]any{"tenant": "acme"})
	_, code, _, resp := openLink(t, framed.URL, link)
	if code != http.StatusSeeOther {
		t.Fatalf("open: status %d", code)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors https://app.example.com https://*.example.org;") || resp.Header.Get("X-Frame-Options") != "" {
		t.Fatalf("framed server: CSP %q, X-Frame-Options %q; want the origins as frame-ancestors and no X-Frame-Options", csp, resp.Header.Get("X-Frame-Options"))
	}
	setCookie := resp.Header.Get("Set-Cookie")
	for _, attr := range []string{"SameSite=None", "Secure", "Partitioned", "HttpOnly"} {
		if !strings.Contains(setCookie, attr) {
			t.Errorf("framed portal session cookie %q lacks %s", setCookie, attr)
		}
	}
	// The default: nobody frames the dashboard.
	resp, err := http.Get(shared.http.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("default server: CSP %q, X-Frame-Options %q; want frame-ancestors 'none' and DENY", resp.Header.Get("Content-Security-Policy"), resp.Header.Get("X-Frame-Options"))
	}
}
