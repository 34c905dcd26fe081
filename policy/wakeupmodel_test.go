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

// The wake-up model: deliveries waiting for grants at a rate-limited endpoint, the gate's
// checks of each grant (gate.Gate.Acquire and Late) and one endpoint's Limiter driven the
// way the endpoint workflow drives it (a workflow task takes every signal that arrived,
// dones before waits, then ticks; its timer may fire late; a wake to a delivery that is
// gone returns the permit; the run continues as new, its state round-tripped through
// JSON, with every signal taken first, as the run does since versionDrainBeforeContinue).
// Signals take random times to arrive, some long enough that a grant reaches its delivery
// after its second, and is handed back; a delivery's signals arrive in the order sent,
// but for a done whose send timed out at the gate and still arrived (seconds late, after
// the delivery asked again). Deliveries vanish while waiting, gate holders renew their
// (empty) leases. It checks what the two promise together:
//
//   - no waiter is forgotten: a delivery that believes it waits for a permit is in the
//     endpoint's queue, or a permit or its own request is on the way, at every moment;
//     and none ever waits for its long recheck (MaxQueuedWait);
//   - a delivery its gate turned away from a full queue (it waits on its own recheck) is
//     nudged back once the queue is half empty (Limiter.NoteFull, NudgeDue, Nudged, with
//     the nudge's listing behind by a visibility lag, and nudges left behind by a
//     continue-as-new): none waits for room longer than wmRoomBound while the queue has it;
//   - every event is delivered, and no permit is left out once all is quiet;
//   - never more requests start in an aligned second than the rate limit, never more run
//     at once than the cap.

const (
	wmTimeout = 5 * time.Second // the endpoint's attempt timeout
	wmRetry   = time.Second     // the ladder's delay after a failed attempt
)

// wmEvent is something that happens at a time: a signal arriving, a workflow task, a
// request ending.
type wmEvent struct {
	at   time.Time
	seq  int
	kind string // "task", "timer" (the endpoint's), "signal" (to the endpoint), "permit" (to a delivery), "attempt", "end", "retry", "vanish", "renew"
	d    *wmDelivery
	sig  wmSignal
	g    Grant
	// gen is the delivery's wait a "retry" ends (a nudged delivery's recheck is void);
	// asked, began and run are a "nudge"'s and "nudged"'s: how many, when it began, and in
	// which run of the endpoint workflow.
	gen, asked, run int
	began           time.Time
	// found and failed are a "nudged"'s: what the nudge found, or that it failed.
	found  int
	failed bool
}

// wmSignal is a gate's signal to the endpoint workflow.
type wmSignal struct {
	kind   string // "wait", "done", "lease"
	waiter string
	out    *Outcome
	holder string
}

type wmQueue []*wmEvent

