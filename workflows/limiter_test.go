package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
)

// Tests of the endpoint workflow's limiter loop (leases, outcomes, the breaker, the cap, the
// queue of waiting deliveries and their permits) and of a delivery held by the gate. Every
// time is on the test environment's clock, which starts at testStart.

const testHolder = "worker:a"

// at is testStart + d.
func at(d time.Duration) time.Time { return testStart.Add(d) }

// waiterID is the workflow id of the i-th waiting delivery of a test.
func waiterID(i int) string {
	return herald.DeliveryID(herald.DefaultTenant, fmt.Sprintf("evt_w%d", i))
}

func waiterIDs(from, to int) []string {
	var ws []string
	for i := from; i <= to; i++ {
		ws = append(ws, waiterID(i))
	}
	return ws
}

// permitSignal is one permit signal the endpoint workflow sent to a waiting delivery.
type permitSignal struct {
	Waiter string
	Permit policy.Grant
	At     time.Time
	// Update is set for a pass handed out from the worker (WakeWaiters), not signalled.
	Update bool
}

// circuitUpsert is one write of the HeraldCircuit search attribute.
type circuitUpsert struct {
	State string
	At    time.Time
}

// guardRecorder keeps what the endpoint workflow sent out: permit signals, HeraldCircuit
// upserts and timers.
type guardRecorder struct {
	permits  tape[permitSignal]
	circuits tape[circuitUpsert]
	timers   tape[time.Duration]
	// gone are the waiters whose workflow no longer exists: signalling them fails. Tests set
	// it before the workflow runs.
	gone map[string]bool
	// declined are the waiters whose passes WakeWaiters has no room for: they go as signals.
	declined map[string]bool
}

func (r *guardRecorder) signals() []permitSignal         { return r.permits.all() }
func (r *guardRecorder) upserts() []circuitUpsert        { return r.circuits.all() }
func (r *guardRecorder) timerDurations() []time.Duration { return r.timers.all() }

// permitOf returns the last permit signalled to waiter.
func (r *guardRecorder) permitOf(waiter string) (permitSignal, bool) {
	permits := r.permits.all()
	for i := len(permits) - 1; i >= 0; i-- {
		if permits[i].Waiter == waiter {
			return permits[i], true
		}
	}
	return permitSignal{}, false
}

// newGuardEnv returns a test environment running the endpoint workflow, with permit
// signals to deliveries, HeraldCircuit upserts and timers recorded.
func newGuardEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *guardRecorder) {
	t.Helper()
	env := newEndpointEnv(netguard.Policy{})
	rec := &guardRecorder{gone: map[string]bool{}, declined: map[string]bool{}}
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, herald.SignalPermit, mock.Anything).Return(
		func(_, workflowID, _, _ string, arg any) error {
			p, ok := arg.(policy.Grant)
			if !ok {
				t.Errorf("permit signal to %s carries %T, want policy.Grant", workflowID, arg)
			}
			rec.permits.add(permitSignal{Waiter: workflowID, Permit: p, At: env.Now()})
			if rec.gone[workflowID] {
				return errors.New("workflow not found")
			}
			return nil
		})
	// Passes handed out from the worker (versionPassUpdates) are recorded with the
	// signals: each reaches its delivery the same way as far as the endpoint knows.
	env.OnActivity((&activities.Operator{}).WakeWaiters, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r herald.PassWake) (herald.PassWoken, error) {
			var out herald.PassWoken
			for _, g := range r.Grants {
				w := g.Waiter
				if rec.declined[w] {
					out.Declined = append(out.Declined, w)
					continue
				}
				g.Waiter = ""
				rec.permits.add(permitSignal{Waiter: w, Permit: g, At: env.Now(), Update: true})
				out.Sent++
			}
			return out, nil
		})
	onKeywordUpsert(env, herald.AttrCircuit, func(v string) { rec.circuits.add(circuitUpsert{State: v, At: env.Now()}) })
	recordTimers(env, &rec.timers)
	return env, rec
}

// lease sends a lease update as worker:a's gate would.
func lease(env *testsuite.TestWorkflowEnvironment, r policy.LeaseRequest) *updateOutcome[herald.LeaseReply] {
	if r.Holder == "" {
		r.Holder = testHolder
	}
	return sendUpdate[herald.LeaseReply](env, herald.UpdateLease, herald.LeaseRequest{LeaseRequest: r})
}

// register registers the endpoint at start+1s with overrides o (nil: the defaults).
func register(t *testing.T, env *testsuite.TestWorkflowEnvironment, o *herald.Overrides) {
	secret := newSecret(t)
	env.RegisterDelayedCallback(func() {
		put(env, herald.PutEndpointRequest{ID: testEndpointID, URL: testURL, Secret: secret, Overrides: o})
	}, time.Second)
}

// failures returns n failed outcomes one second apart, the last at last.
func failures(n int, last time.Time, tk policy.Ticket) []policy.Outcome {
	var os []policy.Outcome
	for i := n - 1; i >= 0; i-- {
		os = append(os, policy.Outcome{At: last.Add(-time.Duration(i) * time.Second), OK: false, Latency: duration.Duration(200 * time.Millisecond), Ticket: tk})
	}
	return os
}

// outcomes returns n successful outcomes of latency lat one second apart, the last at last.
func outcomes(n int, last time.Time, lat time.Duration, tk policy.Ticket) []policy.Outcome {
	var os []policy.Outcome
	for i := n - 1; i >= 0; i-- {
		os = append(os, policy.Outcome{At: last.Add(-time.Duration(i) * time.Second), OK: true, Latency: duration.Duration(lat), Ticket: tk})
	}
	return os
}

