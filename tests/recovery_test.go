package tests

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// failingEndpoint registers endpoint id at url with overrides o, as an endpoint whose every
// attempt has failed for two hours already (its limiter's failing spell began then): a
// run of the endpoint workflow that a continue-as-new carried there. The endpoint's next
// failed attempt disables it for failing (its disable-after is the minimum, an hour),
// which the real server cannot otherwise reach in a test's time.
func failingEndpoint(t *testing.T, id, url string, o *herald.Overrides) {
	t.Helper()
	cfg := o.Limiter()
	cfg.DisableAfter = herald.Duration(policy.MinDisableAfter)
	lim := policy.NewLimiter(cfg)
	lim.FailingSince = time.Now().Add(-2 * time.Hour)
	_, err := shared.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID:        herald.EndpointWorkflowID(id),
		TaskQueue: herald.EndpointTaskQueue(herald.DefaultTaskQueue),
		TypedSearchAttributes: temporal.NewSearchAttributes(herald.AttrEndpoint.ValueSet(id),
			herald.AttrTenant.ValueSet(herald.DefaultTenant), herald.AttrSubscriptions.ValueSet(herald.SubscriptionTokens(herald.DefaultTenant, nil))),
	}, herald.EndpointWorkflow, herald.EndpointInput{ID: id, Limiter: &lim})
	if err != nil {
		t.Fatal(err)
	}
	oo := *o
	oo.DisableAfter = herald.Duration(policy.MinDisableAfter)
	putEndpoint(t, id, url, &oo)
}

// waitDisabled waits until endpoint id is disabled for cause, and returns its state.
func waitDisabled(t *testing.T, id string, cause policy.DisableCause) herald.EndpointState {
	t.Helper()
	var st herald.EndpointState
	eventually(t, "endpoint "+id+" disabled: "+string(cause), func() bool {
		var err error
		st, err = shared.starter.GetEndpoint(context.Background(), id)
		return err == nil && st.Disabled != nil && st.Disabled.Cause == cause
	})
	return st
}

// TestRecordFailingBeforeRecovery records, with -record, an endpoint disabled for failing
// as 0.2.0 left it: never probed. It is the history that takes the old branch of
// versionEndpointRecovery (endpoint_disabled_failing_before_recovery.json), recorded
// before that change; do not re-record it with later code.
//
//	go test ./tests -run TestRecordFailingBeforeRecovery -record
func TestRecordFailingBeforeRecovery(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	rcv := newReceiver(t, status(http.StatusServiceUnavailable))
	failingEndpoint(t, "rec-failing", rcv.URL, fast(2, 2*time.Second))
	ev := sendOne(t, "rec-failing")
	waitDisabled(t, "rec-failing", policy.DisabledFailing)
	waitState(t, ev, herald.StateDeadLetter)
	time.Sleep(2 * time.Second) // the endpoint's ticks after the disable
	save(t, "endpoint_disabled_failing_before_recovery.json", herald.EndpointWorkflowID("rec-failing"))
}