func (q wmQueue) Len() int { return len(q) }
func (q wmQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q wmQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *wmQueue) Push(x any)   { *q = append(*q, x.(*wmEvent)) }
func (q *wmQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// Delivery states.
const (
	wmIdle      = iota // between attempts (a retry's timer)
	wmRunning          // its attempt is in its local activity (gate checks, request)
	wmWaiting          // waits for a permit signal (or its recheck)
	wmDelivered        // done
	wmGone             // vanished (terminated) while waiting
	wmForRoom          // turned away by a full queue: waits for its recheck or a nudge
)

// wmVisible is how long after its gate turned it away a delivery may wait unseen by the
// endpoint's nudges: the gate's view of the queue is a second old at most, and the
// delivery's status reaches visibility within two.
const wmVisible = 3 * time.Second

// wmRoomBound is how long, without nudges, a delivery may wait for room while the queue
// has had it before the model calls it stalled: shorter than its own recheck
// (QueueFullRecheck, 61 s here), longer than a nudge takes (NudgeEvery and seconds).
const wmRoomBound = 40 * time.Second

type wmDelivery struct {
	id      string
	state   int
	permits []Grant // permit signals received and not yet taken (the workflow's channel)
	// toLim counts its signals on their way to the endpoint workflow or not yet taken by it;
	// toIt counts permits on their way to it.
	toLim, toIt int
	since       time.Time // when it began to wait
	// lastSignal and lastPermit are when its last signal reaches the endpoint, and its last
	// permit reaches it: signals between two workflows arrive in order.
	lastSignal, lastPermit time.Time
	attempts               int
	gen                    int
}

type wakeModel struct {
	rng   *rand.Rand
	now   time.Time
	seq   int
	q     wmQueue
	lim   Limiter
	limit int
	cap   int
	// inbox holds the signals that reached the endpoint workflow, not yet taken by a task.
	inbox      []wmSignal
	taskAt     time.Time // when the next workflow task runs (zero: none scheduled)
	timerAt    time.Time // the workflow's timer (zero: none)
	deliveries []*wmDelivery
	byID       map[string]*wmDelivery
	started    map[time.Time]int // requests started per aligned second
	running    int
	late, slow float64
	// timedOut is the chance that a done's send times out at the gate yet reaches the server.
	timedOut   float64
	pCAN       float64
	continued  int
	handedBack int
	trace      []string
	// ops are the limiter's methods that take a done and a wait (Limiter.Done, Wait).
	ops wmOps
	// full is the queue as the gates last saw it (Snapshot.QueueFull), at fullSeen: a gate
	// that sees it full sends no wait, and its delivery asks again later
	// (QueueFullRecheck). A gate's view is at most a second old (it reads the snapshot
	// again then).
	full     bool
	fullSeen time.Time
	// nudging is set while a nudge of this run is on its way; halfSince is when the queue
	// last became at most half full (zero: more than half full now); nudged counts the
	// deliveries nudged back.
	nudging   bool
	halfSince time.Time
	nudged    int
	// lastNudge is when the last nudge of the endpoint ended (or the run that started it
	// continued as new).
	lastNudge time.Time
}

func (m *wakeModel) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf("%7dms ", m.now.Sub(limiterEpoch).Milliseconds())+fmt.Sprintf(format, args...))
	if len(m.trace) > 80 {
		m.trace = m.trace[1:]
	}
}

func (m *wakeModel) at(at time.Time, e *wmEvent) {
	m.seq++
	e.at, e.seq = at, m.seq
	heap.Push(&m.q, e)
}

// delay is how long a signal takes to reach its workflow and be seen by a task there: most
// take milliseconds, some (a busy machine) take seconds, past a grant's second.
func (m *wakeModel) delay() time.Duration {
	if m.rng.Float64() < m.late {
		return time.Duration(800+m.rng.Intn(3000)) * time.Millisecond
	}
	return time.Duration(1+m.rng.Intn(300)) * time.Millisecond
}

// toLimiter sends a gate's signal for d (nil: a holder's) to the endpoint workflow. A
// delivery's signals arrive in the order it sent them (each is in the endpoint's history
// before the next is sent), except a done whose send timed out at the gate (askTimeout)
// and still reached the server: it may come after the delivery's next wait.
func (m *wakeModel) toLimiter(d *wmDelivery, s wmSignal) {
	at := m.now.Add(m.delay())
	if d != nil {
		d.toLim++
		if s.kind == "done" && m.rng.Float64() < m.timedOut {
			at = m.now.Add(5*time.Second + time.Duration(m.rng.Intn(3000))*time.Millisecond)
		} else {
			at = later(at, d.lastSignal)
			d.lastSignal = at
		}
	}
	m.at(at, &wmEvent{kind: "signal", d: d, sig: s})
}

// schedule asks for a workflow task at t unless one comes sooner.
func (m *wakeModel) schedule(t time.Time) {
	if m.taskAt.IsZero() || t.Before(m.taskAt) {
		m.taskAt = t
		m.at(t, &wmEvent{kind: "task"})
	}
}

