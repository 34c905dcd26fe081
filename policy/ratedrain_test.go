package policy

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
)

// The rate-queue model: TestRateBudgetModel's gates and limiter, with attempts that take
// time (so that a small cap fills and the endpoint's queue forms), the queue woken the way
// the endpoint workflow wakes it (TickPasses at every message and on a timer; a pass or a
// grant reaches its delivery after a delay), pass-holders waiting at their gate for a share
// (at most RoomWait, then queued again at the front), dones and waits as signals, and the
// limiter continuing as new through JSON. It checks, for a limiter that drains its queue
// through the shares (DrainRates) and for one that grants each queued waiter (the old path):
//
//   - no aligned second has more requests started than the limit, whoever admitted them;
//   - no waiter is lost: a delivery that waits for a wake is queued, holds a pass or a grant
//     the limiter knows of, or has a signal on its way, at every moment; and every delivery
//     is delivered in the end, with the queue empty and no pass out;
//   - with the queue draining through the shares, the gates' shares go to the queue first:
//     no attempt without a pass is admitted while its gate knows of a queue.

// rqEvent is one step of the rate-queue model.
type rqEvent struct {
	at   time.Time
	seq  int
	kind string // "arrive", "attempt", "end", "pass", "renew", "reply", "wait", "done", "wake", "tick", "passretry"
	d    *rqDelivery
	gate int
	g    Grant // a wake's grant, or the one an attempt holds
	req  LeaseRequest
	rep  LeaseReply
	snap Snapshot
	out  *Outcome
	own  bool
	dl   time.Time // a pass-holder's deadline at its gate
}

type rqHeap []*rqEvent

func (q rqHeap) Len() int { return len(q) }
func (q rqHeap) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q rqHeap) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *rqHeap) Push(x any)   { *q = append(*q, x.(*rqEvent)) }
func (q *rqHeap) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// Delivery states of the rate-queue model.
const (
	rqIdle      = iota // between attempts (a booking's timer, a recheck)
	rqRunning          // its attempt is at a gate
	rqWaiting          // waits for a wake from the endpoint
	rqDelivered        // done
)

type rqDelivery struct {
	id    string
	state int
	// toLim counts its signals on their way to the limiter; toIt the wakes on their way to it.
	toLim, toIt int
	wakes       []Grant // wakes received while not waiting
	arrived     time.Time
	admitted    time.Time
	queuedAt    int  // its place in the order it first joined the queue (0: never queued)
	lost        bool // a pass to it was lost on its way (the updates model)
}

type rqGate struct {
	h        LocalLease
	renewing bool
	passed   []string
	learned  time.Time
}

type rateQueueModel struct {
	rng        *rand.Rand
	now        time.Time
	seq        int
	q          rqHeap
	lim        Limiter
	limit, cap int
	drains     bool
	// updates: passes go by update, from the worker (RewakePasses): one now and then is
	// lost with its worker, and a delivery that is not waiting refuses one (Refused).
	updates  bool
	lost     int // passes lost on their way
	lastLost time.Time
	refused  int // passes refused
	gates    []*rqGate
	ds       []*rqDelivery
	byID     map[string]*rqDelivery
	started  map[time.Time]int
	tickAt   time.Time
	queued   int // deliveries that joined the queue
	passes   int // passes admitted at a gate
	requeued int // pass-holders that found no share in time and were queued again
	trace    []string
}

type rqFailure string

func (m *rateQueueModel) fail(format string, args ...any) {
	panic(rqFailure(fmt.Sprintf("at %s: ", m.now.Sub(rateEpoch)) + fmt.Sprintf(format, args...) + "; last events:\n" + strings.Join(m.trace, "\n")))
}

func (m *rateQueueModel) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf("%7dms ", m.now.Sub(rateEpoch).Milliseconds())+fmt.Sprintf(format, args...))
	if len(m.trace) > 60 {
		m.trace = m.trace[1:]
	}
}

func (m *rateQueueModel) at(at time.Time, e *rqEvent) {
	m.seq++
	e.at, e.seq = at, m.seq
	heap.Push(&m.q, e)
}