// tripAt has worker:a lease permits at start+10s, then at tripAfter report 5 failures (the
// last at tripAfter-5s, which trips the circuit) and the waiters its lease cannot admit.
// It returns the two lease outcomes.
func tripAt(env *testsuite.TestWorkflowEnvironment, tripAfter time.Duration, inUse int, waiters []string) (first, second **updateOutcome[herald.LeaseReply]) {
	var f, s *updateOutcome[herald.LeaseReply]
	env.RegisterDelayedCallback(func() {
		f = lease(env, policy.LeaseRequest{Want: 10})
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		var tk policy.Ticket
		if f != nil {
			tk = f.result.Ticket
		}
		s = lease(env, policy.LeaseRequest{InUse: inUse, Want: 10, Outcomes: failures(5, at(tripAfter-5*time.Second), tk), Waiters: waiters})
	}, tripAfter)
	return &f, &s
}

// sendDone has waiter report its attempt's outcome on the permit it was signalled.
func sendDone(t *testing.T, env *testsuite.TestWorkflowEnvironment, rec *guardRecorder, waiter string, ok bool) {
	p, found := rec.permitOf(waiter)
	if !found {
		t.Errorf("at %s: %s reports an outcome, but it was never sent a permit", env.Now().Sub(testStart), waiter)
	}
	env.SignalWorkflow(herald.SignalDones, []herald.Done{{
		Waiter:  waiter,
		Outcome: &policy.Outcome{At: env.Now().Add(-time.Second), OK: ok, Latency: duration.Duration(300 * time.Millisecond), Ticket: p.Permit.Ticket},
	}})
}

// byInstant returns the permit signals ordered by when they were sent and, among those sent
// at the same instant, by waiter (shorter ids first, so evt_w9 comes before evt_w10). The test
// environment runs each signal's mock in its own goroutine, so signals sent in one workflow
// task are recorded in any order; only their instant and their set are the workflow's.
func byInstant(got []permitSignal) []permitSignal {
	g := slices.Clone(got)
	sort.SliceStable(g, func(i, j int) bool {
		if !g[i].At.Equal(g[j].At) {
			return g[i].At.Before(g[j].At)
		}
		if len(g[i].Waiter) != len(g[j].Waiter) {
			return len(g[i].Waiter) < len(g[j].Waiter)
		}
		return g[i].Waiter < g[j].Waiter
	})
	return g
}

// wantSignals checks the permit signals sent: to whom, when, and with which kind of ticket.
// Signals sent at the same instant may be recorded in any order.
func wantSignals(t *testing.T, got []permitSignal, want []permitSignal, kinds []policy.TicketKind) {
	t.Helper()
	norm := func(ps []permitSignal) []string {
		var s []string
		for _, p := range ps {
			s = append(s, fmt.Sprintf("%s@%s", p.Waiter, p.At.Sub(testStart)))
		}
		return s
	}
	g := byInstant(got)
	if gs, ws := norm(g), norm(want); !slices.Equal(gs, ws) {
		t.Errorf("permit signals\n got %v\nwant %v", gs, ws)
		return
	}
	for i, p := range g {
		if p.Permit.Ticket.Kind != kinds[i] {
			t.Errorf("permit %d to %s has a %s ticket, want %s", i+1, p.Waiter, p.Permit.Ticket.Kind, kinds[i])
		}
	}
}

func circuitStates(us []circuitUpsert) []string {
	var s []string
	for _, u := range us {
		s = append(s, fmt.Sprintf("%s@%s", u.State, u.At.Sub(testStart)))
	}
	return s
}