// task is one workflow task of the endpoint workflow: the signals that came (outcomes,
// then dones, then waits), a tick, the timer for the next deadline, and now and then a
// continue-as-new, with every signal taken first.
func (m *wakeModel) task() {
	now := m.now
	m.taskAt = time.Time{}
	inbox := m.inbox
	m.inbox = nil
	for _, kind := range []string{"lease", "done", "wait"} {
		for _, s := range inbox {
			if s.kind != kind {
				continue
			}
			d := m.byID[s.waiter]
			switch s.kind {
			case "lease":
				r := m.lim.Lease(now, LeaseRequest{Holder: s.holder, Want: 4})
				if r.Permits != 0 {
					m.fail("holder %s leased %d permits at a rate-limited endpoint", s.holder, r.Permits)
				}
				continue
			case "done":
				m.ops.done(&m.lim, now, s.waiter, s.out)
				m.logf("endpoint: done %s (out %v)", s.waiter, s.out != nil)
			case "wait":
				g, ok := m.ops.wait(&m.lim, now, s.waiter)
				m.logf("endpoint: wait %s -> granted %v (queue %d)", s.waiter, ok, len(m.lim.Ledger.Waiting))
				if ok {
					m.wake(g)
				}
			}
			if d != nil {
				d.toLim--
			}
		}
	}
	for _, g := range m.lim.Tick(now) {
		m.logf("endpoint: tick grants %s for %s", g.Waiter, g.Window.Sub(limiterEpoch))
		m.wake(g)
	}
	if next := m.lim.NextDeadline(now); !next.IsZero() && (m.timerAt.IsZero() || next.Before(m.timerAt)) {
		m.timerAt = next
		// A timer fires on time or late.
		m.at(next.Add(time.Duration(m.rng.Intn(100))*time.Millisecond), &wmEvent{kind: "timer", g: Grant{Until: next}})
	}
	if m.rng.Float64() < 0.3 {
		m.full, m.fullSeen = m.lim.QueueFull(), now // the gates learn of the queue now and then
	}
	if 2*len(m.lim.Ledger.Waiting) > m.lim.Config.MaxQueue {
		m.halfSince = time.Time{}
	} else if m.halfSince.IsZero() {
		m.halfSince = now
	}
	if !m.ops.noNudge {
		m.nudge(now)
	}
	if m.rng.Float64() < m.pCAN {
		m.continueAsNew()
	}
}

// continueAsNew ends the run as the endpoint workflow does: its state goes through JSON
// into the next run; the signals on their way reach the next run.
func (m *wakeModel) continueAsNew() {
	b, err := json.Marshal(m.lim)
	if err != nil {
		m.fail("encode the limiter: %v", err)
		return
	}
	var next Limiter
	if err := json.Unmarshal(b, &next); err != nil {
		m.fail("decode the limiter: %v", err)
		return
	}
	m.lim = next
	m.continued++
	if m.nudging {
		m.nudging, m.lastNudge = false, m.now // the run's nudge goes on, but its end reaches no run
	}
	m.timerAt = time.Time{}
	m.schedule(m.now.Add(time.Duration(1+m.rng.Intn(50)) * time.Millisecond))
}

// wake sends g to its delivery. A delivery that is gone cannot be signalled: the wake
// returns the permit (endpointRun.wake).
func (m *wakeModel) wake(g Grant) {
	d := m.byID[g.Waiter]
	d.toIt++
	at := later(m.now.Add(m.delay()), d.lastPermit)
	d.lastPermit = at
	m.at(at, &wmEvent{kind: "permit", d: d, g: g})
}

// waitFor puts d in its wait for a permit: it takes a permit already received at once
// (delivery.wait's selector).
func (m *wakeModel) waitFor(d *wmDelivery) {
	d.state, d.since = wmWaiting, m.now
	if len(d.permits) > 0 {
		g := d.permits[0]
		d.permits = d.permits[1:]
		m.attempt(d, &g)
	}
}

// attempt starts d's attempt (a local activity) with permit p (nil: none) after a workflow
// task's latency.
func (m *wakeModel) attempt(d *wmDelivery, p *Grant) {
	d.state = wmRunning
	e := &wmEvent{kind: "attempt", d: d}
	if p != nil {
		e.g = *p
	}
	m.at(m.now.Add(time.Duration(m.rng.Intn(40))*time.Millisecond), e)
}