// delay is a signal's or an update's way: mostly milliseconds, now and then most of a second.
func (m *rateQueueModel) delay() time.Duration {
	if m.rng.Intn(20) == 0 {
		return time.Duration(300+m.rng.Intn(700)) * time.Millisecond
	}
	return time.Duration(1+m.rng.Intn(80)) * time.Millisecond
}

// toLimiter sends a delivery's signal (wait, done) to the endpoint workflow.
func (m *rateQueueModel) toLimiter(d *rqDelivery, kind string, out *Outcome) {
	d.toLim++
	m.at(m.now.Add(m.delay()), &rqEvent{kind: kind, d: d, out: out})
}

// wakeAll hands the limiter's wakes (passes or grants) to their deliveries, as the
// endpoint workflow does after each message, and sets its timer.
func (m *rateQueueModel) wakeAll() {
	for _, g := range m.lim.TickPasses(m.now) {
		d := m.byID[g.Waiter]
		if m.updates && g.Pass && !d.lost && m.rng.Intn(8) == 0 {
			d.lost = true // once: a worker dies now and then, not at every pass
			m.lost++
			m.lastLost = m.now
			m.logf("endpoint wakes %s with a pass, lost on its way", d.id)
			continue
		}
		d.toIt++
		m.logf("endpoint wakes %s (pass %v, window %s)", d.id, g.Pass, g.Window.Sub(rateEpoch))
		m.at(m.now.Add(m.delay()), &rqEvent{kind: "wake", d: d, g: g})
	}
	if next := m.lim.NextDeadline(m.now); !next.IsZero() && (m.tickAt.IsZero() || next.Before(m.tickAt) || !m.tickAt.After(m.now)) {
		m.tickAt = next
		m.at(next.Add(time.Duration(m.rng.Intn(50))*time.Millisecond), &rqEvent{kind: "tick"})
	}
}

// fresh reads the endpoint's snapshot again when the gate's is a second old (gate.fresh).
func (m *rateQueueModel) fresh(gi int) {
	g := m.gates[gi]
	if m.now.Sub(g.learned) >= MaxConfigAge {
		g.h.Heard(m.lim.Snapshot(m.now), false, 0, g.h.Seq)
		g.learned = m.now
	}
}

// renew sends gate gi's renewal, as gate.tell does, unless one is on its way.
func (m *rateQueueModel) renew(gi int) {
	g := m.gates[gi]
	if g.renewing {
		return
	}
	act := g.h.RateAction(g.h.Background(nil, false, false, true), false, m.now)
	if act != Renew && g.h.Permits == 0 && g.h.Demand == 0 && !g.h.Waiting() && g.h.RateWant(false, m.now) == 0 {
		return
	}
	want := g.h.Want(false)
	req := LeaseRequest{Holder: fmt.Sprint("g", gi), InUse: g.h.InUse, Want: want, RateWant: g.h.RateWant(false, m.now),
		Passed: g.passed, Passing: g.h.Passing}
	g.h.Rate.Asking()
	g.h.StartRenewal(want)
	flight := g.h.Flight
	req.Flight = &flight
	if m.updates && len(req.Passed) > 0 && m.rng.Intn(10) == 0 {
		// Its worker dies with the report: the passes stay out until PassTTL, and their
		// deliveries, done or running, refuse them when they go out again.
		m.logf("gate %d's report of %v is lost", gi, req.Passed)
		req.Passed, m.lastLost = nil, m.now
	}
	g.passed, g.h.Passed = nil, 0
	g.renewing = true
	m.at(m.now.Add(m.delay()), &rqEvent{kind: "renew", gate: gi, req: req})
}

// admitted starts d's request at start under window w.
func (m *rateQueueModel) admitted(d *rqDelivery, gi int, w time.Time, own bool, g Grant) {
	start := startAt(w, m.now)
	if !InWindow(w, start) {
		m.fail("%s admitted at %s for the second %s", d.id, start.Sub(rateEpoch), w.Sub(rateEpoch))
	}
	m.started[w]++
	if n := m.started[w]; n > m.limit {
		m.fail("%d requests started in the second at %s, limit %d", n, w.Sub(rateEpoch), m.limit)
	}
	d.admitted = start
	m.logf("%s starts at gate %d in second %s (own %v)", d.id, gi, w.Sub(rateEpoch), own)
	lat := time.Duration(10+m.rng.Intn(300)) * time.Millisecond
	m.at(start.Add(lat), &rqEvent{kind: "end", d: d, gate: gi, own: own, out: &Outcome{At: start, OK: true, Latency: 0, Ticket: g.Ticket}})
}

