package policy

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

// The gates-and-limiter model: several workers' gates (LocalLease, driven the way
// gate.Gate drives it) and one endpoint's Limiter (driven the way the endpoint
// workflow drives it), talking through messages that take time to arrive, some longer
// than a gate waits for an answer, some overtaking others. It checks the promise the two
// make together: the attempts running at any moment never exceed the endpoint's cap, plus
// each gate's spare permits (SparePermits; none under a cap of 4).

const (
	gmTimeout = 10 * time.Second // the endpoint's attempt timeout
	gmMargin  = 10 * time.Second // gate.leaseMargin
	gmTell    = 10 * time.Second // gate.tellTimeout: a gate gives up on an answer after it
	gmEvery   = time.Second      // the gate's renewal interval
)

type gmAttempt struct {
	end    time.Time
	ok     bool
	lat    time.Duration
	tk     Ticket
	waiter string // set for an attempt on a permit of its own
}

type gmRenewal struct {
	sent      time.Time
	req       LeaseRequest
	seq       int
	abandoned bool // the gate gave up waiting; a late answer is ignored
}

type gmGate struct {
	id       string
	h        LocalLease
	until    time.Time
	learned  time.Time
	running  []gmAttempt
	outcomes []Outcome
	renewal  *gmRenewal
	nextPass time.Time
}

// gmMsg is a message in flight: to the endpoint workflow (lease, wait, done, report) or
// back to a gate or a delivery (reply, grant).
type gmMsg struct {
	at     time.Time
	kind   string
	gate   *gmGate
	ren    *gmRenewal
	waiter string
	out    *Outcome
	outs   []Outcome
	grant  Grant
	snap   Snapshot
	n      int
}

type gateModel struct {
	rng *rand.Rand
	lim Limiter
	// sendFlight: the gates send their Flight with each renewal, as the workers' gates do.
	sendFlight bool
	limNow     time.Time
	now        time.Time
	gates      []*gmGate
	toLim      []gmMsg
	toGates    []gmMsg
	used       map[string]bool // waiters whose permit ran an attempt
	nextW      int
	pFail      float64
	late       float64 // chance that a message takes longer than a gate waits for it
	peak       int
	bound      int
	tracing    bool
	trace      []string
}

func (m *gateModel) logf(format string, args ...any) {
	if !m.tracing {
		return
	}
	m.trace = append(m.trace, fmt.Sprintf("%6dms ", m.now.Sub(limiterEpoch).Milliseconds())+fmt.Sprintf(format, args...))
	if len(m.trace) > 60 {
		m.trace = m.trace[1:]
	}
}

func (m *gateModel) delay() time.Duration {
	if m.rng.Float64() < m.late {
		return gmTell + time.Duration(m.rng.Intn(5000))*time.Millisecond
	}
	return time.Duration(1+m.rng.Intn(1500)) * time.Millisecond
}

func (m *gateModel) send(to *[]gmMsg, msg gmMsg) {
	i, _ := slices.BinarySearchFunc(*to, msg.at, func(a gmMsg, t time.Time) int {
		if a.at.After(t) {
			return 1
		}
		return -1 // equal times keep their sending order
	})
	*to = slices.Insert(*to, i, msg)
}

// limiterAt runs the endpoint workflow's clock forward to at (never backward) and ticks,
// handing each grant to its delivery.
func (m *gateModel) limiterAt(at time.Time) {
	if at.After(m.limNow) {
		m.limNow = at
	}
	for _, g := range m.lim.Tick(m.limNow) {
		m.logf("limiter@%d: tick grants %s", m.limNow.Sub(limiterEpoch).Milliseconds(), g.Waiter)
		m.send(&m.toGates, gmMsg{at: m.limNow.Add(m.delay()), kind: "grant", waiter: g.Waiter, grant: g})
	}
}

