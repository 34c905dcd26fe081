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