// gate runs the gate's checks for d's attempt at now with grant g (zero Waiter: none), as
// gate.Gate.Acquire and Late do.
func (m *wakeModel) gate(d *wmDelivery, g Grant) {
	ask := func(why string) {
		if why != "" {
			m.handedBack++
			m.logf("%s: %s, asks again", d.id, why)
		}
		m.toLimiter(d, wmSignal{kind: "wait", waiter: d.id})
		m.waitFor(d)
	}
	if g.Waiter == "" {
		full := m.full
		if m.now.Sub(m.fullSeen) >= time.Second {
			full = m.lim.QueueFull() // the gate reads the snapshot again
		}
		if full {
			// HoldLater: not queued; the delivery asks again later, or when nudged.
			d.state, d.since = wmForRoom, m.now
			d.gen++
			m.logf("%s: turned away by the full queue", d.id)
			m.at(m.now.Add(QueueFullRecheck(time.Time{}, m.now)), &wmEvent{kind: "retry", d: d, gen: d.gen})
			return
		}
		ask("")
		return
	}
	start := m.now
	if early := g.Window.Sub(start); early > 0 && early <= RateWindow {
		start = g.Window // untilWindow
	}
	if !InWindow(g.Window, start) {
		ask("its second is over")
		return
	}
	if g.Until.Sub(start) <= wmTimeout {
		ask("its permit expires")
		return
	}
	start = start.Add(time.Duration(m.rng.Intn(120)) * time.Millisecond) // signing; Late
	if !InWindow(g.Window, start) {
		ask("its second ended before the request")
		return
	}
	m.started[WindowOf(start)]++
	if n := m.started[WindowOf(start)]; n > m.limit {
		m.fail("%d requests started in the second at %s, limit %d", n, WindowOf(start).Sub(limiterEpoch), m.limit)
	}
	m.running++
	if m.running > m.cap {
		m.fail("%d requests running, cap %d", m.running, m.cap)
	}
	d.attempts++
	lat := time.Duration(5+m.rng.Intn(200)) * time.Millisecond
	if m.rng.Float64() < m.slow {
		lat = time.Duration(500+m.rng.Intn(4000)) * time.Millisecond
	}
	ok := m.rng.Intn(10) > 0
	m.logf("%s: request at %s (second %s), ok %v", d.id, start.Sub(limiterEpoch), g.Window.Sub(limiterEpoch), ok)
	m.at(start.Add(lat), &wmEvent{kind: "end", d: d, g: g, sig: wmSignal{out: &Outcome{At: start, OK: ok, Latency: 0, Ticket: g.Ticket}}})
}

func (m *wakeModel) step() bool {
	if len(m.q) == 0 {
		return false
	}
	e := heap.Pop(&m.q).(*wmEvent)
	m.now = e.at
	d := e.d
	switch e.kind {
	case "task":
		if m.taskAt.Equal(e.at) {
			m.task()
		}
	case "timer":
		if m.timerAt.Equal(e.g.Until) { // the run's timer, not one a sooner deadline replaced
			m.timerAt = time.Time{}
			m.task()
		}
	case "signal":
		m.inbox = append(m.inbox, e.sig)
		m.schedule(m.now.Add(time.Duration(m.rng.Intn(30)) * time.Millisecond))
	case "permit":
		d.toIt--
		switch d.state {
		case wmGone, wmDelivered:
			// The workflow is closed, the signal fails: the endpoint workflow's wake returns
			// the permit.
			m.inbox = append(m.inbox, wmSignal{kind: "done", waiter: d.id})
			d.toLim++
			m.schedule(m.now.Add(time.Duration(m.rng.Intn(30)) * time.Millisecond))
		case wmWaiting, wmForRoom:
			// A delivery waiting for room takes a permit too (delivery.wait's selector):
			// one granted before its gate turned it away.
			d.gen++
			m.attempt(d, &e.g)
		default:
			d.permits = append(d.permits, e.g)
		}
	case "attempt":
		if d.state == wmRunning {
			m.gate(d, e.g)
		}
	case "end":
		m.running--
		ok := e.sig.out.OK
		m.toLimiter(d, wmSignal{kind: "done", waiter: d.id, out: e.sig.out})
		if ok {
			d.state = wmDelivered
		} else {
			d.state = wmIdle
			m.at(m.now.Add(wmRetry), &wmEvent{kind: "retry", d: d, gen: d.gen})
		}
	case "retry":
		if e.gen == d.gen {
			m.attempt(d, nil)
		}
	case "nudge":
		m.nudgeNow(e)
	case "nudged":
		if e.run == m.continued {
			m.lim.Nudged(m.now, e.began, e.asked, e.found, !e.failed)
			m.nudging, m.lastNudge = false, m.now
			m.schedule(m.now.Add(time.Duration(m.rng.Intn(30)) * time.Millisecond))
		}
	case "vanish":
		if d.state == wmWaiting {
			m.logf("%s: vanishes", d.id)
			d.state = wmGone
		}
	case "renew":
		m.toLimiter(nil, wmSignal{kind: "lease", holder: e.sig.holder})
		if m.now.Sub(limiterEpoch) < 2*time.Minute {
			m.at(m.now.Add(time.Second), e)
		}
	}
	return true
}