// attempt is d's attempt at gate gi, with the wake it holds (zero Waiter: none), as
// gate.Gate.Acquire does it.
func (m *rateQueueModel) attempt(d *rqDelivery, gi int, g Grant) {
	m.fresh(gi)
	h := &m.gates[gi].h
	switch {
	case g.Pass:
		if w, ok := h.AdmitPass(m.now, true, false); ok {
			m.passHolderIn(d, gi, w)
			return
		}
		h.Holding++
		h.Passing++
		m.renew(gi) // the renewal says pass-holders wait (acquirePass's kick)
		m.passRetry(d, gi, m.now.Add(RoomWait))
	case g.Waiter != "":
		start := m.now
		if early := g.Window.Sub(start); early > 0 && early <= RateWindow {
			start = g.Window // untilWindow
		}
		if !InWindow(g.Window, start) {
			m.queue(d, "its grant's second is over")
			return
		}
		m.now = start
		m.admitted(d, gi, g.Window, true, g)
	default:
		queuedBefore := h.RateQueued()
		if w, ok := h.AdmitRate(d.id, m.now, true, false); ok {
			if m.drains && queuedBefore {
				m.fail("%s admitted without a pass while gate %d knows of a queue", d.id, gi)
			}
			m.admitted(d, gi, w, false, Grant{Ticket: h.Snapshot.Ticket})
			return
		}
		kind, at := h.HoldRate(d.id, m.now)
		d.state = rqIdle
		switch kind {
		case HoldBooked:
			if m.rng.Intn(5) == 0 {
				gi = m.rng.Intn(len(m.gates)) // its retry runs on another worker
			}
			m.at(at.Add(time.Duration(m.rng.Intn(200))*time.Millisecond), &rqEvent{kind: "attempt", d: d, gate: gi})
		case HoldQueue:
			m.queue(d, "")
		case HoldLater:
			m.at(m.now.Add(5*time.Second), &rqEvent{kind: "attempt", d: d, gate: gi})
		default: // HoldLease: the gate's share of the cap grows; the delivery asks again soon
			m.renew(gi)
			m.at(m.now.Add(time.Second), &rqEvent{kind: "attempt", d: d, gate: gi})
		}
	}
}

// passHolderIn admits a pass-holder at gate gi under window w: its pass is reported used
// with the gate's next renewal, sent now.
func (m *rateQueueModel) passHolderIn(d *rqDelivery, gi int, w time.Time) {
	g := m.gates[gi]
	g.passed = append(g.passed, d.id)
	g.h.Passed++
	m.passes++
	m.admitted(d, gi, w, false, Grant{Ticket: g.h.Snapshot.Ticket})
	m.renew(gi)
}

// passRetry schedules the next look of a pass-holder waiting at gate gi: when a share of a
// coming second begins, after a renewal's answer could have come, or at its deadline.
func (m *rateQueueModel) passRetry(d *rqDelivery, gi int, deadline time.Time) {
	next := m.now.Add(50 * time.Millisecond)
	if s := m.gates[gi].h.NextRateShare(m.now); !s.IsZero() && s.Before(next) {
		next = s
	}
	if deadline.Before(next) {
		next = deadline
	}
	m.at(next, &rqEvent{kind: "passretry", d: d, gate: gi, dl: deadline})
}

// queue sends d to the endpoint's queue (gate.wait).
func (m *rateQueueModel) queue(d *rqDelivery, why string) {
	if why != "" {
		m.logf("%s: %s, waits again", d.id, why)
	}
	if d.queuedAt == 0 {
		m.queued++
		d.queuedAt = m.queued
	}
	d.state = rqWaiting
	m.toLimiter(d, "wait", nil)
}