// deliverToLimiter processes the messages that reached the endpoint workflow by now.
func (m *gateModel) deliverToLimiter() {
	for len(m.toLim) > 0 && !m.toLim[0].at.After(m.now) {
		msg := m.toLim[0]
		m.toLim = m.toLim[1:]
		m.limiterAt(msg.at)
		now := m.limNow
		switch msg.kind {
		case "lease":
			rep := m.lim.Lease(now, msg.ren.req)
			m.logf("limiter@%d: lease %s inuse %d want %d -> %d (ledger %v)", now.Sub(limiterEpoch).Milliseconds(), msg.gate.id, msg.ren.req.InUse, msg.ren.req.Want, rep.Permits, m.lim.Ledger.Held)
			m.send(&m.toGates, gmMsg{at: now.Add(m.delay()), kind: "reply", gate: msg.gate, ren: msg.ren,
				n: rep.Permits, snap: m.lim.Snapshot(now)})
		case "wait":
			g, ok := m.lim.Wait(now, msg.waiter)
			m.logf("limiter@%d: wait %s -> %v (ledger %v)", now.Sub(limiterEpoch).Milliseconds(), msg.waiter, ok, m.lim.Ledger.Held)
			if ok {
				m.send(&m.toGates, gmMsg{at: now.Add(m.delay()), kind: "grant", waiter: msg.waiter, grant: g})
			}
		case "done":
			m.lim.Done(now, msg.waiter, msg.out)
			m.logf("limiter@%d: done %s (ledger %v)", now.Sub(limiterEpoch).Milliseconds(), msg.waiter, m.lim.Ledger.Held)
		case "report":
			m.lim.Record(now, msg.outs)
		}
		m.limiterAt(now)
	}
}

// deliverToGates processes the answers that reached the gates and deliveries by now.
func (m *gateModel) deliverToGates() {
	for len(m.toGates) > 0 && !m.toGates[0].at.After(m.now) {
		msg := m.toGates[0]
		m.toGates = m.toGates[1:]
		switch msg.kind {
		case "reply":
			g := msg.gate
			if msg.ren.abandoned {
				continue
			}
			g.h.Heard(msg.snap, true, msg.n, msg.ren.seq)
			m.logf("%s: reply %d permits (inuse %d)", g.id, msg.n, g.h.InUse)
			g.learned = msg.ren.sent
			g.until = msg.ren.sent.Add(msg.ren.req.TTL.Std() - gmTimeout - gmMargin/2)
			g.renewal = nil
		case "grant":
			if msg.grant.Disabled || m.used[msg.waiter] {
				continue
			}
			// The delivery runs its attempt on the permit if it outlasts the attempt timeout,
			// or else asks again (gate.Gate.Acquire with a permit).
			if msg.grant.Until.Sub(msg.at) > gmTimeout {
				m.used[msg.waiter] = true
				m.logf("grant %s runs", msg.waiter)
				g := m.gates[m.rng.Intn(len(m.gates))]
				g.running = append(g.running, m.attempt(msg.at, msg.grant.Ticket, msg.waiter))
			} else {
				m.send(&m.toLim, gmMsg{at: msg.at.Add(m.delay()), kind: "wait", waiter: msg.waiter})
			}
		}
	}
}

func (m *gateModel) attempt(start time.Time, tk Ticket, waiter string) gmAttempt {
	var lat time.Duration
	switch r := m.rng.Intn(10); {
	case r < 7:
		lat = time.Duration(5+m.rng.Intn(300)) * time.Millisecond
	case r < 9:
		lat = time.Duration(300+m.rng.Intn(3000)) * time.Millisecond
	default:
		lat = time.Duration(m.rng.Int63n(int64(gmTimeout))) // up to the timeout
	}
	return gmAttempt{end: start.Add(lat), ok: m.rng.Float64() >= m.pFail, lat: lat, tk: tk, waiter: waiter}
}

// settle finishes the attempts that ended by now, as Gate.Finish does.
func (m *gateModel) settle(g *gmGate) {
	kept := g.running[:0:0]
	for _, a := range g.running {
		if a.end.After(m.now) {
			kept = append(kept, a)
			continue
		}
		o := Outcome{At: a.end, OK: a.ok, Latency: duration.Duration(a.lat), Ticket: a.tk}
		own := a.waiter != ""
		if _, _, trip := g.h.Finish(a.ok, own); trip || g.h.SettleNow() {
			m.tell(g, true)
		}
		if own {
			m.send(&m.toLim, gmMsg{at: a.end.Add(m.delay()), kind: "done", waiter: a.waiter, out: &o})
		} else {
			g.outcomes = append(g.outcomes, o)
		}
	}
	g.running = kept
}