// check looks for a forgotten waiter: one that believes it waits while the endpoint's
// queue does not hold it and nothing is on the way to or from it.
func (m *wakeModel) check() {
	if !m.lim.Overflow.FullAt.IsZero() && !m.halfSince.IsZero() && !m.nudging &&
		m.now.Sub(later(m.halfSince, m.lastNudge)) > NudgeEvery+time.Second {
		m.fail("no nudge since %s, with the queue at most half full since %s and deliveries perhaps waiting for room",
			m.lastNudge.Sub(limiterEpoch), m.halfSince.Sub(limiterEpoch))
	}
	for _, d := range m.deliveries {
		if d.state == wmForRoom && m.lim.Overflow.FullAt.IsZero() && !m.ops.noNudge && m.now.Sub(d.since) > wmVisible {
			m.fail("%s waits for room (since %s) and the endpoint no longer looks for it (queue %d)",
				d.id, d.since.Sub(limiterEpoch), len(m.lim.Ledger.Waiting))
		}
		if d.state == wmForRoom && m.ops.noNudge && !m.halfSince.IsZero() && m.now.Sub(later(d.since, m.halfSince)) > wmRoomBound {
			m.fail("%s waits for room (since %s) while the queue has had room since %s",
				d.id, d.since.Sub(limiterEpoch), m.halfSince.Sub(limiterEpoch))
		}
		if d.state != wmWaiting {
			continue
		}
		if m.now.Sub(d.since) >= MaxQueuedWait {
			m.fail("%s waited for its recheck (%s)", d.id, MaxQueuedWait)
		}
		if d.toLim > 0 || d.toIt > 0 || len(d.permits) > 0 {
			continue
		}
		if !m.lim.Ledger.Queued(d.id) {
			m.fail("%s believes it waits for a permit (since %s) but the endpoint neither holds it in its queue (%d waiting) nor sends it one",
				d.id, d.since.Sub(limiterEpoch), len(m.lim.Ledger.Waiting))
		}
	}
}

type wmFailure string

func (m *wakeModel) fail(format string, args ...any) {
	panic(wmFailure(fmt.Sprintf("at %s: ", m.now.Sub(limiterEpoch)) + fmt.Sprintf(format, args...) + "; last events:\n" + strings.Join(m.trace, "\n")))
}

// wmOps are the limiter's methods the model drives for a done and a wait, and whether the
// endpoint nudges the deliveries turned away by a full queue (noNudge: as before
// versionNudgeOverflow).
type wmOps struct {
	done    func(g *Limiter, now time.Time, waiter string, o *Outcome)
	wait    func(g *Limiter, now time.Time, waiter string) (Grant, bool)
	noNudge bool
}

// nudge notes a full queue and starts a nudge when one is due, as the endpoint workflow's
// nudgeOverflow does: its activity lists, asks and nudges some time later.
func (m *wakeModel) nudge(now time.Time) {
	m.lim.NoteFull(now)
	n := m.lim.NudgeDue(now)
	if n == 0 || m.nudging {
		return
	}
	m.nudging = true
	m.lim.NudgeStarted(now)
	m.logf("endpoint: nudge %d (queue %d)", n, len(m.lim.Ledger.Waiting))
	m.at(now.Add(time.Duration(50+m.rng.Intn(3000))*time.Millisecond), &wmEvent{kind: "nudge", asked: n, began: now, run: m.continued})
}

// nudgeNow is the nudge activity's work: the deliveries waiting for room that visibility
// shows (those turned away more than a random lag ago), less those the endpoint holds,
// oldest first, at most e.asked of them, each asks again; then its end reaches the run
// that started it (one that has continued as new does not hear of it). One in twenty
// fails before it nudges anyone.
func (m *wakeModel) nudgeNow(e *wmEvent) {
	end := &wmEvent{kind: "nudged", asked: e.asked, began: e.began, run: e.run}
	if m.rng.Intn(20) == 0 {
		m.logf("endpoint: the nudge fails")
		end.failed = true
		m.at(m.now.Add(time.Duration(10+m.rng.Intn(100))*time.Millisecond), end)
		return
	}
	lag := time.Duration(m.rng.Intn(2000)) * time.Millisecond
	var found []*wmDelivery
	for _, d := range m.deliveries {
		if d.state == wmForRoom && !d.since.After(m.now.Add(-lag)) && !m.lim.Holds(d.id) {
			found = append(found, d)
		}
	}
	slices.SortStableFunc(found, func(a, b *wmDelivery) int { return a.since.Compare(b.since) })
	for _, d := range found[:min(len(found), e.asked)] {
		d.gen++
		m.nudged++
		m.logf("%s: nudged", d.id)
		m.attempt(d, nil)
	}
	end.found = len(found)
	m.logf("endpoint: the nudge found %d", len(found))
	m.at(m.now.Add(time.Duration(10+m.rng.Intn(500))*time.Millisecond), end)
}

