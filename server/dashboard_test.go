package server

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
)

func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI()
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi.json is version %q, want 3.1.0", doc.OpenAPI)
	}
	var documented, routed []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range shared.server.routes() {
		if rt.api {
			routed = append(routed, rt.method+" "+rt.path)
		}
		if rt.api != strings.HasPrefix(rt.path, "/v1/") {
			t.Errorf("route %s %s: API routes are exactly those under /v1/", rt.method, rt.path)
		}
	}
	slices.Sort(documented)
	slices.Sort(routed)
	if !slices.Equal(documented, routed) {
		t.Fatalf("openapi.json and the routes differ:\n documented %v\n routed     %v", documented, routed)
	}
	code, raw := callRaw(t, "GET", "/v1/openapi.json", "", nil)
	if code != http.StatusOK || !json.Valid(raw) || len(raw) != len(openAPI) {
		t.Fatalf("GET /v1/openapi.json: status %d, %d bytes", code, len(raw))
	}
}

func TestTemporalUnreachableIs503(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := client.NewLazyClient(client.Options{HostPort: addr, Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := New(Options{Starter: starter.New(c, starter.Options{}), Client: c, Tokens: shared.tokens, Logger: quiet, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/endpoints", "/v1/events/evt_x"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+shared.operator)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "Temporal is unreachable") {
			t.Fatalf("GET %s with Temporal down: %d %s, want 503", path, rec.Code, rec.Body)
		}
		record("GET", path, rec.Code)
	}
}

func TestSecurityHeadersAndCookie(t *testing.T) {
	resp, err := http.Get(shared.http.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	for k, v := range map[string]string{
		"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
	} {
		if h.Get(k) != v {
			t.Errorf("%s is %q, want %q", k, h.Get(k), v)
		}
	}
	csp := h.Get("Content-Security-Policy")
	for _, d := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP %q lacks %q", csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP allows inline code: %q", csp)
	}

	c := browserClient(t)
	signIn(t, c, shared.acme)
	u, _ := url.Parse(shared.http.URL)
	var session *http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == sessionCookie {
			session = ck
		}
	}
	if session == nil {
		t.Fatal("no session cookie after signing in")
	}
	// The jar does not keep attributes: check the Set-Cookie header of a fresh sign-in.
	form := signinFormFor(t)
	resp, err = form.client.PostForm(shared.http.URL+"/signin", url.Values{"token": {shared.acme}, "csrf": {form.csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var set string
	for _, v := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(v, sessionCookie+"=") {
			set = v
		}
	}
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(set, attr) {
			t.Errorf("session cookie %q lacks %s", set, attr)
		}
	}
	if strings.Contains(set, "Secure") {
		t.Errorf("session cookie %q is Secure on plain http: the browser would never send it back", set)
	}
}

type signinForm struct {
	client *http.Client
	csrf   string
}

func signinFormFor(t *testing.T) signinForm {
	t.Helper()
	c := browserClient(t)
	_, page := get(t, c, "/signin")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no csrf field on the sign-in form")
	}
	return signinForm{c, m[1]}
}

