package workflows

import (
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
)

// failing answers every attempt with a 503 under the default policy.
func failing(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
	return failedAttempt(now, defaultPolicy()), nil
}

// cancelAt sends a cancel with reason to env's workflow after d (workflow clock).
func cancelAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, reason string) **updateOutcome[herald.Status] {
	var out *updateOutcome[herald.Status]
	env.RegisterDelayedCallback(func() {
		out = sendUpdate[herald.Status](env, herald.UpdateCancel, herald.CancelRequest{Reason: reason, By: "operator"})
	}, d)
	return &out
}

// checkCancelled checks a delivery that ended cancelled in phase, with reason, at at.
func checkCancelled(t *testing.T, st herald.Status, phase herald.State, at time.Time, reason string) {
	t.Helper()
	c := st.Cancelled
	if st.State != herald.StateCancelled || c == nil || c.Phase != phase || !c.At.Equal(at) || c.Reason != reason || c.By != "operator" {
		t.Fatalf("status %s, cancellation %+v; want cancelled at %s while %s, reason %q by operator", st.State, c, at, phase, reason)
	}
	if !st.NextAttemptAt.IsZero() || st.Waiting != nil || !st.DeadAt.IsZero() {
		t.Errorf("a cancelled delivery shows next attempt %s, waiting %+v, dead at %s; want none", st.NextAttemptAt, st.Waiting, st.DeadAt)
	}
}

// TestDeliveryScheduled: a send with a deliver_at shows as scheduled (HeraldStatus, the
// status's DeliverAt) and makes its first attempt at that time, after one timer.
func TestDeliveryScheduled(t *testing.T) {
	env, rec := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return deliveredAttempt(now, defaultPolicy()), nil
	})
	at := testStart.Add(2 * time.Hour)
	var during herald.Status
	env.RegisterDelayedCallback(func() { during = queryStatus(t, env) }, time.Hour)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent(), DeliverAt: at})
	st := workflowStatus(t, env)
	if during.State != herald.StateScheduled || !during.DeliverAt.Equal(at) || len(during.Attempts) != 0 {
		t.Errorf("an hour in: %s, deliver at %s, %d attempts; want scheduled for %s, none", during.State, during.DeliverAt, len(during.Attempts), at)
	}
	calls := rec.wantCalls(t, 1, "1, at the deliver_at")
	if !calls[0].At.Equal(at) {
		t.Errorf("first attempt at %s, want %s", calls[0].At, at)
	}
	if st.State != herald.StateDelivered || !st.DeliverAt.Equal(at) {
		t.Errorf("end: %s, deliver at %s", st.State, st.DeliverAt)
	}
	if up := rec.statuses(); len(up) == 0 || up[0] != herald.StateScheduled {
		t.Errorf("HeraldStatus upserts %v, want scheduled first", up)
	}
	if tm := rec.timerDurations(); len(tm) != 1 || tm[0] != 2*time.Hour {
		t.Errorf("timers %v, want one of 2h", tm)
	}
}

// TestDeliveryScheduledDue: a deliver_at already past when the run starts costs nothing:
// no timer, no upsert (the fast path).
func TestDeliveryScheduledDue(t *testing.T) {
	env, rec := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return deliveredAttempt(now, defaultPolicy()), nil
	})
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent(), DeliverAt: testStart.Add(-time.Second)})
	workflowStatus(t, env)
	if tm, up := rec.timerDurations(), rec.statuses(); len(tm) != 0 || len(up) != 0 {
		t.Errorf("timers %v, upserts %v; want none", tm, up)
	}
}