// wmToday are the limiter's methods as the endpoint workflow calls them today.
var wmToday = wmOps{done: (*Limiter).Done, wait: (*Limiter).Wait}

// runWakeModel runs one seed: deliveries events sent over a few seconds to an endpoint
// limited to limit per second.
func runWakeModel(seed int64, deliveries int, ops wmOps) (m *wakeModel, err error) {
	rng := rand.New(rand.NewSource(seed))
	c := DefaultLimiterConfig()
	c.RateLimit = 1 + rng.Intn(5)
	c.Capacity.MaxInFlight = []int{2, 4, 100}[rng.Intn(3)]
	c.Breaker.ConsecutiveFailures = 1000 // the breaker is another model's
	c.Breaker.VolumeFailures = 100000
	c.MaxQueue = []int{10000, 10000, 6}[rng.Intn(3)]
	m = &wakeModel{rng: rng, now: limiterEpoch, lim: NewLimiter(c), limit: c.RateLimit, cap: c.Capacity.MaxInFlight,
		byID: map[string]*wmDelivery{}, started: map[time.Time]int{}, ops: ops,
		late: []float64{0, 0.05, 0.3}[rng.Intn(3)], slow: []float64{0, 0.1, 0.3}[rng.Intn(3)],
		pCAN: []float64{0, 0.05, 0.3}[rng.Intn(3)], timedOut: []float64{0, 0, 0.1}[rng.Intn(3)]}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(wmFailure)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("seed %d (limit %d, cap %d, queue %d, late %.2f, slow %.2f, continue-as-new %.2f, timed-out dones %.2f): %s",
				seed, m.limit, m.cap, m.lim.Config.MaxQueue, m.late, m.slow, m.pCAN, m.timedOut, string(f))
		}
	}()
	for i := range deliveries {
		d := &wmDelivery{id: fmt.Sprintf("d%02d", i)}
		m.deliveries = append(m.deliveries, d)
		m.byID[d.id] = d
		d.state = wmIdle
		m.at(limiterEpoch.Add(time.Duration(rng.Intn(3000))*time.Millisecond), &wmEvent{kind: "retry", d: d})
		if rng.Intn(10) == 0 {
			m.at(limiterEpoch.Add(time.Duration(rng.Intn(10000))*time.Millisecond), &wmEvent{kind: "vanish", d: d})
		}
	}
	for i := range 2 {
		m.at(limiterEpoch.Add(time.Duration(rng.Intn(1000))*time.Millisecond), &wmEvent{kind: "renew", sig: wmSignal{holder: fmt.Sprintf("worker-%d", i+1)}})
	}
	for m.step() {
		m.check()
		if m.now.Sub(limiterEpoch) > time.Hour {
			m.fail("still running after an hour")
		}
	}
	for _, d := range m.deliveries {
		if d.state != wmDelivered && d.state != wmGone {
			m.fail("%s never delivered (state %d)", d.id, d.state)
		}
	}
	if len(m.lim.Grants) > 0 || m.lim.Ledger.InUse(m.now) > 0 || len(m.lim.Ledger.Waiting) > 0 {
		m.fail("all quiet, yet the endpoint still has grants %v, %d permits out, queue %v", m.lim.Grants, m.lim.Ledger.InUse(m.now), m.lim.Ledger.Waiting)
	}
	return m, nil
}

// TestWakeUpsNeverForgotten runs the wake-up model over many seeds.
func TestWakeUpsNeverForgotten(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	var handedBack, continued, nudged int
	var failures []string
	for seed := range int64(seeds) {
		m, err := runWakeModel(seed, 30, wmToday)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		handedBack += m.handedBack
		continued += m.continued
		nudged += m.nudged
	}
	if len(failures) > 0 {
		slices.SortFunc(failures, func(a, b string) int { return len(a) - len(b) })
		t.Fatalf("%d of %d seeds fail; the shortest:\n%s", len(failures), seeds, failures[0])
	}
	if handedBack == 0 || continued == 0 || nudged == 0 {
		t.Fatalf("the model handed back %d grants, continued as new %d times and nudged %d deliveries: it tests none of them", handedBack, continued, nudged)
	}
	t.Logf("%d seeds: %d grants handed back, %d continues-as-new, %d deliveries nudged back from a full queue", seeds, handedBack, continued, nudged)
}