func (m *rateQueueModel) step() bool {
	if len(m.q) == 0 {
		return false
	}
	e := heap.Pop(&m.q).(*rqEvent)
	m.now = e.at
	d := e.d
	switch e.kind {
	case "arrive":
		d.state = rqRunning
		m.attempt(d, e.gate, Grant{})
	case "attempt":
		if d.state == rqIdle {
			d.state = rqRunning
			m.attempt(d, e.gate, Grant{})
		}
	case "passretry":
		h := &m.gates[e.gate].h
		if w, ok := h.AdmitPass(m.now, true, false); ok {
			h.Holding--
			h.Passing--
			m.passHolderIn(d, e.gate, w)
			return true
		}
		if m.now.Before(e.dl) {
			m.renew(e.gate)
			m.passRetry(d, e.gate, e.dl)
			return true
		}
		h.Holding--
		h.Passing--
		m.requeued++
		m.queue(d, "no share within RoomWait")
	case "end":
		if e.own {
			m.toLimiter(d, "done", e.out)
		} else {
			m.gates[e.gate].h.Finish(true, false)
		}
		d.state = rqDelivered
	case "wake":
		d.toIt--
		if d.state != rqWaiting && m.updates && e.g.Pass {
			m.refused++
			m.logf("%s refuses a pass (state %d)", d.id, d.state)
			m.at(m.now.Add(m.delay()), &rqEvent{kind: "refused", d: d, g: e.g})
			return true
		}
		if d.state != rqWaiting {
			d.wakes = append(d.wakes, e.g)
			m.logf("%s: wake while in state %d", d.id, d.state)
			return true
		}
		d.state = rqRunning
		m.attempt(d, m.rng.Intn(len(m.gates)), e.g)
	case "wait":
		d.toLim--
		if g, ok := m.lim.Wait(m.now, d.id); ok {
			d.toIt++
			m.at(m.now.Add(m.delay()), &rqEvent{kind: "wake", d: d, g: g})
		}
		m.wakeAll()
	case "done":
		d.toLim--
		m.lim.Done(m.now, d.id, e.out)
		m.wakeAll()
	case "refused":
		m.lim.Refused(d.id, e.g.Until)
		m.wakeAll()
	case "tick":
		m.wakeAll()
	case "pass":
		m.at(m.now.Add(time.Second), &rqEvent{kind: "pass", gate: e.gate})
		m.renew(e.gate)
	case "renew":
		if m.rng.Intn(10) == 0 { // continue as new
			b, err := json.Marshal(m.lim)
			if err != nil {
				m.fail("encode: %v", err)
			}
			m.lim = Limiter{}
			if err := json.Unmarshal(b, &m.lim); err != nil {
				m.fail("decode: %v", err)
			}
		}
		rep := m.lim.Lease(m.now, e.req)
		for _, s := range rep.Rate {
			if n := m.lim.RateBudget.Lent(s.Window); n > m.limit {
				m.fail("window %s lent %d, limit %d", s.Window.Sub(rateEpoch), n, m.limit)
			}
		}
		m.at(m.now.Add(m.delay()), &rqEvent{kind: "reply", gate: e.gate, rep: rep, snap: m.lim.Snapshot(m.now), req: e.req})
		m.wakeAll()
	case "reply":
		g := m.gates[e.gate]
		g.renewing = false
		g.h.Heard(e.snap, true, e.rep.Permits, g.h.Seq)
		g.h.Rate.Heard(e.rep.Rate, e.rep.RateExpect, m.now)
		g.learned = m.now
		if g.h.Passed > 0 || g.h.Passing > e.req.Passing {
			m.renew(e.gate) // gate.tell's again
		}
	}
	return true
}

// check looks for a lost waiter.
func (m *rateQueueModel) check() {
	for _, d := range m.ds {
		if d.state != rqWaiting || d.toLim > 0 || d.toIt > 0 {
			continue
		}
		if !m.lim.Ledger.Queued(d.id) && m.lim.single(d.id) < 0 &&
			!slices.ContainsFunc(m.lim.Passes, func(p Grant) bool { return p.Waiter == d.id }) {
			m.fail("%s waits for a wake, but the endpoint neither queues it nor has a pass or grant out for it", d.id)
		}
	}
}

