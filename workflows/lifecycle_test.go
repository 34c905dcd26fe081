package workflows

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
)

// Tests of an endpoint's lifecycle: disabled after failing for its disable-after, or on a
// 410, or by hand; enabled again; and what a delivery does at a disabled endpoint.

// lifecycleEnv is an endpoint workflow's test environment with its HeraldDisabled upserts
// and its permit signals recorded.
func lifecycleEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *tape[string], *tape[permitSignal]) {
	t.Helper()
	env := newEndpointEnv(netguard.Policy{})
	var disabled tape[string]
	var permits tape[permitSignal]
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if _, circuit := sa.GetKeyword(herald.AttrCircuit); circuit || !upsertNames(sa, herald.AttrDisabled) {
			return // another attribute's upsert
		}
		v, ok := sa.GetKeyword(herald.AttrDisabled)
		if !ok {
			v = "<unset>"
		}
		disabled.add(v + "@" + env.Now().Sub(testStart).String())
	}).Return()
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, herald.SignalPermit, mock.Anything).Return(
		func(_, workflowID, _, _ string, arg any) error {
			permits.add(permitSignal{Waiter: workflowID, Permit: arg.(policy.Grant), At: env.Now()})
			return nil
		})
	return env, &disabled, &permits
}

// report has a gate report one outcome at d after the start.
func report(env *testsuite.TestWorkflowEnvironment, d time.Duration, ok, gone bool) {
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalOutcomes, herald.OutcomeReport{Holder: testHolder,
			Outcomes: []policy.Outcome{{At: env.Now(), OK: ok, Gone: gone, Latency: duration.Duration(100 * time.Millisecond)}}})
	}, d)
}

// TestEndpointDisabledAfterFailingFiveDays: an endpoint whose every attempt fails for 5
// days (the default) is disabled; a success in between starts the count again; a waiter
// that comes later is sent away at once; enable starts afresh.
func TestEndpointDisabledAfterFailingFiveDays(t *testing.T) {
	const day = 24 * time.Hour
	env, disabled, permits := lifecycleEnv(t)
	register(t, env, nil)
	report(env, time.Minute, false, false)
	report(env, day, true, false) // the spell of day 0 ends
	report(env, 2*day, false, false)
	report(env, 6*day, false, false) // 4 days into the spell: still enabled
	var at6, at7 herald.EndpointState
	env.RegisterDelayedCallback(func() { at6 = queryState(t, env) }, 6*day+time.Minute)
	report(env, 7*day+time.Hour, false, false) // 5 days and an hour into it: disabled
	env.RegisterDelayedCallback(func() { at7 = queryState(t, env) }, 7*day+2*time.Hour)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: []string{waiterID(1)}})
	}, 7*day+3*time.Hour)
	var enabled *updateOutcome[herald.EndpointState]
	env.RegisterDelayedCallback(func() { enabled = sendUpdate[herald.EndpointState](env, herald.UpdateEnable) }, 8*day)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, 8*day+time.Minute)

	if at6.Disabled != nil || !at6.FailingSince.Equal(at(2*day)) {
		t.Errorf("after 4 days of failures: disabled %+v, failing since %s; want enabled, failing since day 2", at6.Disabled, at6.FailingSince)
	}
	if d := at7.Disabled; d == nil || d.Cause != policy.DisabledFailing || !d.At.Equal(at(7*day+time.Hour)) {
		t.Errorf("after 5 days and an hour of failures: disabled %+v, want cause failing at day 7 + 1h", d)
	}
	if p := permits.all(); len(p) != 1 || p[0].Waiter != waiterID(1) || !p[0].Permit.Disabled {
		t.Errorf("permit signals %+v, want one to the waiter saying the endpoint is disabled", p)
	}
	if enabled.check(t, "enable") {
		if st := enabled.result; st.Disabled != nil || !st.FailingSince.IsZero() || st.Circuit.State != policy.CircuitClosed {
			t.Errorf("enable answers disabled %+v, failing since %s, circuit %s; want enabled afresh and closed", st.Disabled, st.FailingSince, st.Circuit.State)
		}
	}
	want := []string{"failing@169h0m0s", "<unset>@192h0m0s"}
	if got := disabled.all(); !slices.Equal(got, want) {
		t.Errorf("HeraldDisabled upserts %v, want %v", got, want)
	}
	// Its circuit never opened (one failure at a time): enabling it closes nothing.
	wantOps(t, env, []string{herald.OpsEndpointDisabled})
}

// wantOps checks the types of the operational events env's workflows emitted, in order.
func wantOps(t *testing.T, env *testsuite.TestWorkflowEnvironment, types []string) []herald.Event {
	t.Helper()
	evs := emittedOps(env)
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Type)
		if ev.EndpointID != herald.OpsEndpointID {
			t.Errorf("operational event %s goes to %s, want %s", ev.ID, ev.EndpointID, herald.OpsEndpointID)
		}
	}
	if !slices.Equal(got, types) {
		t.Errorf("operational events %v, want %v", got, types)
	}
	return evs
}

