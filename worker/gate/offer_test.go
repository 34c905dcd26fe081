package gate

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/policy"
)

// The first attempt at an endpoint the gate does not know takes the read the process
// offered, and reads nothing itself; the offer is used once.
func TestOfferedReadTaken(t *testing.T) {
	f := &fakeEndpoints{view: closedView(100, 100, 5)}
	g := newGate(f)
	v := closedView(100, 100, 5)
	v.Endpoint.ID, v.Endpoint.URL = "ep", "https://offered.test/hook"
	g.Offer("ep", "run-1", v, time.Now())
	a := admit(t, g, "ep")
	if f.reads != 0 {
		t.Fatalf("%d reads of the endpoint after an offer, want 0", f.reads)
	}
	if a.Endpoint.URL != "https://offered.test/hook" {
		t.Fatalf("admitted with URL %q, want the offered one", a.Endpoint.URL)
	}
	if g.offeredCount() != 0 {
		t.Fatalf("%d offers kept after the first attempt took it, want 0", g.offeredCount())
	}
}

// An offer older than a read of the gate's own may be is not taken: the gate reads.
func TestStaleOfferNotTaken(t *testing.T) {
	f := &fakeEndpoints{view: closedView(100, 100, 5)}
	g := newGate(f)
	g.Offer("ep", "", closedView(100, 100, 5), time.Now().Add(-policy.MaxConfigAge-time.Second))
	admit(t, g, "ep")
	if f.reads != 1 {
		t.Fatalf("%d reads of the endpoint after a stale offer, want 1", f.reads)
	}
}

// An offer for an endpoint the gate already knows changes nothing: the gate's own
// knowledge stands (what it told the endpoint since the offer's read is in it).
func TestOfferForAKnownEndpointIgnored(t *testing.T) {
	f := &fakeEndpoints{view: closedView(100, 100, 5)}
	g := newGate(f)
	admit(t, g, "ep")
	v := closedView(100, 100, 5)
	v.Endpoint.URL = "https://offered.test/hook"
	g.Offer("ep", "", v, time.Now())
	if a := admit(t, g, "ep"); a.Endpoint.URL == "https://offered.test/hook" {
		t.Fatal("a known endpoint took an offered read")
	}
}

// TestOffersBounded crosses MaxOffers scaled down: never more than max offers kept.
func TestOffersBounded(t *testing.T) {
	g := newGate(&fakeEndpoints{})
	g.offered.max = 50
	now := time.Now()
	for i := range 500 {
		g.Offer(fmt.Sprint("ep", i), "", closedView(1, 1, 5), now)
		if n := g.offeredCount(); n > 50 {
			t.Fatalf("%d offers kept after %d, want at most 50", n, i+1)
		}
	}
}
