package workflows

import (
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
)

// TestDeliveryNudgedBackFromAFullQueue: a delivery its gate turned away from the endpoint's
// full queue (herald.Hold.Full) waits on its own recheck (10 minutes here), takes the
// endpoint's nudge (herald.UpdateNudge) and asks again at once; one that is queued, or
// not waiting at all, refuses the nudge without an event.
func TestDeliveryNudgedBackFromAFullQueue(t *testing.T) {
	const reason = "circuit open after 5 consecutive failures; the queue is full"
	t.Run("turned away: a nudge brings it back", func(t *testing.T) {
		st, rec, nudge := nudgedWhileHeld(t, herald.Hold{Full: true, Reason: reason, Recheck: herald.Duration(10 * time.Minute)}, 2*time.Minute)
		nudge.check(t, "the nudge")
		calls := rec.wantCalls(t, 2, "the turned-away attempt and the one after the nudge")
		if !calls[1].At.Equal(at(2 * time.Minute)) {
			t.Errorf("second attempt at %s, want when the nudge came (start+2m), not at the 10m recheck", calls[1].At)
		}
		if st.State != herald.StateDelivered {
			t.Errorf("final state %q, want delivered", st.State)
		}
	})
	t.Run("queued: refuses the nudge", func(t *testing.T) {
		_, rec, nudge := nudgedWhileHeld(t, herald.Hold{Queued: true, Reason: reason, Recheck: herald.Duration(5 * time.Minute)}, 5*time.Minute)
		if nudge == nil || nudge.accepted || nudge.rejected == nil {
			t.Fatalf("nudge of a queued delivery: %+v, want refused", nudge)
		}
		calls := rec.wantCalls(t, 2, "the queued attempt and the one at its recheck")
		if !calls[1].At.Equal(at(5 * time.Minute)) {
			t.Errorf("second attempt at %s, want at its recheck (start+5m)", calls[1].At)
		}
	})
}

// nudgedWhileHeld runs a delivery whose attempts the gate holds with h until start+until
// and that are delivered after, and nudges it 2 minutes in: its final status, its
// attempts, and what became of the nudge.
func nudgedWhileHeld(t *testing.T, h herald.Hold, until time.Duration) (herald.Status, *recorder, *updateOutcome[struct{}]) {
	t.Helper()
	p := defaultPolicy()
	env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
		if now.Before(at(until)) {
			held := h
			return herald.Result{Number: in.Number, StartedAt: now, Policy: p, Held: &held}, nil
		}
		return deliveredAttempt(now, p), nil
	})
	var nudge *updateOutcome[struct{}]
	env.RegisterDelayedCallback(func() { nudge = sendUpdate[struct{}](env, herald.UpdateNudge) }, 2*time.Minute)
	st := runDelivery(t, env)
	return st, rec, nudge
}

// TestDeliveryTakesPassByUpdate: a delivery queued at its endpoint takes a pass handed out
// by update (herald.UpdatePass) as it takes a permit signal: its next attempt goes at once,
// carrying the pass, and no settle timer follows (no permit is owed). One that is not
// waiting for its endpoint (between its ladder's retries) refuses the pass, and so does one
// given a grant that is not a pass.
func TestDeliveryTakesPassByUpdate(t *testing.T) {
	const reason = "endpoint at its concurrency cap of 20"
	pass := policy.Grant{Waiter: herald.DeliveryID(herald.DefaultTenant, testEventID), Until: at(2*time.Minute + policy.PassTTL), Pass: true}
	t.Run("queued: takes it", func(t *testing.T) {
		p := defaultPolicy()
		env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			if in.Permit == nil {
				return herald.Result{Number: in.Number, StartedAt: now, Policy: p, Held: &herald.Hold{Queued: true, Position: 7, Reason: reason}}, nil
			}
			return deliveredAttempt(now, p), nil
		})
		var sent, notPass *updateOutcome[struct{}]
		env.RegisterDelayedCallback(func() {
			notPass = sendUpdate[struct{}](env, herald.UpdatePass, policy.Grant{Until: pass.Until})
			sent = sendUpdate[struct{}](env, herald.UpdatePass, pass)
		}, 2*time.Minute)
		st := runDelivery(t, env)
		sent.check(t, "the pass")
		if notPass == nil || notPass.accepted || notPass.rejected == nil {
			t.Errorf("a grant that is not a pass: %+v, want refused", notPass)
		}
		calls := rec.wantCalls(t, 2, "the queued attempt and the one on the pass")
		if got := calls[1].In.Permit; got == nil || !got.Pass || !got.Until.Equal(pass.Until) || !calls[1].At.Equal(at(2*time.Minute)) {
			t.Errorf("second attempt at %s with %+v; want at start+2m with the pass", calls[1].At, got)
		}
		if st.State != herald.StateDelivered {
			t.Errorf("final state %q, want delivered", st.State)
		}
		if tm := rec.timerDurations(); len(tm) != 1 {
			t.Errorf("timers %v, want the wait's only (no settle timer)", tm)
		}
	})
	t.Run("between retries: refuses it", func(t *testing.T) {
		p := defaultPolicy()
		env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			if in.Number == 1 {
				return failedAttempt(now, p), nil
			}
			return deliveredAttempt(now, p), nil
		})
		var sent *updateOutcome[struct{}]
		env.RegisterDelayedCallback(func() { sent = sendUpdate[struct{}](env, herald.UpdatePass, pass) }, time.Second)
		st := runDelivery(t, env)
		if sent == nil || sent.accepted || sent.rejected == nil {
			t.Fatalf("pass to a delivery between retries: %+v, want refused", sent)
		}
		calls := rec.wantCalls(t, 2, "the failed attempt and its retry")
		if calls[1].In.Permit != nil {
			t.Errorf("the retry carries %+v, want no permit: the pass was refused", calls[1].In.Permit)
		}
		if st.State != herald.StateDelivered {
			t.Errorf("final state %q, want delivered", st.State)
		}
	})
}
