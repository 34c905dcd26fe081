package activities

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
)

// TestTransformedRequest: a transformation's body is what goes out and what the signature
// covers; its headers are set after the custom headers and recorded redacted, Content-Type
// may be set, Herald's own headers may not; a cancellation and an error make no request.
func TestTransformedRequest(t *testing.T) {
	sec := signature.Secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	ep := herald.Endpoint{ID: "ep", Tenant: "acme", URL: "https://example.test/hook", Secret: sec,
		Headers: []herald.Header{{Name: "X-Team", Value: "billing"}}}
	ev := herald.Event{ID: "evt_1", Type: "order.paid", Data: []byte(`{"order_id": 42, "amount": 0}`)}
	ep.Transform = `{"body": "text=Order " + string(data.order_id), "headers": {"content-type": "application/x-www-form-urlencoded", "X-Team": tenant}}`
	tr, err := transform(context.Background(), ev, ep)
	if err != nil {
		t.Fatal(err)
	}
	req, err := newRequest(ev, ep, tr, time.Now(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(req.Body) != "text=Order 42" || req.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || req.Header.Get("X-Team") != "acme" {
		t.Fatalf("request body %q, headers %v", req.Body, req.Header)
	}
	if err := signature.NewVerifier(sec).Verify(req.Header, req.Body); err != nil {
		t.Fatalf("the signature does not cover the transformed body: %v", err)
	}
	for _, h := range req.Recorded() {
		if h.Name == "X-Team" && h.Value != herald.RedactedValue {
			t.Fatalf("header set by the transformation recorded as %q", h.Value)
		}
	}
	if rec := tr.record(); rec.Body != "text=Order 42" || rec.Bytes != 13 || strings.Join(rec.HeaderNames, ",") != "X-Team,Content-Type" {
		t.Fatalf("record %+v", rec)
	}

	for src, want := range map[string]string{
		`{"headers": {"Webhook-Signature": "v1,forged"}}`:         "set by Herald itself",
		`{"headers": {"Content-Type": "a\nb"}}`:                   "not a header value",
		`{"body": data.nope}`:                                     "no such key",
		`data.amount == 0 ? {"cancel": "zero"} : {"cancel": "x"}`: "",
	} {
		ep.Transform = src
		tr, err := transform(context.Background(), ev, ep)
		if want == "" {
			if err != nil || tr.Cancel != "zero" {
				t.Errorf("%s: %+v, %v; want a cancellation", src, tr, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", src, err, want)
		}
	}
}

// TestAttemptCancelledByTransform: a cancelling transformation makes no request: the
// attempt's result says so, with the reason.
func TestAttemptCancelledByTransform(t *testing.T) {
	a := &Activities{Defaults: herald.DefaultSettings(), Destination: nil}
	ep := herald.Endpoint{ID: "ep", URL: "https://example.test/hook", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Transform: `{"cancel": "not for us"}`}
	res := a.send(context.Background(), AttemptInput{Event: herald.Event{ID: "evt_1", Type: "t", EndpointID: "ep", Data: []byte(`{}`)}, Number: 1}, ep, time.Now())
	if res.Outcome != herald.OutcomeTransformCancelled || res.Error != "not for us" || res.Transformed == nil || res.Transformed.Cancel != "not for us" {
		t.Fatalf("result %+v", res)
	}
}
