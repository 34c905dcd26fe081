package tests

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// sendOne sends an empty event to endpoint id and returns its event id.
func sendOne(t *testing.T, id string) string {
	t.Helper()
	res, err := shared.starter.Send(context.Background(), starter.Event{Type: "test.event", EndpointID: id, Data: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return res.EventID
}

// TestEndpointDisableEnable: once a disable has returned, an event sent to the endpoint is
// skipped with no request, and a delivery whose attempts had begun parks as a dead letter
// at its next attempt; after enable, a replay delivers it. Every request carries the
// endpoint's custom header, and Herald's own headers are left alone.
func TestEndpointDisableEnable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusInternalServerError))
	sec, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	hs, err := herald.NormalizeHeaders([]herald.Header{{Name: "x-team", Value: "billing"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "lifecycle", URL: rcv.URL, Secret: sec,
		Overrides: fast(3, 4*time.Second, 4*time.Second), Headers: &hs}); err != nil {
		t.Fatal(err)
	}
	bad := []herald.Header{{Name: "Content-Type", Value: "text/plain"}}
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "lifecycle", Headers: &bad}); !errors.Is(err, starter.ErrInvalid) {
		t.Errorf("a put overriding Content-Type: %v, want an invalid-input error", err)
	}

	pending := sendOne(t, "lifecycle")
	waitState(t, pending, herald.StateWaitingRetry)
	st, err := shared.starter.DisableEndpoint(ctx, "lifecycle", "paused by the customer")
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Disabled; d == nil || d.Cause != policy.DisabledByHand || d.Reason != "paused by the customer" {
		t.Fatalf("disable answers %+v, want disabled by hand with the reason", d)
	}
	skipped := sendOne(t, "lifecycle")
	sk := waitState(t, skipped, herald.StateSkipped)
	if len(sk.Attempts) != 0 || !strings.Contains(sk.Reason, "paused by the customer") {
		t.Errorf("skipped delivery: %d attempts, reason %q; want none, and the reason", len(sk.Attempts), sk.Reason)
	}
	dead := waitState(t, pending, herald.StateDeadLetter)
	if len(dead.Attempts) != 1 || !strings.Contains(dead.Reason, "endpoint disabled") {
		t.Errorf("pending delivery at the disabled endpoint: %d attempts, reason %q; want 1 and the endpoint disabled", len(dead.Attempts), dead.Reason)
	}
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("the receiver got %d requests, want 1: nothing goes to a disabled endpoint", n)
	}

	rcv.setAnswer(status(http.StatusOK))
	if st, err := shared.starter.EnableEndpoint(ctx, "lifecycle"); err != nil || st.Disabled != nil {
		t.Fatalf("enable: %+v, %v", st.Disabled, err)
	}
	if _, err := shared.starter.Replay(ctx, starter.Ref{Tenant: herald.DefaultTenant, EventID: pending}); err != nil {
		t.Fatal(err)
	}
	waitState(t, pending, herald.StateDelivered)
	reqs := rcv.requests()
	if len(reqs) != 2 {
		t.Fatalf("the receiver got %d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("X-Team") != "billing" || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("webhook-signature") == "" {
			t.Errorf("request headers %v: want X-Team billing next to Herald's own", r.Header)
		}
		if err := signature.NewVerifier(sec).Verify(r.Header, r.Body); err != nil {
			t.Errorf("request not signed: %v", err)
		}
	}
}

// TestEndpointGoneDisables: a 410 Gone answer disables the endpoint at once, for every
// worker: the delivery that got it parks as a dead letter at its next attempt, a new event
// is skipped, the receiver hears nothing more, and visibility lists the endpoint as gone.
func TestEndpointGoneDisables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusGone))
	putEndpoint(t, "gone", rcv.URL, fast(3, 2*time.Second, 2*time.Second))
	first := sendOne(t, "gone")
	dead := waitState(t, first, herald.StateDeadLetter)
	if len(dead.Attempts) != 1 || dead.Attempts[0].Result.StatusCode != http.StatusGone || !strings.Contains(dead.Reason, "410") {
		t.Errorf("delivery answered 410: %d attempts, reason %q; want a dead letter after its one attempt, saying 410", len(dead.Attempts), dead.Reason)
	}
	st, err := shared.starter.GetEndpoint(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Disabled; d == nil || d.Cause != policy.DisabledGone {
		t.Fatalf("endpoint after a 410: disabled %+v, want cause gone", d)
	}
	waitState(t, sendOne(t, "gone"), herald.StateSkipped)
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("the receiver got %d requests, want only the one answered 410", n)
	}
	q := herald.Workflows(herald.EndpointWorkflow).Running().Is(herald.AttrDisabled, string(policy.DisabledGone)).String()
	eventually(t, "the endpoint listed as disabled (gone)", func() bool {
		for ex, err := range herald.Executions(ctx, shared.client, q, 100) {
			if err != nil {
				t.Logf("list: %v", err)
				return false
			}
			if ex.GetExecution().GetWorkflowId() == herald.EndpointWorkflowID("gone") {
				return true
			}
		}
		return false
	})
	list, _ := listAll(t, shared.starter, herald.EndpointFilter{State: "disabled"}, starter.MaxEndpointPage, nil)
	if !slices.ContainsFunc(list, func(st herald.EndpointState) bool { return st.ID == "gone" && st.Disabled != nil }) {
		t.Errorf("endpoint list --state disabled lacks the endpoint that answered 410")
	}
}
