package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestEndpointRateLimitAPI: PUT sets an endpoint's rate limit, GET shows it, 0 removes it,
// and a value out of range is refused with what to give.
func TestEndpointRateLimitAPI(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("rated")
	code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"url": rcv.URL, "tenant": "acme", "rate_limit": 5})
	want(t, "put", code, http.StatusCreated, out)
	code, got := call(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil)
	want(t, "get endpoint", code, http.StatusOK, got)
	if got["rate_limit"] != float64(5) {
		t.Fatalf("endpoint state shows rate_limit %v, want 5: %v", got["rate_limit"], got)
	}
	c := browserClient(t)
	signIn(t, c, shared.acme)
	if _, page := get(t, c, "/endpoints/"+ep); !strings.Contains(page, `<b id="rate-limit">5/s</b>`) {
		t.Errorf("the dashboard's endpoint page does not show the rate limit:\n%s", page)
	}
	for _, bad := range []any{1001, -1, "5/s"} {
		code, out = call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"rate_limit": bad})
		if code != http.StatusBadRequest {
			t.Errorf("rate_limit %v: status %d, want 400: %v", bad, code, out)
		}
	}
	code, out = call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"rate_limit": 0})
	want(t, "put rate_limit 0", code, http.StatusOK, out)
	code, got = call(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil)
	want(t, "get endpoint", code, http.StatusOK, got)
	if v, ok := got["rate_limit"]; ok {
		t.Fatalf("rate_limit %v after removing it, want none", v)
	}
}
