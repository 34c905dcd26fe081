package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
)

// TestStrayPermitDuringLastAttempt: a permit that reaches a delivery while its last attempt
// runs, one that answers none of its waits, does not make the attempt run again. The
// server refuses to complete a workflow in a task that a signal came during, and a local
// activity's result is kept only by a task that completes, so the task runs again. The
// delivery took the permit of its one wait, so it owes none and does not settle
// (settleOwedVersion): the worker's memory of answered attempts (activities/answered.go)
// answers the second run without a request. Before both, the request was sent twice.
func TestStrayPermitDuringLastAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var once sync.Once
	seen := heldBehindFirst(t, "settle-stray", "evt_settle", func(id string) {
		// The delivery's attempt is in flight: a permit it does not wait for arrives.
		once.Do(func() {
			wf := herald.DeliveryID(herald.DefaultTenant, id)
			if err := shared.client.SignalWorkflow(ctx, wf, "", herald.SignalPermit, policy.Grant{Waiter: wf}); err != nil {
				t.Errorf("signal the stray permit: %v", err)
			}
		})
		time.Sleep(500 * time.Millisecond) // the signal lands inside the attempt's workflow task
	})
	if n := seen(); n != 1 {
		t.Errorf("the held delivery reached its receiver %d times, want 1 (a stray permit re-ran its attempt)", n)
	}
}

// TestRecordSettleHistory records a delivery that waited for its endpoint's only permit and
// was delivered (delivery_held_delivered.json), for TestReplayHistories;
// delivery_held_delivered_before_settle.json is one recorded before versionSettleAttempt.
// It runs only with -record:
//
//	go test ./tests -run TestRecordSettleHistory -record
func TestRecordSettleHistory(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	heldBehindFirst(t, "rec-settle", "evt_rec_settle", func(string) {})
	save(t, "delivery_held_delivered.json", herald.DeliveryID(herald.DefaultTenant, "evt_rec_settle_held"))
}

// heldBehindFirst sends prefix_first to a new endpoint with a cap of 1, whose receiver
// holds that request until prefix_held has been sent and waits for the permit; then it
// lets the first go. during runs in the receiver at each request of prefix_held before it
// answers 200. It returns once prefix_held's workflow completed delivered, with a count
// of the requests prefix_held made.
func heldBehindFirst(t *testing.T, endpoint, prefix string, during func(id string)) func() int {
	t.Helper()
	ctx := context.Background()
	first, held := prefix+"_first", prefix+"_held"
	release := make(chan struct{})
	var mu sync.Mutex
	var heldSeen int
	rcv := newReceiver(t, nil)
	rcv.setAnswer(func(n int, w http.ResponseWriter) {
		switch id := rcv.requests()[n-1].Header.Get("webhook-id"); id {
		case first:
			<-release // holds the endpoint's only permit until the second is queued
		case held:
			mu.Lock()
			heldSeen++
			mu.Unlock()
			during(id)
		}
		w.WriteHeader(http.StatusOK)
	})
	o := fast(3, time.Second)
	o.MaxInFlight = 1
	putEndpoint(t, endpoint, rcv.URL, o)
	send := func(id string) {
		t.Helper()
		if _, err := shared.starter.Send(ctx, starter.Event{ID: id, EndpointID: endpoint, Type: "test.settle", Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	send(first)
	eventually(t, "the first attempt to hold the permit", func() bool { return len(rcv.requests()) == 1 })
	send(held)
	waitState(t, held, herald.StateWaitingEndpoint)
	close(release)
	var st herald.Status
	if err := shared.client.GetWorkflow(ctx, herald.DeliveryID(herald.DefaultTenant, held), "").Get(ctx, &st); err != nil {
		t.Fatal(err)
	}
	if st.State != herald.StateDelivered {
		t.Fatalf("%s: state %s, want delivered", held, st.State)
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return heldSeen
	}
}

// TestStraySignalDuringFirstAttempt: a delivery on the fast path (no wait: its first
// attempt runs in the workflow task that started it, and that task completes the workflow)
// gets a signal while its attempt runs. The server refuses the completion, the task is
// retried and the attempt's local activity runs again: the worker answers it from its
// memory of answered attempts (activities/answered.go) and the receiver gets one request,
// not two.
func TestStraySignalDuringFirstAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	id := fmt.Sprintf("evt_stray_first_%d", time.Now().UnixNano()) // new each run: -count=N
	wf := herald.DeliveryID(herald.DefaultTenant, id)
	var once sync.Once
	rcv := newReceiver(t, nil)
	rcv.setAnswer(func(n int, w http.ResponseWriter) {
		once.Do(func() {
			if err := shared.client.SignalWorkflow(ctx, wf, "", herald.SignalPermit, policy.Grant{Waiter: wf}); err != nil {
				t.Errorf("signal the stray permit: %v", err)
			}
			time.Sleep(500 * time.Millisecond) // the signal lands inside the attempt's workflow task
		})
		w.WriteHeader(http.StatusOK)
	})
	ep := "stray-first-" + id[len("evt_stray_first_"):]
	putEndpoint(t, ep, rcv.URL, fast(3, time.Second))
	if _, err := shared.starter.Send(ctx, starter.Event{ID: id, EndpointID: ep, Type: "test.settle", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var st herald.Status
	if err := shared.client.GetWorkflow(ctx, wf, "").Get(ctx, &st); err != nil {
		t.Fatal(err)
	}
	if st.State != herald.StateDelivered {
		t.Fatalf("state %s, want delivered", st.State)
	}
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("the receiver got %d requests, want 1 (the refused completion re-ran the attempt)", n)
	}
	if len(st.Attempts) != 1 {
		t.Errorf("%d attempts recorded, want 1", len(st.Attempts))
	}
}

// TestRecordWaitOnceHistory records an endpoint workflow that grants a waiter a permit and
// then takes the same wait from it again (the same key: its waiting attempt ran twice)
// without a second permit signal (endpoint_wait_once.json, versionWaitOnce), for TestReplayHistories. The
// waiter is a scheduled delivery, running and waiting on its timer. It runs only with
// -record:
//
//	go test ./tests -run TestRecordWaitOnceHistory -record
func TestRecordWaitOnceHistory(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusOK))
	putEndpoint(t, "rec-wait-once", rcv.URL, fast(3, time.Second))
	res, err := shared.starter.SendWith(ctx, starter.Event{ID: "evt_rec_wait_once", EndpointID: "rec-wait-once", Type: "test.settle", Data: json.RawMessage(`{}`)},
		starter.SendOptions{DeliverAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	ep := herald.EndpointWorkflowID("rec-wait-once")
	wait := herald.WaitRequest{Waiters: []string{res.WorkflowID}, Keys: []uint32{policy.WaitKey(0, 1, 0)}}
	for range 2 {
		if err := shared.client.SignalWorkflow(ctx, ep, "", herald.SignalWait, wait); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	var permits int
	for _, ev := range workflowHistory(t, ep) {
		if a := ev.GetSignalExternalWorkflowExecutionInitiatedEventAttributes(); a != nil && a.GetSignalName() == herald.SignalPermit {
			permits++
		}
	}
	if permits != 1 {
		t.Fatalf("%d permit signals for the same wait sent twice, want 1", permits)
	}
	save(t, "endpoint_wait_once.json", ep)
	if _, err := shared.starter.Cancel(ctx, starter.Ref{EventID: "evt_rec_wait_once"}, herald.CancelRequest{}); err != nil {
		t.Fatal(err)
	}
}
