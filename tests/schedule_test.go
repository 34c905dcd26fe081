package tests

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
)

// sendAt sends an empty event to endpoint id, scheduled for at, and returns its event id.
func sendAt(t *testing.T, id string, at time.Time) string {
	t.Helper()
	res, err := shared.starter.SendWith(context.Background(), starter.Event{Type: "test.event", EndpointID: id, Data: []byte(`{}`)}, starter.SendOptions{DeliverAt: at})
	if err != nil {
		t.Fatal(err)
	}
	if !res.DeliverAt.Equal(at.UTC()) {
		t.Errorf("send answers deliver_at %s, want %s", res.DeliverAt, at)
	}
	return res.EventID
}

// waitRef waits until the delivery ref names reaches state.
func waitRef(t *testing.T, ref starter.Ref, state herald.State) {
	t.Helper()
	eventually(t, "delivery "+ref.EventID+" to "+ref.Endpoint+" "+string(state), func() bool {
		rep, err := shared.starter.Status(context.Background(), ref)
		return err == nil && rep.Status.State == state
	})
}

// cancelOne cancels event id of the default tenant with reason.
func cancelOne(id, reason string) (starter.Cancelled, error) {
	return shared.starter.Cancel(context.Background(), starter.Ref{EventID: id}, herald.CancelRequest{Reason: reason, By: "operator"})
}

// TestScheduledSend: a scheduled send shows as scheduled with its time, then reaches the
// receiver no sooner; one cancelled before its time never does, shows as cancelled with
// the reason (status and the event list's cancelled filter), and a second cancel, or a
// cancel of a delivered event, says why it cannot. Times out of bounds are refused.
func TestScheduledSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusOK))
	putEndpoint(t, "scheduled", rcv.URL, fast(3, time.Second))

	at := time.Now().Add(3 * time.Second).Truncate(time.Second)
	soon := sendAt(t, "scheduled", at)
	later := sendAt(t, "scheduled", time.Now().Add(time.Hour))
	st := waitState(t, soon, herald.StateScheduled)
	if !st.DeliverAt.Equal(at) {
		t.Errorf("status deliver_at %s, want %s", st.DeliverAt, at)
	}
	waitState(t, later, herald.StateScheduled)

	c, err := cancelOne(later, "the customer cancelled the order")
	if err != nil {
		t.Fatal(err)
	}
	if cs := c.Status; cs == nil || cs.State != herald.StateCancelled || cs.Cancelled == nil ||
		cs.Cancelled.Reason != "the customer cancelled the order" || cs.Cancelled.Phase != herald.StateScheduled {
		t.Fatalf("cancel answers %+v, want cancelled while scheduled with the reason", c.Status)
	}
	got := waitState(t, later, herald.StateCancelled)
	if got.Cancelled == nil || got.Cancelled.By != "operator" {
		t.Errorf("status of the cancelled send: %+v", got.Cancelled)
	}
	recordHistory(t, "delivery_scheduled_cancelled.json", later)
	if _, err := cancelOne(later, ""); !errors.Is(err, starter.ErrConflict) || !strings.Contains(err.Error(), "already cancelled") {
		t.Errorf("a second cancel: %v, want a conflict saying already cancelled", err)
	}

	delivered := waitState(t, soon, herald.StateDelivered)
	reqs := rcv.requests()
	if len(reqs) != 1 || reqs[0].At.Before(at) {
		t.Fatalf("the receiver got %d requests (first at %v), want one, no sooner than %s", len(reqs), reqs, at)
	}
	if !delivered.DeliverAt.Equal(at) {
		t.Errorf("delivered status deliver_at %s, want %s", delivered.DeliverAt, at)
	}
	if _, err := cancelOne(soon, ""); !errors.Is(err, starter.ErrConflict) || !strings.Contains(err.Error(), "already delivered") {
		t.Errorf("cancel of a delivered event: %v, want a conflict saying already delivered", err)
	}

	eventually(t, "the cancelled send in the event list", func() bool {
		page, err := shared.starter.ListEvents(ctx, herald.EventFilter{State: herald.StateCancelled, Endpoints: []string{"scheduled"}}, nil, 10)
		return err == nil && len(page.Events) == 1 && page.Events[0].EventID == later && page.Events[0].State == herald.StateCancelled
	})

	// A person may change their mind: a replay delivers a cancelled event, at once.
	if _, err := shared.starter.Replay(ctx, starter.Ref{EventID: later}); err != nil {
		t.Fatal(err)
	}
	waitState(t, later, herald.StateDelivered)
	if _, err := shared.starter.Replay(ctx, starter.Ref{EventID: sendAt(t, "scheduled", time.Now().Add(time.Hour))}); !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), "scheduled for") {
		t.Errorf("replay of a scheduled send: %v, want refused, saying it is scheduled", err)
	}

	for _, bad := range []time.Time{time.Now().Add(-10 * time.Minute), time.Now().Add(policy.MaxScheduleAhead + time.Hour)} {
		_, err := shared.starter.SendWith(ctx, starter.Event{Type: "test.event", EndpointID: "scheduled", Data: []byte(`{}`)}, starter.SendOptions{DeliverAt: bad})
		if !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), "deliver_at") {
			t.Errorf("deliver_at %s: %v, want refused, naming deliver_at", bad, err)
		}
	}
}