// TestGuardOpenProbeHalfOpenClosed walks the circuit through its whole cycle with the
// default breaker and a cap of 3: 5 failures open it and the waiters queue; 5 minutes
// later the first waiter is woken as the probe; its success makes the circuit half-open
// and the next waiters go one at a time; after 5 good ones the circuit closes and the
// queue flows out through the cap, never more at once.
func TestLimiterOpenProbeHalfOpenClosed(t *testing.T) {
	env, rec := newGuardEnv(t)
	// The branch before drain-passes: each woken waiter gets a permit of its own.
	env.OnGetVersion(versionDrainPasses, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	register(t, env, &herald.Overrides{MaxInFlight: 3})
	const trip = 20 * time.Second
	tripped := at(trip - 5*time.Second) // the 5th failure
	probeAt := tripped.Add(5 * time.Minute)
	first, second := tripAt(env, trip, 0, waiterIDs(1, 10))

	var open, halfOpen, closed herald.EndpointState
	var beforeProbe []permitSignal
	env.RegisterDelayedCallback(func() {
		open = queryState(t, env)
		beforeProbe = rec.signals()
	}, probeAt.Sub(testStart)-time.Second)
	// The probe (w1) succeeds 5 s after its permit; then each trickle attempt (w2..w6)
	// reports 5 s after the previous one.
	done := probeAt.Sub(testStart) + 5*time.Second
	for i := 1; i <= 6; i++ {
		env.RegisterDelayedCallback(func() { sendDone(t, env, rec, waiterID(i), true) }, done+time.Duration(i-1)*5*time.Second)
	}
	env.RegisterDelayedCallback(func() { halfOpen = queryState(t, env) }, done+time.Second)
	closedAt := done + 25*time.Second
	env.RegisterDelayedCallback(func() { closed = queryState(t, env) }, closedAt+time.Second)
	// One of the three woken when it closed finishes: the next waiter takes its permit.
	env.RegisterDelayedCallback(func() { sendDone(t, env, rec, waiterID(7), true) }, closedAt+5*time.Second)
	var end herald.EndpointState
	env.RegisterDelayedCallback(func() { end = queryState(t, env) }, closedAt+6*time.Second)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, time.Hour)

	if (*first).check(t, "first lease") && (*first).result.Permits != 3 {
		t.Errorf("first lease: %d permits, want the cap of 3", (*first).result.Permits)
	}
	if r := *second; r.check(t, "lease with the failures") {
		if r.result.Circuit != policy.CircuitOpen || r.result.Permits != 0 || len(r.result.Waiters) != 10 {
			t.Errorf("reply to the failures: circuit %s, %d permits, %d waiters; want open, 0, 10", r.result.Circuit, r.result.Permits, len(r.result.Waiters))
		} else if w := r.result.Waiters[0]; w.Outcome != policy.WaiterQueued || w.Position != 1 || w.Reason != "circuit open after 5 consecutive failures" || !w.RetryAt.Equal(probeAt) {
			t.Errorf("first waiter: %+v, want queued at 1, circuit open after 5 consecutive failures, retry at the probe %s", w, probeAt)
		}
	}
	if len(beforeProbe) != 0 {
		t.Errorf("permits before the probe was due: %v", beforeProbe)
	}
	if c := open.Circuit; c.State != policy.CircuitOpen || c.Reason != "5 consecutive failures" ||
		!c.TrippedAt.Equal(tripped) || !c.NextProbeAt.Equal(probeAt) || open.Queue != 10 {
		t.Errorf("while open: circuit %+v, queue %d; want open since %s, next probe %s, 10 queued", c, open.Queue, tripped, probeAt)
	}
	if c := halfOpen.Circuit; c.State != policy.CircuitHalfOpen || !c.NextProbeAt.IsZero() || halfOpen.Queue != 8 {
		t.Errorf("after the probe's success: circuit %+v, queue %d; want half_open with 8 queued (w1 done, w2 trickling)", c, halfOpen.Queue)
	}
	if c := closed.Circuit; c.State != policy.CircuitClosed || closed.Queue != 1 || closed.InFlight != 3 || closed.Cap != 3 {
		t.Errorf("after 5 good half-open attempts: circuit %+v, queue %d, in flight %d, cap %d; want closed, 1 queued, 3 in flight of 3",
			c, closed.Queue, closed.InFlight, closed.Cap)
	}
	if end.Queue != 0 || end.InFlight != 3 {
		t.Errorf("after one permit came back: queue %d, in flight %d; want 0 and 3", end.Queue, end.InFlight)
	}

	p := probeAt.Sub(testStart)
	s := 5 * time.Second
	want := []permitSignal{
		{Waiter: waiterID(1), At: at(p)},
		{Waiter: waiterID(2), At: at(p + s)}, {Waiter: waiterID(3), At: at(p + 2*s)}, {Waiter: waiterID(4), At: at(p + 3*s)},
		{Waiter: waiterID(5), At: at(p + 4*s)}, {Waiter: waiterID(6), At: at(p + 5*s)},
		{Waiter: waiterID(7), At: at(p + 6*s)}, {Waiter: waiterID(8), At: at(p + 6*s)}, {Waiter: waiterID(9), At: at(p + 6*s)},
		{Waiter: waiterID(10), At: at(p + 7*s)},
	}
	kinds := []policy.TicketKind{policy.TicketProbe, policy.TicketTrickle, policy.TicketTrickle, policy.TicketTrickle,
		policy.TicketTrickle, policy.TicketTrickle, policy.TicketNormal, policy.TicketNormal, policy.TicketNormal, policy.TicketNormal}
	got := rec.signals()
	wantSignals(t, got, want, kinds)
	for _, g := range got {
		if !g.Permit.Until.Equal(g.At.Add(40 * time.Second)) {
			t.Errorf("permit to %s at %s lasts until %s, want the lease TTL of 40s", g.Waiter, g.At.Sub(testStart), g.Permit.Until.Sub(testStart))
		}
	}
	if pr, ok := rec.permitOf(waiterID(1)); ok {
		if tr, ok := rec.permitOf(waiterID(2)); ok && tr.Permit.Ticket.Epoch != pr.Permit.Ticket.Epoch+1 {
			t.Errorf("trickle ticket epoch %d, want the probe's %d + 1 (half-open is a new epoch)", tr.Permit.Ticket.Epoch, pr.Permit.Ticket.Epoch)
		}
	}

	wantUp := []string{"closed@1s", fmt.Sprintf("open@%s", trip), fmt.Sprintf("half_open@%s", p+s), fmt.Sprintf("closed@%s", p+6*s)}
	if up := circuitStates(rec.upserts()); !slices.Equal(up, wantUp) {
		t.Errorf("HeraldCircuit upserts %v, want %v", up, wantUp)
	}
}

// TestGuardFailedProbeDoublesDelay has every probe fail: the next probe goes 10 minutes
// after the first failure, then 20, 40, and never more than 60.
func TestLimiterFailedProbeDoublesDelay(t *testing.T) {
	env, rec := newGuardEnv(t)
	register(t, env, nil)
	const trip = 20 * time.Second
	tripped := at(trip - 5*time.Second)
	tripAt(env, trip, 0, waiterIDs(1, 6))

	delays := []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, time.Hour, time.Hour}
	var want []permitSignal
	var kinds []policy.TicketKind
	states := make([]herald.EndpointState, len(delays)-1)
	wantNext := make([]time.Time, len(delays)-1)
	last := tripped // when the circuit (re)opened
	for i, d := range delays {
		probe := last.Add(d)
		want = append(want, permitSignal{Waiter: waiterID(i + 1), At: probe})
		kinds = append(kinds, policy.TicketProbe)
		if i == len(delays)-1 {
			break
		}
		// The done signal comes 5 s after the permit; the attempt failed 1 s before it,
		// which is when the circuit re-opens.
		doneAt := probe.Add(5 * time.Second)
		env.RegisterDelayedCallback(func() { sendDone(t, env, rec, waiterID(i+1), false) }, doneAt.Sub(testStart))
		env.RegisterDelayedCallback(func() { states[i] = queryState(t, env) }, doneAt.Sub(testStart)+time.Second)
		failed := doneAt.Add(-time.Second)
		wantNext[i] = failed.Add(delays[i+1])
		last = failed
	}
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, last.Add(2*time.Hour).Sub(testStart))

	wantSignals(t, rec.signals(), want, kinds)
	for i, st := range states {
		c := st.Circuit
		if c.State != policy.CircuitOpen || c.Reason != "probe failed" || !c.NextProbeAt.Equal(wantNext[i]) ||
			!c.TrippedAt.Equal(tripped) || !c.Since.Equal(wantNext[i].Add(-delays[i+1])) {
			t.Errorf("after failed probe %d: circuit %+v; want open (probe failed) since %s, next probe %s (%s later)",
				i+1, c, tripped, wantNext[i], delays[i+1])
		}
	}
	seen := map[uint64]bool{}
	for _, s := range rec.signals() {
		if seen[s.Permit.Ticket.Slot] {
			t.Errorf("probe slot %d handed out twice", s.Permit.Ticket.Slot)
		}
		seen[s.Permit.Ticket.Slot] = true
	}
	if up := circuitStates(rec.upserts()); !slices.Equal(up, []string{"closed@1s", fmt.Sprintf("open@%s", trip)}) {
		t.Errorf("HeraldCircuit upserts %v, want closed then open once: a re-opened circuit stays open", up)
	}
}