// runRateQueueModel runs one seed; drains says whether the limiter drains its queue through
// the shares. It returns how long the deliveries took over deliveries/limit seconds (for a
// cap that never binds; 0 otherwise).
func runRateQueueModel(seed int64, drains, updates bool) (m *rateQueueModel, took float64, err error) {
	rng := rand.New(rand.NewSource(seed))
	limit := 1 + rng.Intn(30)
	c := limiterTestConfig()
	c.RateLimit = limit
	c.MaxQueue = 10000
	c.Capacity.MaxInFlight = []int{2, 5, 500}[rng.Intn(3)]
	c.Breaker.ConsecutiveFailures = 1000
	c.Breaker.VolumeFailures = 100000
	m = &rateQueueModel{rng: rng, now: rateEpoch, lim: NewLimiter(c), limit: limit, cap: c.Capacity.MaxInFlight, drains: drains,
		updates: updates, byID: map[string]*rqDelivery{}, started: map[time.Time]int{}}
	m.lim.RewakePasses = updates
	m.lim.LeaseRates()
	if drains {
		m.lim.DrainRates()
	}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(rqFailure)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("seed %d (limit %d, cap %d, %d gates, drains %v, updates %v): %s", seed, m.limit, m.cap, len(m.gates), drains, updates, string(f))
		}
	}()
	gates := 1 + rng.Intn(3)
	for i := range gates {
		m.gates = append(m.gates, &rqGate{})
		m.gates[i].h.Heard(m.lim.Snapshot(rateEpoch), false, 0, 0)
		m.gates[i].learned = rateEpoch
		m.at(rateEpoch.Add(time.Duration(rng.Intn(1000))*time.Millisecond), &rqEvent{kind: "pass", gate: i})
	}
	n := limit * (3 + rng.Intn(8))
	// Some seeds start with the queue formed (as if the cap had been full): every delivery
	// is queued at once.
	allQueued := rng.Intn(3) == 0
	for i := range n {
		d := &rqDelivery{id: fmt.Sprintf("d%03d", i)}
		m.ds = append(m.ds, d)
		m.byID[d.id] = d
		at := rateEpoch.Add(time.Duration(rng.Intn(3000)) * time.Millisecond)
		if rng.Intn(2) == 0 {
			at = rateEpoch.Add(200 * time.Millisecond)
		}
		d.arrived = at
		if allQueued {
			d.arrived = rateEpoch
			m.now = rateEpoch
			m.queue(d, "")
			continue
		}
		m.at(at, &rqEvent{kind: "arrive", d: d, gate: rng.Intn(gates)})
	}
	m.now = rateEpoch
	end := rateEpoch.Add(time.Duration(n)*400*time.Millisecond + time.Minute)
	delivered := 0
	for delivered < n && m.step() {
		m.check()
		// A lost pass goes out again PassTTL after it was handed out: the run may take that
		// much longer.
		if m.now.After(end) && m.now.After(m.lastLost.Add(PassTTL+5*time.Second)) {
			break
		}
		delivered = 0
		for _, d := range m.ds {
			if d.state == rqDelivered {
				delivered++
			}
		}
	}
	if delivered < n {
		var left []string
		for _, d := range m.ds {
			if d.state != rqDelivered && len(left) < 5 {
				left = append(left, fmt.Sprintf("%s state %d toLim %d toIt %d queued %v", d.id, d.state, d.toLim, d.toIt, m.lim.Ledger.Queued(d.id)))
			}
		}
		m.fail("%d of %d delivered by %s; queue %d, passes %d: %v", delivered, n, m.now.Sub(rateEpoch), len(m.lim.Ledger.Waiting), len(m.lim.Passes), left)
	}
	// What is on its way settles: dones reach the limiter, passes used are reported.
	for range 10000 {
		if !m.step() || m.now.After(end.Add(time.Minute)) && m.now.After(m.lastLost.Add(PassTTL+time.Minute)) {
			break
		}
	}
	if len(m.lim.Ledger.Waiting) > 0 || len(m.lim.Passes) > 0 || len(m.lim.Grants) > 0 {
		m.fail("all delivered, yet queue %v, passes %v, grants %v", m.lim.Ledger.Waiting, m.lim.Passes, m.lim.Grants)
	}
	last := rateEpoch
	for _, d := range m.ds {
		if d.admitted.After(last) {
			last = d.admitted
		}
	}
	if m.cap == 500 {
		took = (last.Sub(rateEpoch).Seconds() + 1) / (float64(n) / float64(limit))
	}
	return m, took, nil
}