// tell starts a renewal (or, without a lease, a report), as Gate.kick and Gate.tell do.
func (m *gateModel) tell(g *gmGate, kick bool) {
	if g.renewal != nil {
		return
	}
	renew := g.h.Permits > 0 || g.h.Demand > 0 || g.h.Growing() || g.h.Settling()
	if !kick {
		switch g.h.Background(g.outcomes, g.until.Sub(m.now) < 2*gmEvery, false, false) {
		case Renew:
			renew = true
		case Report:
			renew = false
		case Drop:
			if len(g.running) == 0 {
				g.h, g.until, g.learned = LocalLease{}, time.Time{}, time.Time{}
			}
			return
		default:
			return
		}
	}
	if !renew {
		if len(g.outcomes) > 0 {
			m.send(&m.toLim, gmMsg{at: m.now.Add(m.delay()), kind: "report", outs: g.outcomes})
			g.outcomes = nil
			g.h.Told = g.h.Seq
			g.learned = time.Time{}
		}
		return
	}
	want := g.h.Want(false)
	r := &gmRenewal{sent: m.now, req: LeaseRequest{Holder: g.id, InUse: g.h.InUse, Want: want, Outcomes: g.outcomes,
		TTL: duration.Duration(gmTimeout + gmMargin)}}
	g.outcomes = nil
	r.seq = g.h.StartRenewal(want)
	if m.sendFlight {
		flight := g.h.Flight
		r.req.Flight = &flight
	}
	m.logf("%s: renew inuse %d want %d", g.id, r.req.InUse, want)
	g.renewal = r
	m.send(&m.toLim, gmMsg{at: m.now.Add(m.delay()), kind: "lease", gate: g, ren: r})
}

// arrive is one delivery's attempt at gate g: admitted on the lease or spare permits, or
// turned away as Gate.Acquire does.
func (m *gateModel) arrive(g *gmGate) {
	if !g.h.Known || m.now.Sub(g.learned) >= gmEvery {
		// Gate.fresh: the endpoint as its workflow's memo shows it now.
		g.h.Heard(m.lim.Snapshot(m.limNow).Coarse(), false, 0, g.h.Told)
		g.learned = m.now
	}
	if g.h.Admit(m.now.Before(g.until), false) {
		m.logf("%s: admit (inuse %d permits %d spare %d renewing %v flight %d)", g.id, g.h.InUse, g.h.Permits, g.h.Spare, g.h.Renewing, g.h.Flight)
		g.running = append(g.running, m.attempt(m.now, g.h.Snapshot.Ticket, ""))
		if g.h.Growing() {
			m.tell(g, true)
		}
		return
	}
	switch g.h.Hold() {
	case HoldLease:
		m.tell(g, true)
	case HoldQueue:
		m.nextW++
		w := fmt.Sprintf("w%d", m.nextW)
		m.send(&m.toLim, gmMsg{at: m.now.Add(m.delay()), kind: "wait", waiter: w})
	}
}

// step moves time on by up to 120 ms and returns how many attempts run then.
func (m *gateModel) step() int {
	m.now = m.now.Add(time.Duration(1+m.rng.Intn(120)) * time.Millisecond)
	m.deliverToLimiter()
	if d := m.lim.NextDeadline(m.limNow); !d.IsZero() && !d.After(m.now) {
		m.limiterAt(m.now) // the endpoint workflow's timer
	}
	m.deliverToGates()
	for _, g := range m.gates {
		m.settle(g)
		if r := g.renewal; r != nil && !m.now.Before(r.sent.Add(gmTell)) {
			// No answer in time: the outcomes are kept for the next try (Gate.tell).
			r.abandoned = true
			g.renewal = nil
			g.outcomes = append(r.req.Outcomes, g.outcomes...)
			g.h.RenewFailed()
			m.logf("%s: renewal abandoned", g.id)
		}
		if !m.now.Before(g.nextPass) {
			g.nextPass = m.now.Add(gmEvery)
			m.tell(g, false)
		}
	}
	for range m.rng.Intn(4) {
		m.arrive(m.gates[m.rng.Intn(len(m.gates))])
	}
	running := 0
	for _, g := range m.gates {
		running += len(g.running)
	}
	m.peak = max(m.peak, running)
	return running
}

func TestGatesAndLimiterKeepTheCap(t *testing.T) {
	runs := runs(300)
	peaks := 0
	for run := range runs {
		m, err := runGateModel(int64(20261201+run), true, false)
		if err != nil {
			// Again, with the trace of what led to it.
			_, err = runGateModel(int64(20261201+run), true, true)
			t.Fatalf("run %d: %v", run, err)
		}
		if m.peak >= m.lim.Config.Capacity.MaxInFlight {
			peaks++
		}
	}
	// The model must reach the cap, or it proves nothing about keeping to it.
	if peaks < runs/2 {
		t.Fatalf("only %d of %d runs reached their cap", peaks, runs)
	}
	t.Logf("%d of %d runs reached their cap and none passed it", peaks, runs)
}

// TestGatesAndLimiterWithoutFlight: gates that send no Flight with their renewals reserve
// nothing, so a cut lease frees the permits its holder still uses, and the model sees the
// cap passed: the model is strong enough to find what Flight is for.
func TestGatesAndLimiterWithoutFlight(t *testing.T) {
	for run := range 300 {
		if _, err := runGateModel(int64(20261201+run), false, false); err != nil {
			return
		}
	}
	t.Fatal("300 runs without Flight kept the cap: the model no longer finds what Flight is for")
}