// TestGuardSlowP99HalvesCap feeds latencies to the adaptive cap through lease renewals:
// 10 attempts over 3 s halve the cap (9 are not enough samples), the halved cap limits
// what another worker is granted, and 10 fast attempts 30 s later restore it.
func TestLimiterSlowP99HalvesCap(t *testing.T) {
	env, _ := newGuardEnv(t)
	register(t, env, nil)
	var first *updateOutcome[herald.LeaseReply]
	var states []herald.EndpointState
	var other *updateOutcome[herald.LeaseReply]
	snap := func() { states = append(states, queryState(t, env)) }
	env.RegisterDelayedCallback(func() { first = lease(env, policy.LeaseRequest{Want: 10}) }, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		lease(env, policy.LeaseRequest{InUse: 1, Want: 10, Outcomes: outcomes(9, at(20*time.Second), 4*time.Second, first.result.Ticket)})
	}, 20*time.Second)
	env.RegisterDelayedCallback(snap, 21*time.Second) // 9 slow samples: not enough
	env.RegisterDelayedCallback(func() {
		lease(env, policy.LeaseRequest{InUse: 1, Want: 10, Outcomes: outcomes(1, at(25*time.Second), 5*time.Second, first.result.Ticket)})
	}, 25*time.Second)
	env.RegisterDelayedCallback(snap, 26*time.Second) // the 10th: halved
	env.RegisterDelayedCallback(func() {
		other = lease(env, policy.LeaseRequest{Holder: "worker:b", Want: 100})
	}, 27*time.Second)
	env.RegisterDelayedCallback(func() {
		lease(env, policy.LeaseRequest{InUse: 1, Want: 10, Outcomes: outcomes(10, at(60*time.Second), 100*time.Millisecond, first.result.Ticket)})
	}, 60*time.Second)
	env.RegisterDelayedCallback(snap, 61*time.Second) // fast again: restored
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, 10*time.Minute)

	if !first.check(t, "first lease") || len(states) != 3 {
		t.FailNow()
	}
	if s := states[0]; s.Cap != 100 || s.MaxInFlight != 100 || s.P99.Std() != 4*time.Second {
		t.Errorf("after 9 slow attempts: cap %d of %d, p99 %s; want 100 of 100 (9 samples are too few), p99 4s", s.Cap, s.MaxInFlight, s.P99)
	}
	if s := states[1]; s.Cap != 50 || s.MaxInFlight != 100 || s.P99.Std() != 5*time.Second {
		t.Errorf("after 10 slow attempts: cap %d of %d, p99 %s; want the cap halved to 50, p99 5s", s.Cap, s.MaxInFlight, s.P99)
	}
	if other.check(t, "worker:b's lease") && other.result.Permits != 40 {
		t.Errorf("worker:b granted %d permits while worker:a holds 10 under a cap of 50, want 40", other.result.Permits)
	}
	if s := states[2]; s.Cap != 100 || s.P50.Std() != 100*time.Millisecond {
		t.Errorf("after 10 fast attempts: cap %d, p50 %s; want the cap back at 100, p50 100ms", s.Cap, s.P50)
	}
	if s := states[2]; s.Circuit.State != policy.CircuitClosed {
		t.Errorf("slow successes changed the circuit to %s", s.Circuit.State)
	}
}

// TestGuardHalvedCapTrimsBusyLease: once the cap has halved, a worker that keeps renewing
// its lease while busy must not keep more permits than the new cap (README: "the leases
// never add up to more than the cap").
func TestLimiterHalvedCapTrimsBusyLease(t *testing.T) {
	env, _ := newGuardEnv(t)
	register(t, env, nil)
	var first, renewed, later *updateOutcome[herald.LeaseReply]
	env.RegisterDelayedCallback(func() { first = lease(env, policy.LeaseRequest{Want: 100}) }, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		// 10 slow attempts halve the cap; the worker runs 30 and, busy, asks for more (the
		// gate asks for max(inUse+1, 2×peak)).
		renewed = lease(env, policy.LeaseRequest{InUse: 30, Want: 120, Outcomes: outcomes(10, at(20*time.Second), 4*time.Second, first.result.Ticket)})
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() {
		later = lease(env, policy.LeaseRequest{InUse: 30, Want: 120})
	}, 21*time.Second)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, 5*time.Minute)

	if !first.check(t, "first lease") || first.result.Permits != 100 {
		t.Fatalf("first lease: %d permits, want 100", first.result.Permits)
	}
	for _, r := range []*updateOutcome[herald.LeaseReply]{renewed, later} {
		if r.check(t, "renewal") && r.result.Permits > 50 {
			t.Errorf("renewal after the cap halved to 50: %d permits, want at most 50 (at least the 30 running)", r.result.Permits)
		}
	}
}

