package starter

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// TestKnownEndpointsBounded crosses the bound on remembered endpoints (scaled down to 3):
// expired entries go first, and a full list of live ones is cleared, never grown.
func TestKnownEndpointsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := New(nil, Options{Now: func() time.Time { return now }, EndpointCacheTTL: time.Minute})
	s.knownCap = 3
	s.remember("old", "acme")
	now = now.Add(2 * time.Minute) // "old" has expired
	for _, id := range []string{"a", "b"} {
		s.remember(id, "")
	}
	s.remember("c", "acme") // full: "old" goes
	if _, ok := s.known["old"]; ok || len(s.known) != 3 {
		t.Fatalf("after an expired entry should have made room: %v", s.known)
	}
	if got := s.known["a"].tenant; got != herald.DefaultTenant {
		t.Errorf("an endpoint without a tenant is remembered as %q, want %q", got, herald.DefaultTenant)
	}
	for i := range 10 {
		s.remember(fmt.Sprintf("ep-%d", i), "acme")
		if len(s.known) > 3 {
			t.Fatalf("remembers %d endpoints, past the bound of 3", len(s.known))
		}
	}
	s.remember("ep-9", "acme") // one already known is refreshed, never clears the others
	if _, ok := s.known["ep-9"]; !ok {
		t.Fatal("the endpoint just remembered is missing")
	}
}
