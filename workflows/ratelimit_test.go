package workflows

import (
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// TestLimiterRateLimit: an endpoint limited to 3 requests per second grants a burst of 8
// waiters 3 per aligned second: those that came in the first half of a second for that
// second, the rest woken by the timer in the middle of a second for the next one; a holder
// leases no permits; a waiter whose second passed unused asks again and is granted in the
// current second; an admission snapshot tells the gates the limit. This is the path of an
// endpoint run started before versionRateLease.
func TestLimiterRateLimit(t *testing.T) {
	env, rec := newGuardEnv(t)
	// The path of a run started before versionRateLease (TestLimiterRateLease: after).
	env.OnGetVersion(versionRateLease, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	limit := 3
	register(t, env, &herald.Overrides{RateLimit: &limit})
	burst := 10*time.Second + 100*time.Millisecond
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: waiterIDs(1, 8)})
	}, burst)
	var leased *updateOutcome[herald.LeaseReply]
	env.RegisterDelayedCallback(func() { leased = lease(env, policy.LeaseRequest{Want: 10}) }, burst+time.Millisecond)
	// w1's permit (for second 10) reached it too late: it asks again in second 12.
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: []string{waiterID(1)}})
	}, 12*time.Second+300*time.Millisecond)
	var snap herald.AdmissionView
	var st herald.EndpointState
	env.RegisterDelayedCallback(func() {
		snap = mustQuery[herald.AdmissionView](t, env, herald.QueryAdmission)
		st = queryState(t, env)
	}, 13*time.Second+500*time.Millisecond)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, 20*time.Second)

	want := []permitSignal{
		{Waiter: waiterID(1), At: at(burst)}, {Waiter: waiterID(2), At: at(burst)}, {Waiter: waiterID(3), At: at(burst)},
		{Waiter: waiterID(4), At: at(10*time.Second + policy.RateAhead)}, {Waiter: waiterID(5), At: at(10*time.Second + policy.RateAhead)},
		{Waiter: waiterID(6), At: at(10*time.Second + policy.RateAhead)},
		{Waiter: waiterID(7), At: at(11*time.Second + policy.RateAhead)}, {Waiter: waiterID(8), At: at(11*time.Second + policy.RateAhead)},
		{Waiter: waiterID(1), At: at(12*time.Second + 300*time.Millisecond)},
	}
	kinds := make([]policy.TicketKind, len(want))
	for i := range kinds {
		kinds[i] = policy.TicketNormal
	}
	wantSignals(t, rec.signals(), want, kinds)
	perWindow := map[time.Time]int{}
	for _, s := range rec.signals() {
		if w := s.Permit.Window; !w.Equal(policy.Target(s.At)) {
			t.Errorf("permit to %s sent at %s is for window %s, want %s", s.Waiter, s.At.Sub(testStart), w.Sub(testStart), policy.Target(s.At).Sub(testStart))
		}
		perWindow[s.Permit.Window]++
	}
	for w, n := range perWindow {
		if n > limit {
			t.Errorf("%d permits for the second at %s, limit %d", n, w.Sub(testStart), limit)
		}
	}
	if leased.check(t, "lease") && leased.result.Permits != 0 {
		t.Errorf("lease of %d permits on a rate-limited endpoint, want 0", leased.result.Permits)
	}
	if snap.Snapshot.RateLimit != limit || snap.Snapshot.Reason == "" {
		t.Errorf("admission snapshot %+v: want rate limit %d and a reason", snap.Snapshot, limit)
	}
	if st.RateLimit != limit || st.Overrides.RateLimit == nil || *st.Overrides.RateLimit != limit {
		t.Errorf("state shows rate limit %d, overrides %v; want %d", st.RateLimit, st.Overrides.RateLimit, limit)
	}
	if st.Queue != 0 {
		t.Errorf("%d still queued, want none", st.Queue)
	}
}