// TestGuardDeadHolderLeaseExpires: worker:a takes the whole cap and dies (it never renews);
// its lease expires after its TTL, when the endpoint workflow's timer fires, and the
// queued waiters get its permits. The woken waiters never report either: their own
// permits come back after the lease TTL of 40 s and the last waiter gets one.
func TestLimiterDeadHolderLeaseExpires(t *testing.T) {
	env, rec := newGuardEnv(t)
	// The branch before drain-passes: each woken waiter gets a permit of its own.
	env.OnGetVersion(versionDrainPasses, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	register(t, env, &herald.Overrides{MaxInFlight: 2})
	const ttl = 25 * time.Second
	var dead, other *updateOutcome[herald.LeaseReply]
	var before, after herald.EndpointState
	var signalsBefore []permitSignal
	env.RegisterDelayedCallback(func() {
		dead = lease(env, policy.LeaseRequest{Want: 2, TTL: duration.Duration(ttl)})
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		other = lease(env, policy.LeaseRequest{Holder: "worker:b", Want: 1, Waiters: waiterIDs(1, 3)})
	}, 15*time.Second)
	expiry := 10*time.Second + ttl
	env.RegisterDelayedCallback(func() {
		before = queryState(t, env)
		signalsBefore = rec.signals()
	}, expiry-time.Second)
	env.RegisterDelayedCallback(func() { after = queryState(t, env) }, expiry+time.Second)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, 10*time.Minute)

	if dead.check(t, "worker:a's lease") && (dead.result.Permits != 2 || !dead.result.Expires.Equal(at(expiry))) {
		t.Errorf("worker:a's lease: %d permits until %s, want 2 until %s (its TTL)", dead.result.Permits, dead.result.Expires, at(expiry))
	}
	if other.check(t, "worker:b's lease") {
		if other.result.Permits != 0 || len(other.result.Waiters) != 3 {
			t.Errorf("worker:b: %d permits, %d waiter replies; want 0 and 3", other.result.Permits, len(other.result.Waiters))
		}
		for i, w := range other.result.Waiters {
			if w.Outcome != policy.WaiterQueued || w.Position != i+1 || w.Reason != "endpoint at its concurrency cap of 2" {
				t.Errorf("waiter %d: %+v, want queued at %d at the cap of 2", i+1, w, i+1)
			}
		}
	}
	if len(signalsBefore) != 0 || before.InFlight != 2 || before.Queue != 3 || len(before.Leases) != 1 || before.Leases[0].Holder != testHolder {
		t.Errorf("before the expiry: signals %v, in flight %d, queue %d, leases %+v; want none, 2, 3, worker:a's",
			signalsBefore, before.InFlight, before.Queue, before.Leases)
	}
	wantSignals(t, rec.signals(), []permitSignal{{Waiter: waiterID(1), At: at(expiry)}, {Waiter: waiterID(2), At: at(expiry)},
		{Waiter: waiterID(3), At: at(expiry + 40*time.Second)}},
		[]policy.TicketKind{policy.TicketNormal, policy.TicketNormal, policy.TicketNormal})
	if after.InFlight != 2 || after.Queue != 1 || len(after.Leases) != 2 || after.Leases[0].Holder != waiterID(1) || after.Leases[1].Holder != waiterID(2) {
		t.Errorf("after the expiry: in flight %d, queue %d, leases %+v; want w1's and w2's permits, w3 still queued",
			after.InFlight, after.Queue, after.Leases)
	}
	// The timer set when worker:a leased fires at its lease's expiry.
	if tm := rec.timerDurations(); !slices.Contains(tm, ttl) {
		t.Errorf("timers %v, want one of %s (worker:a's lease expiry)", tm, ttl)
	}
}

// TestGuardContinueAsNewKeepsGuard continues an endpoint workflow as new with an open
// circuit, a lease and a queue, checks what the next run is given, then runs it:
// the probe still goes at the time the first run set.
func TestLimiterContinueAsNewKeepsGuard(t *testing.T) {
	env, _ := newGuardEnv(t)
	register(t, env, &herald.Overrides{MaxInFlight: 7})
	const trip = 20 * time.Second
	tripped := at(trip - 5*time.Second)
	probeAt := tripped.Add(5 * time.Minute)
	tripAt(env, trip, 2, waiterIDs(1, 3))
	canAt := 30 * time.Second
	env.RegisterDelayedCallback(func() {
		// The suggestion and a waiter reach the workflow in the same workflow task (see
		// TestEndpointContinueAsNewKeepsState): the waiter is queued, not lost.
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 0)
		env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: []string{waiterID(4)}})
	}, canAt)
	env.ExecuteWorkflow(herald.EndpointWorkflow, herald.EndpointInput{ID: testEndpointID})

	_, next := continuedAsNew[herald.EndpointInput](t, env)
	if !env.Now().Equal(at(canAt)) {
		t.Errorf("continued as new at %s, want %s", env.Now(), at(canAt))
	}
	g := next.Limiter
	if g == nil {
		t.Fatal("continues without the guard")
	}
	b := g.Breaker
	if b.State() != policy.CircuitOpen || b.TripReason() != "5 consecutive failures" || !b.TrippedAt.Equal(tripped) || !b.NextProbeAt().Equal(probeAt) {
		t.Errorf("continues with circuit %s (%q) tripped %s, probe %s; want open (5 consecutive failures), %s, %s",
			b.State(), b.TripReason(), b.TrippedAt, b.NextProbeAt(), tripped, probeAt)
	}
	if !slices.Equal(g.Ledger.Waiting, waiterIDs(1, 4)) {
		t.Errorf("continues with the queue %v, want %v", g.Ledger.Waiting, waiterIDs(1, 4))
	}
	if l, ok := g.Ledger.Lease(testHolder); !ok || l.Permits != 2 || !l.Expires.Equal(at(trip+40*time.Second)) {
		t.Errorf("continues with worker:a's lease %+v (found %v), want its 2 running permits until %s", l, ok, at(trip+40*time.Second))
	}
	if g.Cap() != 7 || g.Config.Capacity.MaxInFlight != 7 {
		t.Errorf("continues with cap %d (max %d), want 7", g.Cap(), g.Config.Capacity.MaxInFlight)
	}
	if next.Circuit != policy.CircuitOpen {
		t.Errorf("continues with the HeraldCircuit value %q, want open", next.Circuit)
	}

	// The next run: the probe goes when the first run said, the upsert is not repeated.
	env2, rec2 := newGuardEnv(t)
	env2.SetStartTime(at(canAt))
	var st herald.EndpointState
	env2.RegisterDelayedCallback(func() { st = queryState(t, env2) }, time.Second)
	env2.RegisterDelayedCallback(env2.CancelWorkflow, probeAt.Sub(at(canAt))+10*time.Second)
	env2.ExecuteWorkflow(herald.EndpointWorkflow, next)
	var canceled *temporal.CanceledError
	if err := env2.GetWorkflowError(); !errors.As(err, &canceled) {
		t.Fatalf("next run's error = %v, want it cancelled at the end of the test", err)
	}
	if st.Circuit.State != policy.CircuitOpen || st.Queue != 4 || st.InFlight != 2 || st.Cap != 7 {
		t.Errorf("next run's state: circuit %s, queue %d, in flight %d, cap %d; want open, 4, 2, 7",
			st.Circuit.State, st.Queue, st.InFlight, st.Cap)
	}
	wantSignals(t, rec2.signals(), []permitSignal{{Waiter: waiterID(1), At: probeAt}}, []policy.TicketKind{policy.TicketProbe})
	if up := rec2.upserts(); len(up) != 0 {
		t.Errorf("next run upserts HeraldCircuit %v, want nothing: it is still open", circuitStates(up))
	}
}