// TestRateQueueModel runs the rate-queue model over many seeds, draining the queue through
// the shares, with passes signalled and with passes sent by update (some lost, some
// refused: RewakePasses), and, as before DrainRates, granting each queued waiter.
func TestRateQueueModel(t *testing.T) {
	seeds := int64(200)
	if testing.Short() {
		seeds = 50
	}
	for _, mode := range []struct{ drains, updates bool }{{true, false}, {true, true}, {false, false}} {
		drains := mode.drains
		var failures []string
		sum, runs, passes, requeued, queued, uncappedRequeued, lost, refused := 0.0, 0, 0, 0, 0, 0, 0, 0
		for seed := range seeds {
			m, took, err := runRateQueueModel(seed, drains, mode.updates)
			if err != nil {
				failures = append(failures, err.Error())
				continue
			}
			if took > 0 {
				sum += took
				runs++
				uncappedRequeued += m.requeued
			}
			passes += m.passes
			requeued += m.requeued
			queued += m.queued
			lost += m.lost
			refused += m.refused
		}
		if len(failures) > 0 {
			slices.SortFunc(failures, func(a, b string) int { return len(a) - len(b) })
			t.Fatalf("drains %v, updates %v: %d of %d seeds fail; the shortest:\n%s", drains, mode.updates, len(failures), seeds, failures[0])
		}
		if queued == 0 {
			t.Fatalf("drains %v: no delivery was ever queued: the model does not test the queue", drains)
		}
		if drains && passes == 0 {
			t.Fatal("the queue drained with no pass admitted on a share")
		}
		if !drains && passes != 0 {
			t.Fatalf("%d passes at a limiter that grants each waiter", passes)
		}
		if mode.updates && (lost == 0 || refused == 0) {
			t.Fatalf("%d passes lost, %d refused: the model does not test handing passes out again", lost, refused)
		}
		t.Logf("drains %v, updates %v: %d deliveries queued, %d passes admitted on shares, %d queued again (%d with a cap that never binds), %d passes lost and %d refused; uncapped runs took %.2f× deliveries/limit seconds on average",
			drains, mode.updates, queued, passes, requeued, uncappedRequeued, lost, refused, sum/float64(max(runs, 1)))
	}
}

// TestDrainRatesPassesAndLends: a limiter that drains rates wakes its queue with passes, at
// most RatePassWindow at once, and lends the holders shares while waiters are queued; one
// that does not (the old path) lends nothing new and grants each waiter from its own
// budget.
func TestDrainRatesPassesAndLends(t *testing.T) {
	c := limiterTestConfig()
	c.Capacity.MaxInFlight = 500
	c.MaxQueue = 1000
	c.RateLimit = 10
	for _, drains := range []bool{false, true} {
		g := NewLimiter(c)
		g.LeaseRates()
		if drains {
			g.DrainRates()
		}
		now := rateEpoch.Add(ms(700)) // past RateAhead: the queue's own grants wait for the next second
		for i := range 40 {
			g.Ledger.Enqueue(fmt.Sprintf("w%02d", i))
		}
		r := g.Lease(now, LeaseRequest{Holder: "a", RateWant: 10, Passing: 1})
		wakes := g.TickPasses(now)
		if !drains {
			if len(r.Rate) != 0 || len(wakes) != 0 || g.Snapshot(now).RatePasses {
				t.Fatalf("old path: shares %v, wakes %v while queued", r.Rate, waiters(wakes))
			}
			if got := g.TickPasses(rateEpoch.Add(time.Second + ms(10))); len(got) != 10 || got[0].Pass || got[0].Window.IsZero() {
				t.Fatalf("old path, next second: %d grants (%+v), want 10 of the queue's own", len(got), got)
			}
			continue
		}
		if shareOf(r.Rate, rateEpoch.Add(time.Second)) != 10 {
			t.Fatalf("while queued: shares %v, want the next seconds' 10", r.Rate)
		}
		if !g.Snapshot(now).RatePasses || !g.Drainable() {
			t.Fatal("the snapshot does not say the queue drains through the shares")
		}
		if w := waiters(wakes); !slices.Equal(w, names(0, RatePassWindow(10))) || !wakes[0].Pass {
			t.Fatalf("passes %v, want the first %d in order", w, RatePassWindow(10))
		}
		// The queue's own budget is not used: every request of a second goes to a holder's
		// share, and the total stays within the limit.
		for s := range 3 {
			if n := g.RateBudget.Lent(rateEpoch.Add(time.Duration(s+1) * time.Second)); n > 10 {
				t.Fatalf("second %d lent %d, limit 10", s+1, n)
			}
		}
		if !g.NextDeadline(now).IsZero() && g.NextDeadline(now).Before(now.Add(PassTTL)) {
			t.Errorf("NextDeadline %s: no timer per second for a queue drained by passes", g.NextDeadline(now).Sub(rateEpoch))
		}
		// Used passes make room for the next, in order.
		g.Lease(now, LeaseRequest{Holder: "a", RateWant: 10, Passed: names(0, 5)})
		if w := waiters(g.TickPasses(now)); !slices.Equal(w, names(15, 20)) {
			t.Fatalf("after 5 passed: %v, want %v", w, names(15, 20))
		}
	}
}

