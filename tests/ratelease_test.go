package tests

import (
	"net/http"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"

	"github.com/heraldhq/herald"
)

// TestRateLeaseTwoWorkers: with two workers, 150 events sent at once by 8 senders to an
// endpoint limited to 10 requests per second are all delivered, each at its first attempt,
// never more than 10 signed in one aligned second (webhook-timestamp), and admitted by the
// workers' gates against the rate budgets they lease: the endpoint workflow grants
// (signals a permit to) far fewer deliveries than it has events.
func TestRateLeaseTwoWorkers(t *testing.T) {
	t.Parallel()
	secondWorker(t, 200*time.Millisecond)
	rcv := newReceiver(t, status(http.StatusNoContent))
	const limit, events = 10, 150
	o := fast(3, time.Second)
	rate := limit
	o.RateLimit = &rate
	const id = "rate-leased"
	putEndpoint(t, id, rcv.URL, o)
	t0 := time.Now()
	ids := sendAll(t, shared.starter, id, events, 8)
	for _, ev := range ids {
		st := waitState(t, ev, herald.StateDelivered)
		if len(st.Attempts) != 1 {
			t.Errorf("event %s delivered with %d attempts: waiting for the rate limit must use none", ev, len(st.Attempts))
		}
	}
	took := time.Since(t0)
	reqs := rcv.requests()
	if len(reqs) != events {
		t.Errorf("receiver saw %d requests for %d events", len(reqs), events)
	}
	worst, seconds := checkSignedPerSecond(t, reqs, limit)
	if st := endpointState(t, id); st.Queue != 0 {
		t.Errorf("endpoint queue %d after every event was delivered, want 0", st.Queue)
	}
	permits := 0
	for _, ev := range workflowHistory(t, herald.EndpointWorkflowID(id)) {
		if ev.GetEventType() == enums.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED {
			permits++
		}
	}
	if permits > events/4 {
		t.Errorf("the endpoint workflow signalled %d permits for %d events: attempts should be admitted on leased budgets", permits, events)
	}
	t.Logf("%d events in %s (%.1f/s, limit %d), most in one second %d over %d seconds, %d permits signalled",
		events, took.Round(time.Millisecond), float64(events)/took.Seconds(), limit, worst, seconds, permits)
}

// rateLeaseHistory is the name TestRecordRateLeaseHistories records the endpoint under
// (endpoint_rate_limited_before_rate_lease.json was recorded by it with the code before
// versionRateLease).
const rateLeaseHistory = "endpoint_rate_leased.json"

// TestRecordRateLeaseHistories records a rate-limited endpoint (2 requests per second) that
// 12 events sent at once wait for, and a delivery that waited for its second, for
// TestReplayHistories. It runs only with -record:
//
//	go test ./tests -run TestRecordRateLeaseHistories -record
func TestRecordRateLeaseHistories(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	rcv := newReceiver(t, status(http.StatusNoContent))
	o := fast(3, time.Second)
	two := 2
	o.RateLimit = &two
	id := "rec-rate-leased"
	putEndpoint(t, id, rcv.URL, o)
	ids := sendAll(t, shared.starter, id, 12, 12)
	for _, ev := range ids {
		waitState(t, ev, herald.StateDelivered)
	}
	// The renewals that follow the last delivery, until the gate drops its lease.
	time.Sleep(3 * time.Second)
	save(t, rateLeaseHistory, herald.EndpointWorkflowID(id))
	if rateLeaseHistory == "endpoint_rate_leased.json" {
		save(t, "delivery_rate_leased.json", herald.DeliveryID(herald.DefaultTenant, ids[len(ids)-1]))
	}
}