// TestGuardResetClosesAndWakesQueue: the reset update closes an open circuit at once and
// the queue flows out through the cap.
func TestLimiterResetClosesAndWakesQueue(t *testing.T) {
	env, rec := newGuardEnv(t)
	// The branch before drain-passes: each woken waiter gets a permit of its own.
	env.OnGetVersion(versionDrainPasses, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	register(t, env, &herald.Overrides{MaxInFlight: 2})
	const trip = 20 * time.Second
	tripAt(env, trip, 0, waiterIDs(1, 3))
	const resetAt = time.Minute
	var reset *updateOutcome[herald.EndpointState]
	var after herald.EndpointState
	env.RegisterDelayedCallback(func() { reset = sendUpdate[herald.EndpointState](env, herald.UpdateReset) }, resetAt)
	env.RegisterDelayedCallback(func() { after = queryState(t, env) }, resetAt+time.Second)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, resetAt+30*time.Second)

	if reset.check(t, "reset") {
		if c := reset.result.Circuit; c.State != policy.CircuitClosed || c.Reason != "" || !c.NextProbeAt.IsZero() || !c.Since.Equal(at(resetAt)) {
			t.Errorf("reset answers circuit %+v, want closed since %s", c, at(resetAt))
		}
	}
	if after.Circuit.State != policy.CircuitClosed || after.Queue != 1 || after.InFlight != 2 {
		t.Errorf("after the reset: circuit %s, queue %d, in flight %d; want closed, 1 queued, 2 in flight (the cap)",
			after.Circuit.State, after.Queue, after.InFlight)
	}
	wantSignals(t, rec.signals(), []permitSignal{{Waiter: waiterID(1), At: at(resetAt)}, {Waiter: waiterID(2), At: at(resetAt)}},
		[]policy.TicketKind{policy.TicketNormal, policy.TicketNormal})
	wantUp := []string{"closed@1s", fmt.Sprintf("open@%s", trip), fmt.Sprintf("closed@%s", resetAt)}
	if up := circuitStates(rec.upserts()); !slices.Equal(up, wantUp) {
		t.Errorf("HeraldCircuit upserts %v, want %v", up, wantUp)
	}
}

// TestGuardGoneProbeGoesToNextWaiter: when the probe's delivery no longer exists the
// signal fails, the permit comes back and the next waiter becomes the probe at once.
func TestLimiterGoneProbeGoesToNextWaiter(t *testing.T) {
	env, rec := newGuardEnv(t)
	rec.gone[waiterID(1)] = true
	register(t, env, nil)
	const trip = 20 * time.Second
	probeAt := at(trip - 5*time.Second + 5*time.Minute)
	tripAt(env, trip, 0, waiterIDs(1, 3))
	var st herald.EndpointState
	env.RegisterDelayedCallback(func() { st = queryState(t, env) }, probeAt.Sub(testStart)+time.Second)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, probeAt.Sub(testStart)+30*time.Second)

	wantSignals(t, rec.signals(), []permitSignal{{Waiter: waiterID(1), At: probeAt}, {Waiter: waiterID(2), At: probeAt}},
		[]policy.TicketKind{policy.TicketProbe, policy.TicketProbe})
	if st.Queue != 1 || st.InFlight != 1 || len(st.Leases) != 1 || st.Leases[0].Holder != waiterID(2) {
		t.Errorf("after the lost probe: queue %d, in flight %d, leases %+v; want w2 holding the probe, w3 queued", st.Queue, st.InFlight, st.Leases)
	}
}