// TestRateQueuedSharesGoToTheQueue: at an endpoint that drains its queue through the
// shares, a gate admits no attempt without a pass on its share while some are queued (the
// attempt queues behind them) or while its own pass-holders wait (the attempt is booked);
// a pass-holder takes the share. A pass-holder with no share now waits for the next second
// it holds one of.
func TestRateQueuedSharesGoToTheQueue(t *testing.T) {
	now := rateEpoch.Add(ms(50))
	h := LocalLease{Known: true, Permits: 10, Snapshot: Snapshot{Circuit: CircuitClosed, Cap: 100, Free: 90, RateLimit: 5, RateLeased: true,
		RatePasses: true, Queue: 3}}
	h.Rate.Heard([]RateShare{{rateEpoch, 1}, {rateEpoch.Add(time.Second), 2}}, 2, now)
	if _, ok := h.AdmitRate("new", now, true, false); ok {
		t.Fatal("an attempt without a pass took a share while others are queued")
	}
	if kind, _ := h.HoldRate("new", now); kind != HoldQueue {
		t.Fatalf("HoldRate = %v, want HoldQueue (behind the queue)", kind)
	}
	w, ok := h.AdmitPass(now, true, false)
	if !ok || !w.Equal(rateEpoch) {
		t.Fatalf("the pass-holder was not admitted on the share: %v %s", ok, w)
	}
	if _, ok := h.AdmitPass(now, true, false); ok {
		t.Fatal("a second pass-holder admitted past the share")
	}
	if next := h.NextRateShare(now); !next.Equal(rateEpoch.Add(time.Second)) {
		t.Fatalf("NextRateShare = %s, want the next second", next)
	}
	// The queue is empty, but a pass-holder waits here: the next second's share is its.
	h.Snapshot.Queue, h.Passing = 0, 1
	later := rateEpoch.Add(time.Second + ms(10))
	if _, ok := h.AdmitRate("new", later, true, false); ok {
		t.Fatal("an attempt without a pass took the share a pass-holder waits for")
	}
	if kind, _ := h.HoldRate("new", later); kind != HoldBooked {
		t.Fatalf("HoldRate = %v, want HoldBooked", kind)
	}
	if want := h.RateWant(false, later); want < 2 {
		t.Errorf("RateWant %d, want the booked attempt and the pass-holder", want)
	}
	// Nobody waits: the share is anyone's again, and on the old path it always was.
	h.Passing = 0
	if _, ok := h.AdmitRate("new", later, true, false); !ok {
		t.Fatal("nobody queued, yet the share was refused")
	}
	h.Snapshot.Queue, h.Snapshot.RatePasses = 3, false
	if _, ok := h.AdmitRate("old", later, true, false); !ok {
		t.Fatal("old path: a share held was refused while others are queued")
	}
}