// TestScheduledFanout: a send to a tenant with a deliver_at schedules every delivery, and a
// cancel of the event stops them all.
func TestScheduledFanout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusOK))
	for _, id := range []string{"sched-fan-a", "sched-fan-b"} {
		if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, URL: rcv.URL, Tenant: "sched-fan", Types: []string{"order.*"}}); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(time.Hour)
	res, err := shared.starter.PublishWith(ctx, "sched-fan", starter.Event{Type: "order.paid", Data: []byte(`{}`)}, starter.SendOptions{DeliverAt: at})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deliveries) != 2 || res.DeliverAt.IsZero() {
		t.Fatalf("publish: %+v, want two scheduled deliveries", res)
	}
	for _, d := range res.Deliveries {
		waitRef(t, starter.Ref{Tenant: "sched-fan", EventID: res.EventID, Endpoint: d.EndpointID}, herald.StateScheduled)
	}
	c, err := shared.starter.Cancel(ctx, starter.Ref{Tenant: "sched-fan", EventID: res.EventID}, herald.CancelRequest{Reason: "order refunded"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Endpoints) != 2 {
		t.Errorf("cancel of the event sent to the tenant stopped %v, want both endpoints", c.Endpoints)
	}
	for _, d := range res.Deliveries {
		waitRef(t, starter.Ref{Tenant: "sched-fan", EventID: res.EventID, Endpoint: d.EndpointID}, herald.StateCancelled)
	}
	if n := len(rcv.requests()); n != 0 {
		t.Errorf("the receiver got %d requests, want none", n)
	}
}

// TestCancelWaitingAndInFlight: a delivery waiting for its retry is cancelled at once,
// with no further request; a cancel that comes while an attempt is in flight waits for it,
// and answers "already delivered" when it delivers.
func TestCancelWaitingAndInFlight(t *testing.T) {
	t.Parallel()
	slow, onWire := make(chan struct{}), make(chan struct{}, 1)
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		onWire <- struct{}{}
		<-slow
		w.WriteHeader(http.StatusOK)
	})
	putEndpoint(t, "cancel-wait", rcv.URL, fast(3, time.Hour))
	waiting := sendOne(t, "cancel-wait")
	waitState(t, waiting, herald.StateWaitingRetry)
	c, err := cancelOne(waiting, "duplicate")
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.Cancelled == nil || c.Status.Cancelled.Phase != herald.StateWaitingRetry || len(c.Status.Attempts) != 1 || !c.Status.NextAttemptAt.IsZero() {
		t.Errorf("cancel while waiting for the retry answers %+v", c.Status)
	}
	recordHistory(t, "delivery_waiting_retry_cancelled.json", waiting)

	inFlight := sendOne(t, "cancel-wait")
	select {
	case <-onWire: // the second request: the attempt is on the wire
	case <-time.After(30 * time.Second):
		close(slow)
		t.Fatal("no request")
	}
	errc := make(chan error, 1)
	go func() {
		_, err := cancelOne(inFlight, "too late")
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	close(slow)
	if err := <-errc; !errors.Is(err, starter.ErrConflict) || !strings.Contains(err.Error(), "already delivered") {
		t.Errorf("a cancel during the attempt that delivers: %v, want already delivered", err)
	}
	waitState(t, inFlight, herald.StateDelivered)
}
