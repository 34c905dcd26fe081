package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// slackTransform turns an order event into a Slack message, and cancels the delivery of
// an order of nothing.
const slackTransform = `data.amount == 0
  ? dyn({"cancel": "order " + string(data.order_id) + " is of nothing"})
  : dyn({"body": {"text": "Order " + string(data.order_id) + " paid"}, "headers": {"X-Slack-Channel": tenant}})`

// TestTransformSlack: an endpoint with a transformation receives the body it builds (a
// Slack-style message, checked by the receiver), signed as sent, with the header it sets;
// the attempt records the body sent; a transformation that cancels ends the delivery
// skipped with its reason, with no request, no retry and no dead letter.
func TestTransformSlack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var sec signature.Secret
	slack := newReceiver(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
	// The receiver checks each request as Slack would, and answers 400 to anything else.
	slack.setAnswer(func(n int, w http.ResponseWriter) {
		r := slack.requests()[n-1]
		var msg map[string]any
		dec := json.NewDecoder(strings.NewReader(string(r.Body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&msg); err != nil || len(msg) != 1 || msg["text"] != "Order 42 paid" ||
			r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Slack-Channel") != "default" ||
			signature.NewVerifier(sec).Verify(r.Header, r.Body) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sec = putEndpoint(t, "slack", slack.URL, fast(2, time.Second))
	tr := slackTransform
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "slack", Transform: &tr}); err != nil {
		t.Fatal(err)
	}

	res, err := shared.starter.Send(ctx, starter.Event{EndpointID: "slack", Type: "order.paid", Data: json.RawMessage(`{"order_id": 42, "amount": 1999, "note": "<gift>"}`)})
	if err != nil {
		t.Fatal(err)
	}
	st := waitState(t, res.EventID, herald.StateDelivered)
	if len(st.Attempts) != 1 {
		t.Fatalf("attempts %+v, want one delivered", st.Attempts)
	}
	got := st.Attempts[0].Result.Transformed
	if got == nil || got.Body != `{"text":"Order 42 paid"}` || got.Bytes != len(got.Body) || len(got.HeaderNames) != 1 {
		t.Fatalf("attempt records transformed %+v, want the Slack body and one header", got)
	}
	if reqs := slack.requests(); len(reqs) != 1 || string(reqs[0].Body) != got.Body {
		t.Fatalf("receiver saw %d requests, want 1 with the recorded body", len(reqs))
	}

	res, err = shared.starter.Send(ctx, starter.Event{EndpointID: "slack", Type: "order.paid", Data: json.RawMessage(`{"order_id": 43, "amount": 0}`)})
	if err != nil {
		t.Fatal(err)
	}
	st = waitState(t, res.EventID, herald.StateSkipped)
	if len(st.Attempts) != 1 || st.Attempts[0].Result.Outcome != herald.OutcomeTransformCancelled ||
		!strings.Contains(st.Reason, "order 43 is of nothing") || st.Attempts[0].Next != nil {
		t.Fatalf("cancelled delivery: reason %q, attempts %+v", st.Reason, st.Attempts)
	}
	if n := len(slack.requests()); n != 1 {
		t.Fatalf("receiver saw %d requests after a cancelled delivery, want 1", n)
	}

	// A transformation that cannot run on the event is a refused attempt, retried on the
	// ladder (a fix to the transformation applies to the retry).
	res, err = shared.starter.Send(ctx, starter.Event{EndpointID: "slack", Type: "order.paid", Data: json.RawMessage(`{"order_id": 44}`)})
	if err != nil {
		t.Fatal(err)
	}
	st = waitState(t, res.EventID, herald.StateDeadLetter)
	if len(st.Attempts) != 2 || st.Attempts[0].Result.Outcome != herald.OutcomeRefused || !strings.Contains(st.Attempts[0].Result.Error, "no such key: amount") {
		t.Fatalf("transformation error: attempts %+v", st.Attempts)
	}

	bad := `{"body": data.x,}` + "\n" + `+ 1`
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "slack", Transform: &bad}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("put of a broken transformation: %v, want an error naming line 2", err)
	}
}

// TestRecordTransformHistories records the histories of the paths filters and
// transformations add: a delivery its endpoint's transformation cancelled, and an endpoint
// whose put set a filter and a transformation. It runs only with -record.
func TestRecordTransformHistories(t *testing.T) {
	if !*record {
		t.Skip("records histories only with -record")
	}
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusOK))
	putEndpoint(t, "rec-transform", rcv.URL, fast(2, time.Second))
	filter, tr := `data.amount > 0 || type == "order.refunded"`, `data.amount == 0 ? dyn({"cancel": "nothing to pay"}) : dyn({"body": {"text": "paid"}})`
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "rec-transform", Filter: &filter, Transform: &tr}); err != nil {
		t.Fatal(err)
	}
	res, err := shared.starter.Send(ctx, starter.Event{ID: "evt_rec_transform_cancelled", EndpointID: "rec-transform", Type: "order.paid", Data: json.RawMessage(`{"amount": 0}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, res.EventID, herald.StateSkipped)
	save(t, "delivery_transform_cancelled.json", herald.DeliveryID(herald.DefaultTenant, "evt_rec_transform_cancelled"))
	save(t, "endpoint_put_filter_transform.json", herald.EndpointWorkflowID("rec-transform"))
}