// TestWakeUpModelFindsTheStall: without nudges (an endpoint run started before
// versionNudgeOverflow), the model finds deliveries turned away by a full queue that wait
// for their own recheck while the queue has room.
func TestWakeUpModelFindsTheStall(t *testing.T) {
	for seed := range int64(300) {
		if _, err := runWakeModel(seed, 30, wmOps{done: (*Limiter).Done, wait: (*Limiter).Wait, noNudge: true}); err != nil {
			if !strings.Contains(err.Error(), "waits for room") {
				t.Fatalf("the model fails, but not on a delivery waiting for room: %v", err)
			}
			return
		}
	}
	t.Fatal("300 seeds and the model finds no delivery waiting for room without nudges")
}

// TestWakeUpModelFindsOldLosses: the model finds the lost wake-ups of Herald 0.1.0's
// limiter: a done that takes its waiter out of the queue when it arrives after the waiter
// asked again (Limiter.DoneDequeuing), and a wait dropped by a full queue whose gate saw it
// not full yet (Limiter.WaitRefusingWhenFull).
func TestWakeUpModelFindsOldLosses(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  wmOps
	}{
		{"DoneDequeuing", wmOps{done: (*Limiter).DoneDequeuing, wait: (*Limiter).Wait}},
		{"WaitRefusingWhenFull", wmOps{done: (*Limiter).Done, wait: (*Limiter).WaitRefusingWhenFull}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range int64(300) {
				if _, err := runWakeModel(seed, 30, tc.ops); err != nil {
					if !strings.Contains(err.Error(), "believes it waits for a permit") {
						t.Fatalf("the model fails, but not on a forgotten waiter: %v", err)
					}
					return
				}
			}
			t.Fatalf("300 seeds and the model finds no forgotten waiter with %s", tc.name)
		})
	}
}

// TestLimiterLateDoneKeepsNewRequest: the done of a waiter's attempt that arrives after
// the waiter asked again takes neither its new place in the queue nor its new grant.
func TestLimiterLateDoneKeepsNewRequest(t *testing.T) {
	c := limiterTestConfig()
	c.RateLimit = 1
	g := NewLimiter(c)
	now := limiterEpoch.Add(100 * time.Millisecond)
	first, ok := g.Wait(now, "w1")
	if !ok {
		t.Fatal("w1 not granted on an idle endpoint")
	}
	if _, ok := g.Wait(now, "w2"); ok {
		t.Fatal("w2 granted in a second the limit of 1 has spent")
	}
	out := &Outcome{At: first.Window.Add(50 * time.Millisecond), OK: false, Ticket: first.Ticket}
	// w1's request failed; it asks again (queued behind w2) before its done arrives.
	now = now.Add(time.Second)
	if _, ok := g.Wait(now, "w1"); ok {
		t.Fatal("w1 granted again ahead of w2")
	}
	g.Done(now, "w1", out)
	if !g.Ledger.Queued("w1") {
		t.Fatalf("the late done took w1 out of the queue %v: w1 waits for a permit nobody will send", g.Ledger.Waiting)
	}
	// w2 and then w1 are granted, one per second; w1's done for its first grant, late
	// again, leaves its second grant in place.
	var second Grant
	for s := 1; s <= 3 && second.Waiter == ""; s++ {
		for _, w := range g.Tick(limiterEpoch.Add(time.Duration(s)*time.Second + 600*time.Millisecond)) {
			if w.Waiter == "w1" {
				second = w
			}
		}
	}
	if second.Waiter == "" {
		t.Fatal("w1 never granted again")
	}
	g.Done(second.Window, "w1", out)
	if i := g.single("w1"); i < 0 || !g.Grants[i].Window.Equal(second.Window) {
		t.Fatalf("the done of w1's first grant took its second (grants %v)", g.Grants)
	}
	g.Done(second.Window, "w1", &Outcome{At: second.Window, OK: true, Ticket: second.Ticket})
	if _, held := g.Ledger.Lease("w1"); g.single("w1") >= 0 || held {
		t.Fatalf("w1's own done left grants %v, leases %v", g.Grants, g.Ledger.Held)
	}
}