// TestDeliveryHeldByGate: an attempt held by the gate waits for the endpoint's permit
// without using an attempt, shows why in the status query, and runs again on the permit.
func TestDeliveryHeldByGate(t *testing.T) {
	probe := at(5 * time.Minute)
	permit := policy.Grant{Ticket: policy.Ticket{Epoch: 2, Kind: policy.TicketProbe, Slot: 1}, Until: at(3*time.Minute + 40*time.Second)}
	const reason = "circuit open after 5 consecutive failures"

	t.Run("woken by a permit", func(t *testing.T) {
		p := defaultPolicy()
		env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			if in.Permit == nil {
				return herald.Result{Number: in.Number, StartedAt: now, Policy: p,
					Held: &herald.Hold{Queued: true, Position: 3, Reason: reason, RetryAt: probe}}, nil
			}
			return deliveredAttempt(now, p), nil
		})
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: herald.DeliveryID(herald.DefaultTenant, testEventID)})
		var waiting herald.Status
		env.RegisterDelayedCallback(func() { waiting = queryStatus(t, env) }, time.Minute)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalPermit, permit) }, 3*time.Minute)
		st := runDelivery(t, env)

		if waiting.State != herald.StateWaitingEndpoint || waiting.Waiting == nil || waiting.Waiting.Reason != reason ||
			!waiting.Waiting.Queued || waiting.Waiting.Position != 3 || !waiting.Waiting.RetryAt.Equal(probe) || !waiting.Waiting.Since.Equal(testStart) {
			t.Errorf("while held: state %q, waiting %+v; want %q, %q, queued at 3, since the start", waiting.State, waiting.Waiting, herald.StateWaitingEndpoint, reason)
		}
		if len(waiting.Attempts) != 0 {
			t.Errorf("while held the status shows %d attempts, want none: a held attempt is not an attempt", len(waiting.Attempts))
		}
		calls := rec.wantCalls(t, 2, "the held one and the one on the permit")
		checkInput(t, calls[0].In, 0, 1)
		checkInput(t, calls[1].In, 0, 1) // the held attempt used none of the ladder
		if calls[0].In.Permit != nil || calls[0].In.Waiter != herald.DeliveryID(herald.DefaultTenant, testEventID) {
			t.Errorf("first attempt: permit %+v, waiter %q; want no permit and waiter %q", calls[0].In.Permit, calls[0].In.Waiter, herald.DeliveryID(herald.DefaultTenant, testEventID))
		}
		if got := calls[1].In.Permit; got == nil || got.Ticket != permit.Ticket || !got.Until.Equal(permit.Until) {
			t.Errorf("second attempt carries permit %+v, want %+v", got, permit)
		}
		if !calls[1].At.Equal(at(3 * time.Minute)) {
			t.Errorf("second attempt at %s, want when the permit came (start+3m)", calls[1].At)
		}
		if st.State != herald.StateDelivered || len(st.Attempts) != 1 || st.Attempts[0].Number != 1 || st.Waiting != nil {
			t.Errorf("final: state %q, %d attempts, waiting %+v; want delivered on attempt 1, no longer waiting", st.State, len(st.Attempts), st.Waiting)
		}
		// The wait timer: until the probe (plus a second), shorter than the queued maximum;
		// no settle timer: its one wait has had its permit, so none can come during the
		// last attempt's task (settleOwedVersion).
		if tm := rec.timerDurations(); len(tm) != 1 || tm[0] != 5*time.Minute+time.Second {
			t.Errorf("timers %v, want one wait of 5m1s", tm)
		}
		if up := rec.statuses(); len(up) == 0 || up[0] != herald.StateWaitingEndpoint {
			t.Errorf("HeraldStatus upserts %v, want waiting_endpoint first", up)
		}
	})

	t.Run("leaves waiting_endpoint in the search attribute once delivered", func(t *testing.T) {
		p := defaultPolicy()
		env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			if in.Permit == nil {
				return herald.Result{Number: in.Number, StartedAt: now, Policy: p, Held: &herald.Hold{Queued: true, Reason: reason, RetryAt: probe}}, nil
			}
			return deliveredAttempt(now, p), nil
		})
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalPermit, permit) }, 3*time.Minute)
		runDelivery(t, env)
		if up := rec.statuses(); !slices.Equal(up, []herald.State{herald.StateWaitingEndpoint, herald.StateDelivered}) {
			t.Errorf("HeraldStatus upserts %v, want [waiting_endpoint delivered]", up)
		}
	})

	t.Run("no permit: asks again at the probe", func(t *testing.T) {
		p := defaultPolicy()
		env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			if now.Before(probe) {
				return herald.Result{Number: in.Number, StartedAt: now, Policy: p, Held: &herald.Hold{Queued: true, Reason: reason, RetryAt: probe}}, nil
			}
			return deliveredAttempt(now, p), nil
		})
		st := runDelivery(t, env)
		calls := rec.wantCalls(t, 2, "2")
		checkInput(t, calls[1].In, 0, 1)
		if calls[1].In.Permit != nil || !calls[1].At.Equal(probe.Add(time.Second)) {
			t.Errorf("second attempt at %s with permit %+v, want at the probe + 1s without a permit", calls[1].At, calls[1].In.Permit)
		}
		if st.State != herald.StateDelivered {
			t.Errorf("state %q, want delivered", st.State)
		}
	})

	t.Run("held, then failed: the ladder starts at attempt 1", func(t *testing.T) {
		p := defaultPolicy()
		env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			switch {
			case now.Before(at(time.Minute)):
				return herald.Result{Number: in.Number, StartedAt: now, Policy: p, Held: &herald.Hold{Reason: "the queue is full (10000 waiting)", RetryAt: now.Add(time.Minute)}}, nil
			case in.Number == 1:
				return failedAttempt(now, p), nil
			}
			return deliveredAttempt(now, p), nil
		})
		// Not queued: it asks again at RetryAt + 1s.
		st := runDelivery(t, env)
		calls := rec.wantCalls(t, 3, "held, failed, delivered")
		// Asked again without a permit, it is still attempt 1; it fails, and the retry is 2.
		checkInput(t, calls[1].In, 0, 1)
		checkInput(t, calls[2].In, 0, 2)
		if !calls[1].At.Equal(at(time.Minute + time.Second)) {
			t.Errorf("asked again at %s, want start+1m1s", calls[1].At)
		}
		if gap, want := calls[2].At.Sub(calls[1].At), ladderDelays(t, p, testEventID, 0)[0]; gap != want {
			t.Errorf("retry after %s, want the ladder's first rung %s", gap, want)
		}
		if len(st.Attempts) != 2 || st.Attempts[0].Number != 1 || st.Attempts[1].Number != 2 {
			t.Errorf("status shows %d attempts, want attempts 1 and 2", len(st.Attempts))
		}
	})
}