func TestCSRFRefused(t *testing.T) {
	rcv, ep, ev := deadLetter(t, "csrf", "evt_csrf", 1)

	c := browserClient(t)
	signIn(t, c, shared.acme)
	_, page := get(t, c, "/endpoints/"+ep)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("endpoint page has no csrf field:\n%s", page)
	}
	post := poster(t, c)
	for _, bad := range []url.Values{{}, {"csrf": {"forged"}}, {"csrf": {strings.ToUpper(m[1])}}} {
		if code := post("/events/"+ev+"/replay", bad); code != http.StatusForbidden {
			t.Fatalf("replay form with csrf %q: status %d, want 403", bad.Get("csrf"), code)
		}
		if code := post("/endpoints/"+ep+"/replay", bad); code != http.StatusForbidden {
			t.Fatalf("bulk replay form with csrf %q: status %d, want 403", bad.Get("csrf"), code)
		}
		if code := post("/signout", bad); code != http.StatusForbidden {
			t.Fatalf("sign-out form with csrf %q: status %d, want 403", bad.Get("csrf"), code)
		}
	}
	// Another session's token is refused too.
	other := browserClient(t)
	signIn(t, other, shared.acme)
	_, otherPage := get(t, other, "/endpoints/"+ep)
	if om := csrfField.FindStringSubmatch(otherPage); om == nil || om[1] == m[1] {
		t.Fatal("two sessions share a CSRF token")
	} else if code := post("/events/"+ev+"/replay", url.Values{"csrf": {om[1]}}); code != http.StatusForbidden {
		t.Fatalf("replay with another session's csrf: status %d, want 403", code)
	}
	if rcv.count(ev) != 1 {
		t.Fatalf("a refused form replayed the event (receiver saw it %d times)", rcv.count(ev))
	}
	// The right token works.
	rcv.set(http.StatusOK)
	if code := post("/events/"+ev+"/replay", url.Values{"csrf": {m[1]}, "back": {"/endpoints/" + ep}}); code != http.StatusSeeOther {
		t.Fatalf("replay with the session's csrf: status %d, want 303", code)
	}
	waitState(t, ev, "delivered")

	// The sign-in form needs its own token.
	plain := browserClient(t)
	resp, err := plain.PostForm(shared.http.URL+"/signin", url.Values{"token": {shared.acme}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-in without its csrf token: status %d, want 403", resp.StatusCode)
	}
	// Signed out, pages send you to the sign-in form; a wrong token is refused.
	if code, _ := get(t, plain, "/endpoints"); code != http.StatusSeeOther {
		t.Fatalf("GET /endpoints signed out: status %d, want 303 to /signin", code)
	}
	f := signinFormFor(t)
	resp, err = f.client.PostForm(shared.http.URL+"/signin", url.Values{"token": {"hrld_wrong"}, "csrf": {f.csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("sign-in with a wrong token: status %d, want 401", resp.StatusCode)
	}
}

func TestDashboardPagesEscapeAndShowState(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("pages")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	// A hostile event type is refused at the door (the grammar of types has no '<').
	code, out := call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "type": `<script>alert(1)</script>`, "data": 1})
	want(t, "send a hostile type", code, http.StatusBadRequest, out)
	code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "type": "order.paid", "data": 1})
	want(t, "send", code, http.StatusAccepted, out)
	ev := out["id"].(string)
	waitState(t, ev, "delivered")

	c := browserClient(t)
	signIn(t, c, shared.acme)
	var page string
	// The page lists deliveries from visibility, which may lag the status query under load.
	eventually(t, "the endpoint page to list the delivery", func() bool {
		var code int
		code, page = get(t, c, "/endpoints/"+ep)
		if code != http.StatusOK {
			t.Fatalf("endpoint page: %d", code)
		}
		return strings.Contains(page, `data-event="`+ev+`" data-state="delivered"`)
	})
	for _, s := range []string{`data-event="` + ev + `" data-state="delivered"`, "<svg", `data-state="closed"`, `id="bulk-replay"`} {
		if !strings.Contains(page, s) {
			t.Errorf("endpoint page lacks %q", s)
		}
	}
	_, frag := get(t, c, "/endpoints/"+ep+"?fragment=live")
	if strings.Contains(frag, "<html") || !strings.Contains(frag, ev) {
		t.Error("the live fragment should be the live part only, with the deliveries")
	}
	_, evPage := get(t, c, "/events/"+ev)
	if !strings.Contains(evPage, `id="attempts-heading"`) || !strings.Contains(evPage, `id="timeline"`) || !strings.Contains(evPage, "200 OK") {
		t.Error("event page lacks the attempt timeline")
	}
	if strings.Contains(evPage, "temporal-link") {
		t.Error("a tenant sees the Temporal UI link")
	}
	op := browserClient(t)
	signIn(t, op, shared.operator)
	_, evPage = get(t, op, "/events/"+ev+"?tenant=acme")
	if !strings.Contains(evPage, `href="http://127.0.0.1:8233/namespaces/default/workflows/delivery@acme:`+ev+`"`) {
		t.Error("an operator's event page lacks the Temporal UI link")
	}
}

func TestBanner(t *testing.T) {
	loc := time.UTC
	at := func(h, m int) time.Time { return time.Date(2026, 5, 1, h, m, 0, 0, loc) }
	e := herald.EndpointState{ID: "acme-prod", Tenant: "acme"}
	if b := Banner(e, true, loc); b != "" {
		t.Fatalf("an empty circuit state means closed: no banner, got %q", b)
	}
	e.Circuit = policy.CircuitView{State: "open", Reason: "5 consecutive failures", Since: at(12, 3), TrippedAt: at(12, 3), NextProbeAt: at(12, 8)}
	wantText := "Deliveries to your endpoint acme-prod are paused since 12:03:00: its circuit opened after 5 consecutive failures. The next probe is at 12:08:00."
	if b := Banner(e, true, loc); b != wantText {
		t.Fatalf("banner\n  %q\nwant\n  %q", b, wantText)
	}
	if b := Banner(e, false, loc); !strings.HasPrefix(b, "Deliveries to endpoint acme-prod (tenant acme) are paused since 12:03:00") {
		t.Fatalf("operator banner %q", b)
	}
	// A failed probe opens the circuit again: the pause still dates from the trip, and the
	// sentence says when and why it opened again.
	e.Circuit = policy.CircuitView{State: "open", Reason: "probe failed", Since: at(12, 8), TrippedAt: at(12, 3), NextProbeAt: at(12, 18)}
	wantText = "Deliveries to your endpoint acme-prod are paused since 12:03:00 (circuit open); it opened again at 12:08:00 after its probe failed. The next probe is at 12:18:00."
	if b := Banner(e, true, loc); b != wantText {
		t.Fatalf("banner after a failed probe\n  %q\nwant\n  %q", b, wantText)
	}
	e.Circuit = policy.CircuitView{State: "half_open", Since: at(12, 9)}
	if b := Banner(e, true, loc); !strings.Contains(b, "half-open (probing) since 12:09:00") {
		t.Fatalf("half-open banner %q", b)
	}
	e.Disabled = &policy.Disablement{Cause: policy.DisabledGone, Reason: "the receiver answered 410 Gone", At: at(13, 0)}
	wantText = "Your endpoint acme-prod is disabled since 2026-05-01 13:00: the receiver answered 410 Gone. Nothing is sent to it until it is enabled again."
	if b := Banner(e, true, loc); b != wantText {
		t.Fatalf("disabled banner\n  %q\nwant\n  %q", b, wantText)
	}
}

func TestTokenStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "tokens.json")
	s, err := OpenTokenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(true, "acme", ""); err == nil {
		t.Fatal("a token cannot be both operator and tenant")
	}
	if _, _, err := s.Create(false, "bad name", ""); err == nil {
		t.Fatal("a bad tenant name was accepted")
	}
	tok, tk, err := s.Create(false, "acme", "ci")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file mode %v, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), tok) || strings.Contains(string(raw), strings.TrimPrefix(tok, tokenPrefix)) {
		t.Fatal("the tokens file holds the token itself")
	}
	// A second store on the same file (another serve instance) sees it, and its revocation.
	other, _ := OpenTokenStore(path)
	if got, ok := other.Lookup(tok); !ok || got.Tenant != "acme" || got.ID != tk.ID {
		t.Fatalf("lookup from another store: %+v %v", got, ok)
	}
	if _, ok := other.Lookup(tok + "x"); ok {
		t.Fatal("a wrong token was accepted")
	}
	if err := s.Revoke("tok_nothing"); err == nil {
		t.Fatal("revoking an unknown id should fail")
	}
	if err := s.Revoke(tk.ID); err != nil {
		t.Fatal(err)
	}
	// No forced reread: the store must notice the change by itself, even within the
	// file system's timestamp granularity.
	if _, ok := other.Lookup(tok); ok {
		t.Fatal("a revoked token is still accepted")
	}
	list, _ := s.List()
	if len(list) != 0 {
		t.Fatalf("list after revoke: %v", list)
	}
}

func TestSessionEndsWithRevokedToken(t *testing.T) {
	tok, tk, err := shared.tokens.Create(false, "acme", "revoked in a test")
	if err != nil {
		t.Fatal(err)
	}
	c := browserClient(t)
	signIn(t, c, tok)
	if code, _ := get(t, c, "/endpoints"); code != http.StatusOK {
		t.Fatalf("signed in: status %d", code)
	}
	if err := shared.tokens.Revoke(tk.ID); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, c, "/endpoints"); code != http.StatusSeeOther {
		t.Fatalf("after revoking the token the session still works (status %d)", code)
	}
}

// poster returns a function that posts a form with c and returns the answer's status.
func poster(t *testing.T, c *http.Client) func(path string, v url.Values) int {
	return func(path string, v url.Values) int {
		t.Helper()
		resp, err := c.PostForm(shared.http.URL+path, v)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}

// TestDashboardDisableEnable: the tenant disables its endpoint from the dashboard with a
// reason; the page shows the banner and an Enable button, which enables it again.
func TestDashboardDisableEnable(t *testing.T) {
	ep, _, c := endpointSession(t, "dash-disable", "acme", shared.acme)
	_, page := get(t, c, "/endpoints/"+ep)
	m := csrfField.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `id="disable"`) {
		t.Fatalf("endpoint page has no disable button:\n%s", page)
	}
	post := poster(t, c)
	if code := post("/endpoints/"+ep+"/disable", url.Values{"reason": {"moving datacenters"}}); code != http.StatusForbidden {
		t.Fatalf("disable without csrf: status %d, want 403", code)
	}
	if code := post("/endpoints/"+ep+"/disable", url.Values{"csrf": {m[1]}, "reason": {"moving datacenters"}}); code != http.StatusSeeOther {
		t.Fatalf("disable: status %d, want 303", code)
	}
	_, page = get(t, c, "/endpoints/"+ep)
	if !strings.Contains(page, "is disabled since") || !strings.Contains(page, "moving datacenters") || !strings.Contains(page, `id="enable"`) {
		t.Fatalf("disabled endpoint page lacks the banner, the reason or the enable button:\n%s", page)
	}
	if code := post("/endpoints/"+ep+"/enable", url.Values{"csrf": {m[1]}}); code != http.StatusSeeOther {
		t.Fatalf("enable: status %d, want 303", code)
	}
	_, page = get(t, c, "/endpoints/"+ep)
	if strings.Contains(page, "is disabled since") || !strings.Contains(page, `id="disable"`) {
		t.Fatalf("enabled endpoint page still shows it disabled:\n%s", page)
	}
}