// TestEndpointDisabledByGoneAndByHand: a 410 disables the endpoint at once; a disable by
// hand replaces the reason, and returns once the workers have had time to learn it.
func TestEndpointDisabledByGoneAndByHand(t *testing.T) {
	env, disabled, _ := lifecycleEnv(t)
	register(t, env, nil)
	report(env, time.Minute, false, true)
	var gone herald.EndpointState
	env.RegisterDelayedCallback(func() { gone = queryState(t, env) }, 2*time.Minute)
	var byHand *updateOutcome[herald.EndpointState]
	env.RegisterDelayedCallback(func() {
		byHand = sendUpdate[herald.EndpointState](env, herald.UpdateDisable, herald.DisableRequest{Reason: "paused by the customer"})
	}, 3*time.Minute)
	var long *updateOutcome[herald.EndpointState]
	env.RegisterDelayedCallback(func() {
		long = sendUpdate[herald.EndpointState](env, herald.UpdateDisable, herald.DisableRequest{Reason: string(make([]byte, herald.MaxDisableReason+1))})
	}, 4*time.Minute)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, 5*time.Minute)

	if d := gone.Disabled; d == nil || d.Cause != policy.DisabledGone || !d.At.Equal(at(time.Minute)) {
		t.Errorf("after a 410: disabled %+v, want cause gone at 1m", d)
	}
	if byHand.check(t, "disable") {
		d := byHand.result.Disabled
		if d == nil || d.Cause != policy.DisabledByHand || d.Reason != "paused by the customer" || !d.At.Equal(at(3*time.Minute)) {
			t.Errorf("disable answers %+v, want by hand, with the reason, at 3m", d)
		}
	}
	if long == nil || long.rejected == nil {
		t.Error("a disable with a reason over the limit was accepted")
	}
	want := []string{"gone@1m0s", "manual@3m0s"}
	if got := disabled.all(); !slices.Equal(got, want) {
		t.Errorf("HeraldDisabled upserts %v, want %v", got, want)
	}
	// Disabled once (by the 410); disabling it again by hand is no new event.
	evs := wantOps(t, env, []string{herald.OpsEndpointDisabled})
	if len(evs) == 1 && !strings.Contains(string(evs[0].Data), `"cause":"gone"`) {
		t.Errorf("endpoint.disabled data %s, want cause gone", evs[0].Data)
	}
}

// TestDeliveryAtDisabledEndpoint: a delivery whose endpoint is disabled at its first attempt
// ends as skipped with no attempt; one that had attempts parks as a dead letter, and a
// replay (after the endpoint is enabled) delivers it.
func TestDeliveryAtDisabledEndpoint(t *testing.T) {
	const reason = "endpoint disabled: paused"
	disabledHold := func(in activities.AttemptInput, now time.Time) herald.Result {
		return herald.Result{Number: in.Number, StartedAt: now, Held: &herald.Hold{Reason: reason, Disabled: true}}
	}
	t.Run("skipped before any attempt", func(t *testing.T) {
		env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			return disabledHold(in, now), nil
		})
		st := runDelivery(t, env)
		rec.wantCalls(t, 1, "1: the disabled one, and no wait")
		if st.State != herald.StateSkipped || len(st.Attempts) != 0 || st.Reason != reason {
			t.Errorf("state %q, %d attempts, reason %q; want skipped, none, %q", st.State, len(st.Attempts), st.Reason, reason)
		}
		if up := rec.statuses(); !slices.Equal(up, []herald.State{herald.StateSkipped}) {
			t.Errorf("HeraldStatus upserts %v, want [skipped]", up)
		}
		if tm := rec.timerDurations(); len(tm) != 0 {
			t.Errorf("timers %v, want none", tm)
		}
	})
	t.Run("dead letter after attempts, replayed once enabled", func(t *testing.T) {
		p := defaultPolicy()
		enabled := false
		env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			switch {
			case in.Round == 0 && in.Number == 1:
				return failedAttempt(now, p), nil
			case !enabled:
				return disabledHold(in, now), nil
			}
			return deliveredAttempt(now, p), nil
		})
		var dead herald.Status
		env.RegisterDelayedCallback(func() { dead = queryStatus(t, env) }, 24*time.Hour)
		env.RegisterDelayedCallback(func() {
			enabled = true
			env.SignalWorkflow(herald.SignalReplay, nil)
		}, 25*time.Hour)
		st := runDelivery(t, env)
		calls := rec.wantCalls(t, 3, "failed, disabled, delivered on the replay")
		checkInput(t, calls[1].In, 0, 2)
		checkInput(t, calls[2].In, 1, 1)
		if dead.State != herald.StateDeadLetter || dead.Reason != reason || len(dead.Attempts) != 1 ||
			!dead.ExpiresAt.Equal(dead.DeadAt.Add(p.Retention.Std())) {
			t.Errorf("at the disabled endpoint: state %q, reason %q, %d attempts, dead %s expires %s; want a dead letter for the retention with the reason and one attempt",
				dead.State, dead.Reason, len(dead.Attempts), dead.DeadAt, dead.ExpiresAt)
		}
		if st.State != herald.StateDelivered || st.Reason != "" || st.Round != 1 {
			t.Errorf("after the replay: state %q, reason %q, round %d; want delivered in round 1, no reason", st.State, st.Reason, st.Round)
		}
		evs := wantOps(t, env, []string{herald.OpsDeadLettered, herald.OpsRecovered})
		if len(evs) == 2 && (evs[0].ID == evs[1].ID || !strings.Contains(string(evs[0].Data), reason)) {
			t.Errorf("operational events %s %s: want distinct ids, the dead letter's with its reason (%s)", evs[0].ID, evs[1].ID, evs[0].Data)
		}
	})
	t.Run("an operational delivery emits no operational event", func(t *testing.T) {
		p := defaultPolicy()
		env, _ := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			return failedAttempt(now, p), nil
		})
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: herald.DeliveryID(herald.OpsTenant, testEventID)})
		var st herald.Status
		env.RegisterDelayedCallback(func() { st = queryStatus(t, env) }, 2*24*time.Hour)
		env.RegisterDelayedCallback(env.CancelWorkflow, 3*24*time.Hour)
		ev := testEvent()
		ev.EndpointID = herald.OpsEndpointID
		env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: ev})
		if st.State != herald.StateDeadLetter {
			t.Fatalf("state %q, want a dead letter", st.State)
		}
		wantOps(t, env, nil)
	})
}