// TestLimiterKeepsFlightOfRenewal: a renewal that cuts a gate's lease (its failures open
// the circuit) keeps what the gate may have admitted meanwhile counted as in flight, until
// the gate's next renewal says what runs.
func TestLimiterKeepsFlightOfRenewal(t *testing.T) {
	env, _ := newGuardEnv(t)
	register(t, env, &herald.Overrides{MaxInFlight: 7})
	var first *updateOutcome[herald.LeaseReply]
	var cut, settled herald.EndpointState
	seven, none := 7, 0
	env.RegisterDelayedCallback(func() { first = lease(env, policy.LeaseRequest{Want: 10}) }, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		// Sent while 2 ran; the gate may have admitted up to its 7 permits since.
		lease(env, policy.LeaseRequest{InUse: 2, Want: 10, Flight: &seven, Outcomes: failures(5, at(19*time.Second), first.result.Ticket)})
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() { cut = queryState(t, env) }, 21*time.Second)
	env.RegisterDelayedCallback(func() { lease(env, policy.LeaseRequest{InUse: 0, Want: 0, Flight: &none}) }, 22*time.Second)
	env.RegisterDelayedCallback(func() { settled = queryState(t, env) }, 23*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 30*time.Second)
	env.ExecuteWorkflow(herald.EndpointWorkflow, herald.EndpointInput{ID: testEndpointID})
	if first == nil || first.result.Permits != 7 {
		t.Fatalf("first lease: %+v, want 7 permits", first)
	}
	if cut.Circuit.State != policy.CircuitOpen || cut.InFlight != 7 {
		t.Errorf("after the cut: circuit %s, in flight %d; want open, 7 (the gate's flight)", cut.Circuit.State, cut.InFlight)
	}
	if settled.InFlight != 0 {
		t.Errorf("after the gate's next renewal (nothing running): in flight %d, want 0", settled.InFlight)
	}
}

// TestDeliveryBookedCompletesWithoutSettle: a rate-limited attempt booked for a later second
// (a brief hold, not queued at the endpoint workflow) waits on its timer, and the attempt
// that follows completes the delivery in its own workflow task: no permit can come, so no
// settle timer (settleQueuedVersion). A run on the version before settles as it did.
func TestDeliveryBookedCompletesWithoutSettle(t *testing.T) {
	booked := func(p herald.Settings) func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
		first := true
		return func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			if first {
				first = false
				return herald.Result{Number: in.Number, StartedAt: now, Policy: p, Held: &herald.Hold{
					Reason: "endpoint rate limit of 100 requests per second", Brief: true,
					RetryAt: now.Add(2 * time.Second), Recheck: herald.Duration(2 * time.Second)}}, nil
			}
			return deliveredAttempt(now, p), nil
		}
	}
	for _, tc := range []struct {
		name    string
		version workflow.Version
		timers  []time.Duration
	}{
		{"booked", settleQueuedVersion, []time.Duration{2 * time.Second}},
		{"booked, a run before settleQueuedVersion", 1, []time.Duration{2 * time.Second, settleDelay}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, rec := newDeliveryEnv(t, booked(defaultPolicy()))
			env.OnGetVersion(versionSettleAttempt, workflow.DefaultVersion, settleOwedVersion).Return(tc.version)
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: herald.DeliveryID(herald.DefaultTenant, testEventID)})
			st := runDelivery(t, env)
			if st.State != herald.StateDelivered || len(st.Attempts) != 1 {
				t.Fatalf("final: state %q, %d attempts; want delivered on attempt 1", st.State, len(st.Attempts))
			}
			rec.wantCalls(t, 2, "the booked one and the one at its second")
			if tm := rec.timerDurations(); fmt.Sprint(tm) != fmt.Sprint(tc.timers) {
				t.Errorf("timers %v, want %v", tm, tc.timers)
			}
		})
	}
}

// TestDeliverySettlesWhileAPermitIsOwed: a delivery that waited queued at its endpoint
// settles its last attempt with the 1 ms timer only while a permit may still come
// (settleOwedVersion): woken by its permit, it completes in its attempt's task; admitted
// after its recheck with the permit still to come, it settles. A run on
// settleQueuedVersion settles after any queued wait.
func TestDeliverySettlesWhileAPermitIsOwed(t *testing.T) {
	const recheck = 2 * time.Minute
	held := func(p herald.Settings) func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
		first := true
		return func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			if first {
				first = false
				return herald.Result{Number: in.Number, StartedAt: now, Policy: p, Held: &herald.Hold{
					Queued: true, Reason: "endpoint at its concurrency cap of 1", Recheck: herald.Duration(recheck)}}, nil
			}
			return deliveredAttempt(now, p), nil
		}
	}
	for _, tc := range []struct {
		name    string
		version workflow.Version
		permit  bool
		timers  []time.Duration
	}{
		{"woken by its permit", settleOwedVersion, true, []time.Duration{recheck}},
		{"admitted on its recheck, the permit owed", settleOwedVersion, false, []time.Duration{recheck, settleDelay}},
		{"woken by its permit, a run before settleOwedVersion", settleQueuedVersion, true, []time.Duration{recheck, settleDelay}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, rec := newDeliveryEnv(t, held(defaultPolicy()))
			env.OnGetVersion(versionSettleAttempt, workflow.DefaultVersion, settleOwedVersion).Return(tc.version)
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: herald.DeliveryID(herald.DefaultTenant, testEventID)})
			if tc.permit {
				env.RegisterDelayedCallback(func() {
					env.SignalWorkflow(herald.SignalPermit, policy.Grant{Until: at(time.Hour)})
				}, time.Minute)
			}
			st := runDelivery(t, env)
			if st.State != herald.StateDelivered || len(st.Attempts) != 1 {
				t.Fatalf("final: state %q, %d attempts; want delivered on attempt 1", st.State, len(st.Attempts))
			}
			calls := rec.wantCalls(t, 2, "the held one and the one after its wait")
			// A wait sent after the permit was taken is a new one (a new key); without it,
			// the same.
			if again := calls[1].In.WaitKey == calls[0].In.WaitKey; again == tc.permit || calls[0].In.WaitKey == 0 {
				t.Errorf("wait keys %d then %d: want a new key only after a permit was taken", calls[0].In.WaitKey, calls[1].In.WaitKey)
			}
			if tm := rec.timerDurations(); fmt.Sprint(tm) != fmt.Sprint(tc.timers) {
				t.Errorf("timers %v, want %v", tm, tc.timers)
			}
		})
	}
}