// runGateModel runs one seeded model: a random cap, 1 to 4 workers, message delays, a
// failure rate. It returns the first time the attempts running passed the bound.
func runGateModel(seed int64, sendFlight, trace bool) (*gateModel, error) {
	rng := rand.New(rand.NewSource(seed))
	c := DefaultLimiterConfig()
	c.Capacity.MaxInFlight = 1 + rng.Intn(12)
	c.Capacity.MinSamples = 5
	c.Capacity.MinChangeInterval = duration.Duration(5 * time.Second)
	c.Breaker.ConsecutiveFailures = 3 + rng.Intn(5)
	c.Breaker.ProbeDelay = duration.Duration(2 * time.Second)
	c.Breaker.MaxProbeDelay = duration.Duration(8 * time.Second)
	c.LeaseTTL = duration.Duration(gmTimeout + gmMargin + time.Duration(rng.Intn(30))*time.Second)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	workers := 1 + rng.Intn(4)
	lim := NewLimiter(c)
	m := &gateModel{rng: rng, lim: lim, sendFlight: sendFlight, limNow: limiterEpoch, now: limiterEpoch, used: map[string]bool{}, tracing: trace,
		pFail: []float64{0, 0, 0.05, 0.5}[rng.Intn(4)], late: []float64{0, 0, 0.02, 0.2}[rng.Intn(4)],
		bound: c.Capacity.MaxInFlight + workers*SparePermits(c.Capacity.MaxInFlight)}
	for i := range workers {
		m.gates = append(m.gates, &gmGate{id: fmt.Sprintf("worker-%d", i+1)})
	}
	for step := range 3000 {
		if running := m.step(); running > m.bound {
			return m, fmt.Errorf("cap %d, %d workers, late %.2f: step %d at %s: %d attempts running, the cap allows %d; last events:\n%s",
				c.Capacity.MaxInFlight, workers, m.late, step, m.now.Sub(limiterEpoch), running, m.bound, strings.Join(m.trace, "\n"))
		}
	}
	return m, nil
}

// TestLimiterKeepFlight: a renewal that cuts a lease (others queue) keeps the permits the
// holder could still be using counted until its next renewal; the waiters get them then.
// A renewal without a Flight keeps nothing beyond what runs.
func TestLimiterKeepFlight(t *testing.T) {
	for _, keep := range []bool{false, true} {
		g := NewLimiter(limiterTestConfig()) // cap 4
		var flight *int
		if keep {
			flight = ptr(4)
		}
		now := limiterEpoch
		if r := g.Lease(now, LeaseRequest{Holder: "a", Want: 4}); r.Permits != 4 {
			t.Fatalf("first lease: %d permits, want the cap of 4", r.Permits)
		}
		if _, ok := g.Wait(now, "w1"); ok {
			t.Fatal("w1 granted while a holds the whole cap")
		}
		// a asked while running 1; by the time it arrives a may run its 4 again.
		now = now.Add(time.Second)
		r := g.Lease(now, LeaseRequest{Holder: "a", InUse: 1, Want: 8, Flight: flight})
		if r.Permits != 1 {
			t.Fatalf("renewal with others queued: %d permits, want the 1 running", r.Permits)
		}
		wakes := g.Tick(now)
		if keep && (len(wakes) != 0 || g.Ledger.InUse(now) != 4) {
			t.Fatalf("Flight 4: woke %v with a's 4 in flight counted %d; want nobody woken, 4 counted", wakes, g.Ledger.InUse(now))
		}
		if !keep && len(wakes) != 1 {
			t.Fatalf("without Flight: woke %v, want w1 (nothing reserved)", wakes)
		}
		if !keep {
			continue
		}
		// The next renewal says what runs and what a may admit: the rest go to the queue.
		now = now.Add(time.Second)
		if r := g.Lease(now, LeaseRequest{Holder: "a", InUse: 1, Want: 2, Flight: ptr(1)}); r.Permits != 1 {
			t.Fatalf("next renewal: %d permits, want 1", r.Permits)
		}
		if wakes := g.Tick(now); len(wakes) != 1 || wakes[0].Waiter != "w1" {
			t.Fatalf("after the next renewal woke %v, want w1", wakes)
		}
		// An expired lease takes its reservation with it.
		later := now.Add(time.Hour)
		if n := g.Ledger.InUse(later); n != 0 {
			t.Fatalf("an hour on, %d permits counted, want none", n)
		}
	}
}

func ptr(n int) *int { return &n }
