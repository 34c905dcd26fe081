package tests

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
)

// TestRateLimitTwoWorkers: with two workers, a burst of 30 events to an endpoint limited
// to 5 requests per second reaches the receiver at most 5 per second — counted by the
// second each request was signed in (webhook-timestamp) — every event is delivered
// exactly once, and waiting for the rate limit uses no attempt.
func TestRateLimitTwoWorkers(t *testing.T) {
	t.Parallel()
	secondWorker(t, 200*time.Millisecond)
	rcv := newReceiver(t, status(http.StatusOK))
	const limit, events = 5, 30
	o := fast(3, time.Second)
	rate := limit
	o.RateLimit = &rate
	putEndpoint(t, "rated", rcv.URL, o)
	if st := endpointState(t, "rated"); st.RateLimit != limit {
		t.Fatalf("endpoint get shows rate limit %d, want %d", st.RateLimit, limit)
	}

	t0 := time.Now()
	ids := sendN(t, "rated", events)
	for _, id := range ids {
		st := waitState(t, id, herald.StateDelivered)
		if len(st.Attempts) != 1 || st.Attempts[0].Number != 1 {
			t.Errorf("event %s delivered with attempts %+v: waiting for the rate limit must use none", id, st.Attempts)
		}
	}

	t.Logf("delivered at +%s", time.Since(t0))
	reqs := rcv.requests()
	if len(reqs) > 0 {
		t.Logf("first request at +%s, last at +%s", reqs[0].At.Sub(t0), reqs[len(reqs)-1].At.Sub(t0))
	}
	if len(reqs) != events {
		t.Errorf("receiver saw %d requests for %d events", len(reqs), events)
	}
	signed := map[int64]int{}  // by webhook-timestamp (the sender's second)
	arrived := map[int64]int{} // by the receiver's clock, for the log
	seen := map[string]bool{}
	for _, r := range reqs {
		ts, err := strconv.ParseInt(r.Header.Get(signature.HeaderTimestamp), 10, 64)
		if err != nil {
			t.Fatalf("request without a webhook-timestamp: %v", err)
		}
		signed[ts]++
		arrived[r.At.Unix()]++
		id := r.Header.Get(signature.HeaderID)
		if seen[id] {
			t.Errorf("event %s received twice", id)
		}
		seen[id] = true
	}
	var secs []int64
	for s := range signed {
		secs = append(secs, s)
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i] < secs[j] })
	var counts []int
	for _, s := range secs {
		counts = append(counts, signed[s])
		if signed[s] > limit {
			t.Errorf("%d requests signed in second %d, limit %d", signed[s], s, limit)
		}
	}
	maxArrived := 0
	for _, n := range arrived {
		maxArrived = max(maxArrived, n)
	}
	t.Logf("requests per second (by webhook-timestamp): %v over %d s; most in one second of the receiver's clock: %d",
		counts, len(secs), maxArrived)
	// The limit can be lifted: 0 removes it.
	zero := 0
	if _, err := shared.starter.PutEndpoint(context.Background(), herald.PutEndpointRequest{ID: "rated",
		Overrides: &herald.Overrides{RateLimit: &zero}}); err != nil {
		t.Fatal(err)
	}
	if st := endpointState(t, "rated"); st.RateLimit != 0 || st.Overrides.RateLimit != nil {
		t.Errorf("after --rate-limit 0: rate limit %d, override %v; want none", st.RateLimit, st.Overrides.RateLimit)
	}
}

// TestRecordRateLimitHistories records the histories of a rate-limited endpoint (grants per
// second) and of a delivery that waited for its grant, for TestReplayHistories. It runs only with -record:
//
//	go test ./tests -run TestRecordRateLimitHistories -record
func TestRecordRateLimitHistories(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	rcv := newReceiver(t, status(http.StatusNoContent))
	o := fast(3, time.Second)
	one := 1
	o.RateLimit = &one
	putEndpoint(t, "rec-rated", rcv.URL, o)
	ids := sendN(t, "rec-rated", 3)
	for _, id := range ids {
		waitState(t, id, herald.StateDelivered)
	}
	save(t, "endpoint_rate_limited.json", herald.EndpointWorkflowID("rec-rated"))
	save(t, "delivery_rate_limited.json", herald.DeliveryID(herald.DefaultTenant, ids[len(ids)-1]))
}