// TestDeliveryCancelScheduled: a cancel before the deliver_at stops the delivery: no
// attempt, the state cancelled with its reason, in the update's answer and the result.
func TestDeliveryCancelScheduled(t *testing.T) {
	env, rec := newDeliveryEnv(t, failing)
	out := cancelAt(env, 30*time.Minute, "sent to the wrong customer")
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent(), DeliverAt: testStart.Add(2 * time.Hour)})
	st := workflowStatus(t, env)
	rec.wantCalls(t, 0, "none")
	checkCancelled(t, st, herald.StateScheduled, testStart.Add(30*time.Minute), "sent to the wrong customer")
	(*out).mustSucceed(t, "cancel")
	if (*out).result.State != herald.StateCancelled {
		t.Errorf("the cancel answers %s, want cancelled", (*out).result.State)
	}
	if up := rec.statuses(); up[len(up)-1] != herald.StateCancelled {
		t.Errorf("HeraldStatus upserts %v, want cancelled last", up)
	}
}

// TestDeliveryCancelWaitingRetry: a cancel during the ladder's wait stops the retry.
func TestDeliveryCancelWaitingRetry(t *testing.T) {
	env, rec := newDeliveryEnv(t, failing)
	out := cancelAt(env, time.Second, "")
	st := runDelivery(t, env)
	rec.wantCalls(t, 1, "1")
	checkCancelled(t, st, herald.StateWaitingRetry, testStart.Add(time.Second), "")
	(*out).mustSucceed(t, "cancel")
}

// TestDeliveryCancelDeadLetter: a dead letter can be cancelled: it stops waiting for a
// replay at once, and its MemoDeadLetter goes.
func TestDeliveryCancelDeadLetter(t *testing.T) {
	env, rec := newDeliveryEnv(t, failing)
	ladder := ladderDelays(t, defaultPolicy(), testEventID, 0)
	when := sum(ladder) + 2*time.Hour
	out := cancelAt(env, when, "customer closed the account")
	st := runDelivery(t, env)
	rec.wantCalls(t, len(ladder)+1, "the whole ladder")
	checkCancelled(t, st, herald.StateDeadLetter, testStart.Add(when), "customer closed the account")
	(*out).mustSucceed(t, "cancel")
}

// TestDeliveryCancelWaitingEndpoint: a delivery its endpoint holds back can be cancelled;
// it leaves the endpoint's queue by itself (the endpoint's permit signal then finds it
// closed and takes the permit back).
func TestDeliveryCancelWaitingEndpoint(t *testing.T) {
	env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
		return herald.Result{Number: in.Number, StartedAt: now, Held: &herald.Hold{Queued: true, Position: 2, Reason: "at the concurrency cap", Recheck: herald.Duration(time.Hour)}}, nil
	})
	out := cancelAt(env, time.Minute, "duplicate")
	st := runDelivery(t, env)
	rec.wantCalls(t, 1, "1, held")
	checkCancelled(t, st, herald.StateWaitingEndpoint, testStart.Add(time.Minute), "duplicate")
	(*out).mustSucceed(t, "cancel")
}

// TestDeliveryCancelRefused: a reason over the limit is refused without a trace, and a
// cancel of a delivered event (here: the attempt in flight delivered it) answers
// "already delivered".
func TestDeliveryCancelRefused(t *testing.T) {
	env, _ := newDeliveryEnv(t, failing)
	var long, ok *updateOutcome[herald.Status]
	env.RegisterDelayedCallback(func() {
		long = sendUpdate[herald.Status](env, herald.UpdateCancel, herald.CancelRequest{Reason: strings.Repeat("x", herald.MaxCancelReason+1)})
		ok = sendUpdate[herald.Status](env, herald.UpdateCancel, herald.CancelRequest{})
	}, time.Second)
	runDelivery(t, env)
	if long.rejected == nil || !strings.Contains(long.rejected.Error(), "limit is 500") {
		t.Errorf("a long reason: rejected %v, want the limit", long.rejected)
	}
	ok.mustSucceed(t, "cancel after a refused one")

	if refusal := herald.CancelRefusal(herald.StateDelivered); refusal != herald.ErrAlreadyDelivered {
		t.Errorf("refusal of a delivered event: %q", refusal)
	}
	for _, s := range []herald.State{herald.StateSkipped, herald.StateExpired, herald.StateCancelled} {
		if herald.CancelRefusal(s) == "" {
			t.Errorf("%s: cancellable", s)
		}
	}
}
