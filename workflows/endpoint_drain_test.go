package workflows

import (
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// TestLimiterResetWakesQueueWithPasses: on the drain-passes branch, a reset wakes the whole
// queue at once with passes (no permits of their own: nothing is in flight for them), and a
// lease that says its pass-holders wait for room gets the cap though others are queued.
func TestLimiterResetWakesQueueWithPasses(t *testing.T) {
	env, rec := newGuardEnv(t)
	register(t, env, &herald.Overrides{MaxInFlight: 2})
	const trip = 20 * time.Second
	tripAt(env, trip, 0, waiterIDs(1, 12))
	const resetAt = time.Minute
	var after herald.EndpointState
	var grown *updateOutcome[herald.LeaseReply]
	env.RegisterDelayedCallback(func() { sendUpdate[herald.EndpointState](env, herald.UpdateReset) }, resetAt)
	env.RegisterDelayedCallback(func() { after = queryState(t, env) }, resetAt+time.Second)
	env.RegisterDelayedCallback(func() {
		grown = lease(env, policy.LeaseRequest{InUse: 0, Want: 8, Passing: 3, Passed: []string{waiterID(1), waiterID(2)}})
	}, resetAt+2*time.Second)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, resetAt+20*time.Second)

	win := policy.PassWindow(2)
	got := byInstant(rec.signals()) // the queue's order across tasks; within one, the set
	if len(got) != win+2 {
		t.Fatalf("%d permit signals, want the pass window %d, then 2 more once 2 passes were used", len(got), win)
	}
	for i, s := range got {
		if s.Waiter != waiterID(i+1) || !s.Permit.Pass || s.Permit.Ticket != (policy.Ticket{}) {
			t.Errorf("signal %d: %s %+v; want a pass to %s, in the queue's order", i+1, s.Waiter, s.Permit, waiterID(i+1))
		}
	}
	if after.Queue != 12-win || after.InFlight != 0 {
		t.Errorf("after the reset: queue %d, in flight %d; want %d queued, none in flight (passes hold no permit)", after.Queue, after.InFlight, 12-win)
	}
	if grown.check(t, "lease with pass-holders waiting") && grown.result.Permits != 2 {
		t.Errorf("lease with pass-holders waiting: %d permits, want the cap 2", grown.result.Permits)
	}
}

// TestEndpointHandsPassesOutAgain: a run that hands its passes out from the worker
// (versionPassUpdates) sends them in a batch through WakeWaiters; the passes it has no room
// for go as signals. A pass no gate reports used by PassTTL goes out again to the same
// waiter (it may have been lost with its worker), and a refusal of it frees its place in
// the window for the next in line.
func TestEndpointHandsPassesOutAgain(t *testing.T) {
	env, rec := newGuardEnv(t)
	rec.declined[waiterID(2)] = true
	register(t, env, &herald.Overrides{MaxInFlight: 2})
	const trip = 20 * time.Second
	tripAt(env, trip, 0, waiterIDs(1, 12))
	const resetAt = time.Minute
	env.RegisterDelayedCallback(func() { sendUpdate[herald.EndpointState](env, herald.UpdateReset) }, resetAt)
	refuseAt := resetAt + policy.PassTTL + 5*time.Second
	env.RegisterDelayedCallback(func() {
		p, _ := rec.permitOf(waiterID(1))
		env.SignalWorkflow(herald.SignalDones, []herald.Done{{Waiter: waiterID(1), Refused: p.Permit.Until}})
	}, refuseAt)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, refuseAt+10*time.Second)

	win := policy.PassWindow(2)
	byWaiter := map[string][]permitSignal{}
	for _, s := range rec.signals() {
		byWaiter[s.Waiter] = append(byWaiter[s.Waiter], s)
	}
	for i := 1; i <= win; i++ {
		got := byWaiter[waiterID(i)]
		if len(got) != 2 || !got[0].At.Equal(at(resetAt)) || !got[1].At.Equal(at(resetAt+policy.PassTTL)) || !got[1].Permit.Pass {
			t.Errorf("%s: passes %+v; want one at the reset and the same again at PassTTL", waiterID(i), got)
			continue
		}
		if want := i != 2; got[0].Update != want {
			t.Errorf("%s: first pass by update %v, want %v (w2's was declined: a signal)", waiterID(i), got[0].Update, want)
		}
	}
	if got := byWaiter[waiterID(win+1)]; len(got) != 1 || !got[0].At.Equal(at(refuseAt)) || !got[0].Update {
		t.Errorf("%s: passes %+v; want one by update when w1 refused its pass", waiterID(win+1), got)
	}
	if got := byWaiter[waiterID(win+2)]; len(got) != 0 {
		t.Errorf("%s: passes %+v; want none (the window is full again)", waiterID(win+2), got)
	}
}
