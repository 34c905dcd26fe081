package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// TestBacklogBeyondTheQueue crosses the endpoint queue's bound (policy's MaxQueue, 10,000):
// the queue is filled behind an open circuit (one signal queues MaxQueue waiters for
// deliveries that do not exist), then real deliveries come, find it full and wait on
// their own 10-minute recheck. When the queue empties (the fake waiters leave), the
// endpoint workflow must find them and nudge them back into the queue within seconds, and
// once the circuit is closed by hand every one is delivered, once. Before the nudge they
// waited for their recheck with the queue empty. With -record it also records the endpoint
// workflow's history (endpoint_nudge_overflow.json) for TestReplayHistories.
func TestBacklogBeyondTheQueue(t *testing.T) {
	ctx := context.Background()
	id := "overflow"
	if *record {
		id = "rec-nudge-overflow"
	}
	o := fast(3, time.Second)
	o.MaxInFlight = 20
	first, healthy, rcv := behindOpenCircuit(t, id, o)

	full := policy.DefaultLimiterConfig().MaxQueue
	fakes := make([]string, full)
	for i := range fakes {
		fakes[i] = fmt.Sprintf("f%05d", i) // short: the recorded history holds every one twice
	}
	wf := herald.EndpointWorkflowID(id)
	if err := shared.client.SignalWorkflow(ctx, wf, "", herald.SignalWait, herald.WaitRequest{Waiters: fakes}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the queue to fill", func() bool { return endpointState(t, id).Queue >= full })
	time.Sleep(1500 * time.Millisecond) // the gates' snapshots show the queue full

	const n = 200
	ids := sendAll(t, shared.starter, id, n, 8)
	turnedAway := 0
	for _, ev := range ids {
		st := waitState(t, ev, herald.StateWaitingEndpoint)
		if st.Waiting != nil && st.Waiting.Full {
			turnedAway++
		}
	}
	if turnedAway == 0 {
		t.Fatal("no delivery was turned away by the full queue: the test tests nothing")
	}
	t.Logf("%d of %d deliveries turned away by the full queue", turnedAway, n)
	if endpointState(t, id).QueueFullAt.IsZero() {
		t.Error("endpoint get does not say the queue was full")
	}

	dones := make([]herald.Done, len(fakes))
	for i, f := range fakes {
		dones[i] = herald.Done{Waiter: f}
	}
	if err := shared.client.SignalWorkflow(ctx, wf, "", herald.SignalDones, dones); err != nil {
		t.Fatal(err)
	}
	// Their own recheck is 10 minutes away: only the nudge brings them back in time.
	start := time.Now()
	eventually(t, "the turned-away deliveries to be queued", func() bool { return endpointState(t, id).Queue >= n })
	t.Logf("all %d queued %.1fs after the queue emptied", n, time.Since(start).Seconds())
	for _, ev := range ids {
		st, err := shared.starter.Status(ctx, starter.Ref{EventID: ev})
		if err != nil || st.Waiting == nil || !st.Waiting.Queued {
			t.Fatalf("event %s is not queued: %+v, %v", ev, st.Waiting, err)
		}
	}

	healthy.Store(true)
	if _, err := shared.starter.ResetCircuit(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, ev := range append(first, ids...) {
		waitState(t, ev, herald.StateDelivered)
	}
	seen := map[string]int{}
	for _, r := range rcv.requests() {
		seen[r.Header.Get(signature.HeaderID)]++
	}
	for _, ev := range ids {
		if seen[ev] != 1 {
			t.Errorf("event %s reached the receiver %d times, want 1", ev, seen[ev])
		}
	}
	if *record {
		time.Sleep(2 * time.Second)
		save(t, "endpoint_nudge_overflow.json", wf)
	}
}
