package main

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald"
)

// TestEndpointGetShowsRateLimit: herald endpoint get prints a rate limit in the policy line
// and on a line of its own; an endpoint without one prints neither.
func TestEndpointGetShowsRateLimit(t *testing.T) {
	five := 5
	var st herald.EndpointState
	st.ID, st.Overrides.RateLimit, st.RateLimit = "acme", &five, 5
	var b strings.Builder
	if err := (&globals{}).printEndpoint(&b, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rate limit 5/s", "Rate limit 5 requests per second, across all workers"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("endpoint get output lacks %q:\n%s", want, b.String())
		}
	}
	st.Overrides.RateLimit, st.RateLimit = nil, 0
	b.Reset()
	if err := (&globals{}).printEndpoint(&b, st); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(b.String()), "rate limit") {
		t.Errorf("an endpoint without a rate limit shows one:\n%s", b.String())
	}
}
