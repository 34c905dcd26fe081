package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
)

// testRecovery is the recovery ladder of the test stack's worker, scaled down from the
// default (1h, 3h, 6h, 12h, then every 24h for 30 days): a probe 2 s after the disable,
// then every 2 s, for 2 minutes.
var testRecovery = policy.RecoveryLadder{Steps: duration.Of(2 * time.Second), Every: duration.Duration(2 * time.Second), For: duration.Duration(2 * time.Minute)}

// failingEndpoint registers endpoint id at url with overrides o, as an endpoint whose every
// attempt has failed for two hours already (its limiter's failing spell began then): a
// run of the endpoint workflow that a continue-as-new carried there. The endpoint's next
// failed attempt disables it for failing (its disable-after is the minimum, an hour),
// which the real server cannot otherwise reach in a test's time.
func failingEndpoint(t *testing.T, id, url string, o *herald.Overrides) signature.Secret {
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
	return putEndpoint(t, id, url, &oo)
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

// TestEndpointRecovers: an endpoint disabled for failing is probed on the worker's
// (scaled-down) recovery ladder with real signed endpoint.probe requests; once one is
// answered 2xx the endpoint is enabled, its dead letters are delivered with their
// original event ids, and the operational endpoint hears endpoint.disabled, then
// endpoint.recovered naming the bulk replay. Not parallel: it registers the operational
// endpoint, the installation's, and disables it at the end.
func TestEndpointRecovers(t *testing.T) {
	ctx := context.Background()
	opsRcv := newReceiver(t, status(http.StatusOK))
	res := useOpsEndpoint(t, opsRcv.URL)
	var err error
	rcv := newReceiver(t, status(http.StatusServiceUnavailable))
	sec := failingEndpoint(t, "recovers", rcv.URL, fast(2, 2*time.Second))
	e1, e2 := sendOne(t, "recovers"), sendOne(t, "recovers")
	st := waitDisabled(t, "recovers", policy.DisabledFailing)
	waitState(t, e1, herald.StateDeadLetter)
	waitState(t, e2, herald.StateDeadLetter)

	// The first probes fail: the endpoint stays disabled, its state counting them.
	eventually(t, "a failed probe", func() bool {
		st, err = shared.starter.GetEndpoint(ctx, "recovers")
		return err == nil && st.Disabled != nil && st.Disabled.Recovery != nil && st.Disabled.Recovery.Probes >= 1 && st.Disabled.Recovery.Last != ""
	})
	rcv.setAnswer(status(http.StatusOK))
	waitState(t, e1, herald.StateDelivered)
	waitState(t, e2, herald.StateDelivered)
	st, err = shared.starter.GetEndpoint(ctx, "recovers")
	if err != nil || st.Disabled != nil {
		t.Fatalf("after a probe answered 200: disabled %+v, %v; want enabled", st.Disabled, err)
	}

	var probes int
	delivered := map[string]bool{}
	for _, r := range rcv.requests() {
		if err := signature.NewVerifier(sec).Verify(r.Header, r.Body); err != nil {
			t.Errorf("request not signed: %v", err)
		}
		var ev struct {
			ID   string           `json:"id"`
			Type string           `json:"type"`
			Data herald.ProbeData `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == herald.ProbeEventType {
			probes++
			if ev.Data.EndpointID != "recovers" || ev.Data.Probe != probes || r.Header.Get("webhook-id") != ev.ID {
				t.Errorf("probe %d: %+v, webhook-id %s", probes, ev, r.Header.Get("webhook-id"))
			}
			continue
		}
		delivered[ev.ID] = true
	}
	if probes < 2 || !delivered[e1] || !delivered[e2] {
		t.Errorf("%d probes, delivered %v; want two or more probes and both dead letters with their ids (%s, %s)", probes, delivered, e1, e2)
	}

	var recovered []opsReceived
	eventually(t, "endpoint.recovered at the operational endpoint", func() bool {
		recovered = nil
		for _, ev := range opsEventsOf(t, opsRcv, res.Endpoint.Secret, "recovers") {
			if ev.Type == herald.OpsEndpointRecovered || ev.Type == herald.OpsEndpointDisabled {
				recovered = append(recovered, ev)
			}
		}
		return len(recovered) == 2
	})
	if recovered[0].Type != herald.OpsEndpointDisabled || recovered[1].Type != herald.OpsEndpointRecovered ||
		recovered[1].Data.BulkReplayID == "" || recovered[1].Data.Reason == "" {
		t.Errorf("operational events %+v: want endpoint.disabled, then endpoint.recovered with its bulk replay and why", recovered)
	}
	if *record {
		save(t, "endpoint_recovered.json", herald.EndpointWorkflowID("recovers"))
	}
}
