package workflows

import (
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// TestLimiterRateLease: an endpoint limited to 3 requests per second (versionRateLease)
// lends a gate that asks for them its shares of the current second and the next two, and
// permits of the cap; a second gate asking then gets nothing, the seconds being all lent; a
// waiter queued meanwhile is granted in the first second nobody holds; while it is queued,
// no gate is lent anything new; no second is lent more than the limit. This is the path of
// a run started before versionRateQueuePasses (TestLimiterRateQueuePasses: after).
func TestLimiterRateLease(t *testing.T) {
	env, rec := newGuardEnv(t)
	env.OnGetVersion(versionRateQueuePasses, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	limit := 3
	register(t, env, &herald.Overrides{RateLimit: &limit})
	var a, b, b2 *updateOutcome[herald.LeaseReply]
	env.RegisterDelayedCallback(func() {
		a = lease(env, policy.LeaseRequest{Holder: "gate-a", Want: 2, RateWant: 5})
	}, 10*time.Second+100*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		b = lease(env, policy.LeaseRequest{Holder: "gate-b", Want: 2, RateWant: 5})
	}, 10*time.Second+200*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: []string{waiterID(1)}})
	}, 10*time.Second+300*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		b2 = lease(env, policy.LeaseRequest{Holder: "gate-b", Want: 2, RateWant: 5})
	}, 11*time.Second+200*time.Millisecond)
	var snap herald.AdmissionView
	env.RegisterDelayedCallback(func() { snap = mustQuery[herald.AdmissionView](t, env, herald.QueryAdmission) }, 14*time.Second)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, 20*time.Second)

	if !a.check(t, "lease a") || !b.check(t, "lease b") || !b2.check(t, "lease b again") {
		return
	}
	sec := func(n int) time.Time { return at(time.Duration(n) * time.Second) }
	want := []policy.RateShare{{Window: sec(10), N: 3}, {Window: sec(11), N: 3}, {Window: sec(12), N: 3}}
	if got := a.result.Rate; len(got) != len(want) || !got[0].Window.Equal(want[0].Window) || got[0].N != 3 || got[1].N != 3 || got[2].N != 3 {
		t.Errorf("gate a's shares %v, want %v", got, want)
	}
	if a.result.Permits != 2 {
		t.Errorf("gate a leased %d permits, want 2: a rate-limited endpoint leases permits of the cap", a.result.Permits)
	}
	if len(b.result.Rate) != 0 || len(b2.result.Rate) != 0 {
		t.Errorf("gate b's shares %v then %v, want none: the seconds are all lent, then a waiter is queued", b.result.Rate, b2.result.Rate)
	}
	wantSignals(t, rec.signals(), []permitSignal{{Waiter: waiterID(1), At: sec(13)}}, []policy.TicketKind{policy.TicketNormal})
	for _, s := range rec.signals() {
		if !s.Permit.Window.Equal(sec(13)) {
			t.Errorf("permit to %s for window %s, want the second from 13s", s.Waiter, s.Permit.Window.Sub(testStart))
		}
	}
	if !snap.Snapshot.RateLeased || snap.Snapshot.RateLimit != limit {
		t.Errorf("admission snapshot %+v: want the rate limit, leased", snap.Snapshot)
	}
}

// TestLimiterRateQueuePasses: the same endpoint and gates as TestLimiterRateLease, after
// versionRateQueuePasses: the waiter queued while every second is lent is woken at once
// with a pass (no window, no ticket: its gate admits it on a share), and gate b is lent
// what is left of a second while the waiter is queued; no second is lent more than the
// limit, and the snapshot says the queue drains through the shares.
func TestLimiterRateQueuePasses(t *testing.T) {
	env, rec := newGuardEnv(t)
	limit := 3
	register(t, env, &herald.Overrides{RateLimit: &limit})
	var a, b, b2 *updateOutcome[herald.LeaseReply]
	env.RegisterDelayedCallback(func() {
		a = lease(env, policy.LeaseRequest{Holder: "gate-a", Want: 2, RateWant: 5})
	}, 10*time.Second+100*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		b = lease(env, policy.LeaseRequest{Holder: "gate-b", Want: 2, RateWant: 5})
	}, 10*time.Second+200*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: []string{waiterID(1), waiterID(2)}})
	}, 10*time.Second+300*time.Millisecond)
	var snap herald.AdmissionView
	env.RegisterDelayedCallback(func() { snap = mustQuery[herald.AdmissionView](t, env, herald.QueryAdmission) }, 10*time.Second+400*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		b2 = lease(env, policy.LeaseRequest{Holder: "gate-b", Want: 2, RateWant: 5, Passing: 1})
	}, 11*time.Second+200*time.Millisecond)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, 20*time.Second)

	if !a.check(t, "lease a") || !b.check(t, "lease b") || !b2.check(t, "lease b again") {
		return
	}
	sec := func(n int) time.Time { return at(time.Duration(n) * time.Second) }
	if len(b.result.Rate) != 0 {
		t.Errorf("gate b's first shares %v, want none: the seconds are all lent", b.result.Rate)
	}
	if got := b2.result.Rate; len(got) != 1 || !got[0].Window.Equal(sec(13)) || got[0].N != 2 {
		t.Errorf("gate b's shares while a waiter is queued %v, want 2 of the second from 13s (lent while queued)", got)
	}
	wantSignals(t, rec.signals(), []permitSignal{{Waiter: waiterID(1), At: sec(10).Add(300 * time.Millisecond)},
		{Waiter: waiterID(2), At: sec(10).Add(300 * time.Millisecond)}}, []policy.TicketKind{"", ""})
	for _, s := range rec.signals() {
		if !s.Permit.Pass || !s.Permit.Window.IsZero() {
			t.Errorf("wake of %s %+v, want a pass with no window", s.Waiter, s.Permit)
		}
	}
	if s := snap.Snapshot; !s.RateLeased || !s.RatePasses || s.Queue != 0 {
		t.Errorf("admission snapshot %+v: want the rate limit, leased, drained by passes, nobody left queued", s)
	}
}
