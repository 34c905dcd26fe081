package server

import (
	"net/http"
	"strings"
	"testing"
)

// The dashboard shows an endpoint's kind of authentication, never its secret; a bad auth
// object is a 400 that names the field.
func TestDashboardShowsAuthKind(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("authed")
	putEndpoint(t, ep, "acme", rcv.URL, 1, map[string]any{"auth": map[string]any{"basic": map[string]any{"username": "herald", "password": "dash-s3cret"}}})
	c := browserClient(t)
	signIn(t, c, shared.acme)
	code, page := get(t, c, "/endpoints/"+ep)
	if code != http.StatusOK || !strings.Contains(page, `id="auth-kind">basic<`) || strings.Contains(page, "dash-s3cret") {
		t.Fatalf("endpoint page (%d): want auth kind basic and no password", code)
	}
	code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"auth": map[string]any{"oauth2": map[string]any{"token_url": "ftp://x", "client_id": "c", "client_secret": "s"}}})
	want(t, "bad token URL", code, http.StatusBadRequest, out)
	if msg, _ := out["error"].(string); !strings.Contains(msg, "auth.oauth2.token_url") {
		t.Fatalf("bad token URL: %v; want the field named", out)
	}
}
