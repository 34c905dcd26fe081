// Package gate is a worker's local gate in front of every endpoint: it admits attempts
// against permits leased in blocks from the endpoint workflows (or a few spare ones),
// renews those leases in the background, batches the signals attempts send to an
// endpoint workflow, and adds up attempt counts for the stats shards. The decisions are
// package policy's (policy.LocalLease); this package adds the clock, the locks, the
// goroutines and the calls (Endpoints).
package gate

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// Gate is a worker's local gate in front of every endpoint. It admits attempts on its own —
// against permits leased in blocks from the endpoint workflows, or, for an endpoint this
// worker holds no lease for, against a few spare permits the endpoint's snapshot shows free
// — so a healthy endpoint under its cap costs no round trip per attempt and a cold one no
// history event. It never waits for an endpoint workflow: an attempt it cannot admit is
// handed back at once, queued in the endpoint's durable queue or told when to ask again,
// and the delivery waits on a durable timer or signal, holding no worker slot. In the
// background it renews leases and reports the outcomes that can change a decision (a
// failure, a slow attempt); it stops admitting to an endpoint at once when it sees the
// breaker's trigger (consecutive failures), before the endpoint workflow has heard of them.
type Gate struct {
	calls  Endpoints
	holder string
	every  time.Duration
	// statsEvery is how often the counts are flushed to the stats shards (StatsInterval).
	statsEvery time.Duration
	timeout    func(herald.Endpoint) time.Duration
	// roomWait is how long an attempt waits here for room (policy.RoomWait; tests lengthen it).
	roomWait time.Duration
	// passReport is how long passes used gather before a renewal reports them
	// (policy.PassReportDelay).
	passReport time.Duration
	// holding counts the attempts without a pass waiting here for room, or for the
	// second they were admitted to (a rate lead), all endpoints together; at most
	// maxHolding (policy.MaxHoldingAll; 0: no bound but the endpoints').
	holding    atomic.Int64
	maxHolding int64
	// peak is the most attempts holding at once (HoldingPeak).
	peak atomic.Int64
	log  *slog.Logger
	// stopping: the worker is shutting down; admit nothing more.
	stopping atomic.Bool

	mu      sync.Mutex
	entries map[string]*gateEntry

	// counts are the attempt counts added up since the last flush to the stats shards.
	countMu sync.Mutex
	counts  map[string]*herald.Report

	// offered are reads of endpoints the process made and offered (Offer, offer.go).
	offered offers
}

// gateEntry is the gate's view of one endpoint: the decisions (policy.LocalLease), and what
// only the gate has: the clock, the configuration and the outcomes not yet told.
type gateEntry struct {
	id       string
	stopping *atomic.Bool
	refs     int // attempts using the entry (guarded by Gate.mu): it is not dropped while used

	mu       sync.Mutex
	h        policy.LocalLease
	ep       herald.Endpoint
	learned  time.Time // when the request behind the last answer (snapshot, configuration) was sent
	until    time.Time // admit nothing new under the lease after this (local clock)
	outcomes []policy.Outcome
	call     *call // the renewal or report in flight, if any
	ask      *call // the snapshot query in flight, if any
	// waits and dones batch the deliveries queued at, and the own permits returned to,
	// the endpoint workflow: one signal carries all that came while the last was sent.
	waits batcher[waitItem]
	dones batcher[herald.Done]
	// changed is closed at the entry's next change, for the attempts waiting for room
	// (room.go); passed are the pass-holders admitted since the last renewal.
	changed chan struct{}
	passed  []string
	// reportDue is set while a renewal that reports the passes used is due (reportPasses).
	reportDue bool
}

// askTimeout bounds each call an attempt makes to an endpoint workflow (a snapshot query, a
// wait signal): none of them waits for the workflow to change.
const askTimeout = 5 * time.Second

// call is one request in flight; concurrent callers wait on it.
type call struct {
	done chan struct{}
	err  error
}

// NewGate returns a gate whose knowledge of an endpoint is at most every old and that
// renews its leases every interval through c. timeout gives an endpoint's attempt timeout
// (leases outlive it, so a running attempt keeps its permit).
func New(c Endpoints, every time.Duration, timeout func(herald.Endpoint) time.Duration, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	return &Gate{
		calls: c, every: every, statsEvery: StatsInterval, timeout: timeout, log: log, roomWait: policy.RoomWait,
		passReport: policy.PassReportDelay,
		holder:     fmt.Sprintf("worker:%s:%d:%s", host, os.Getpid(), uuid.NewString()[:8]),
		entries:    map[string]*gateEntry{}, counts: map[string]*herald.Report{},
	}
}

// BoundHolding bounds the attempts that wait here for room, all endpoints together, for a
// worker with slots local-activity slots (policy.MaxHoldingAll). Call it before the
// worker starts.
func (g *Gate) BoundHolding(slots int) { g.maxHolding = int64(policy.MaxHoldingAll(slots)) }

// FlushCountsEvery sets how often the gate sends its attempt counts to the stats shards
// (default StatsInterval); d is rounded up to the renewal interval. Call it before Run.
func (g *Gate) FlushCountsEvery(d time.Duration) {
	if d > 0 {
		g.statsEvery = d
	}
}

// Holder is the id this gate's leases are held under.
func (g *Gate) Holder() string { return g.holder }

// Admission is an attempt let through by the gate; pass it to Finish or Release.
type Admission struct {
	Endpoint herald.Endpoint
	Ticket   policy.Ticket
	// Waiter is set when the attempt runs on a permit of its own (not the gate's).
	Waiter string
	// Window is set for a rate-limited endpoint: the start of the one-second window the
	// attempt's request must start in (policy.InWindow).
	Window time.Time
	entry  *gateEntry
}

// Acquire admits one attempt to endpoint id, or says at once why it must wait. waiter is
// the delivery's workflow id, queued at the endpoint workflow when the attempt must wait
// for a permit; permit is a permit of its own the delivery was handed, if any. The
// attempt uses the endpoint's configuration as of at most one renewal interval ago.
func (g *Gate) Acquire(ctx context.Context, id, waiter string, permit *policy.Grant) (*Admission, *herald.Hold, error) {
	e := g.entry(id)
	a, h, err := g.acquire(ctx, e, waiter, permit)
	if a == nil {
		g.unref(e)
	}
	return a, h, err
}

func (g *Gate) acquire(ctx context.Context, e *gateEntry, waiter string, permit *policy.Grant) (*Admission, *herald.Hold, error) {
	if err := g.fresh(ctx, e); err != nil {
		return nil, nil, err
	}
	if permit != nil && permit.Pass && !permit.Disabled {
		return g.acquirePass(ctx, e, waiter)
	}
	e.mu.Lock()
	if permit != nil {
		ep, snap := e.ep, e.h.Snapshot
		e.mu.Unlock()
		if permit.Disabled || snap.Disabled {
			if !permit.Disabled {
				g.giveBack(ctx, e, waiter)
			}
			return nil, disabledHold(snap), nil
		}
		if w := permit.Window; !w.IsZero() {
			if err := untilWindow(ctx, w); err != nil {
				return nil, nil, err
			}
			if !policy.InWindow(w, time.Now()) {
				// A rate-limited permit is good for its one second only: ask again (the
				// endpoint workflow grants the waiter anew once that second is over).
				return nil, g.waitAgain(ctx, e, waiter, snap, windowReason(w, time.Now())), nil
			}
		}
		if time.Until(permit.Until) > g.timeout(ep) {
			return &Admission{Endpoint: ep, Ticket: permit.Ticket, Waiter: waiter, Window: permit.Window, entry: e}, nil, nil
		}
		// Too late to use it safely: ask again (the endpoint workflow renews it).
		return nil, g.waitAgain(ctx, e, waiter, snap, "the permit expired before the attempt could start"), nil
	}
	if e.h.RateLeased() {
		return g.acquireRate(ctx, e, waiter) // unlocks e.mu
	}
	if e.h.Admit(time.Now().Before(e.until), e.stopping.Load()) {
		a := &Admission{Endpoint: e.ep, Ticket: e.h.Snapshot.Ticket, entry: e}
		grow := e.h.Growing()
		e.mu.Unlock()
		if grow {
			g.kick(e) // the last spare permit is taken: ask for a lease before anyone waits
		}
		return a, nil, nil
	}
	kind, snap, tripped := e.h.Hold(), e.h.Snapshot, e.h.Tripped
	e.mu.Unlock()
	return g.hold(ctx, e, waiter, kind, snap, tripped)
}

// hold is the answer to an attempt the gate turned away with kind.
func (g *Gate) hold(ctx context.Context, e *gateEntry, waiter string, kind policy.HoldKind, snap policy.Snapshot, tripped bool) (*Admission, *herald.Hold, error) {
	reason := snap.Reason
	if tripped && snap.Circuit == policy.CircuitClosed {
		reason = fmt.Sprintf("%d consecutive failures at this worker: the circuit breaker decides", snap.Threshold)
	}
	switch kind {
	case policy.HoldDisabled:
		return nil, disabledHold(snap), nil
	case policy.HoldLease:
		if a := g.admitWaiting(ctx, e, waiter); a != nil {
			return a, nil, nil
		}
		return nil, &herald.Hold{Reason: "this worker's share of the endpoint's cap is growing", Brief: true, Recheck: herald.Duration(g.every)}, nil
	case policy.HoldLater:
		return nil, &herald.Hold{Reason: reason + "; the queue is full", RetryAt: snap.RetryAt, Circuit: snap.Circuit, Full: true,
			Recheck: herald.Duration(policy.QueueFullRecheck(snap.RetryAt, time.Now()))}, nil
	default:
		return nil, g.wait(ctx, e, waiter, snap, reason), nil
	}
}

// disabledHold is the answer to an attempt at a disabled endpoint: it neither goes nor waits.
func disabledHold(snap policy.Snapshot) *herald.Hold {
	reason := snap.Reason
	if !snap.Disabled || reason == "" {
		reason = "endpoint disabled"
	}
	return &herald.Hold{Reason: reason, Disabled: true}
}

// giveBack returns a permit of its own that waiter will not use.
func (g *Gate) giveBack(ctx context.Context, e *gateEntry, waiter string) {
	if err := e.dones.add(ctx, herald.Done{Waiter: waiter}); err != nil {
		g.log.Warn("return of a permit not delivered; it expires on its own", "endpoint", e.id, "waiter", waiter, "error", err)
	}
}

// waitItem is one waiter in a wait signal: the attempt it waits for (key, WithWaitKey), and
// renew set when it hands back a permit or pass it was given (herald.WaitRequest).
type waitItem struct {
	waiter string
	key    uint32
	renew  bool
}

type waitKeyCtx struct{}

// WithWaitKey returns ctx naming the attempt an Acquire under it is for (policy.WaitKey):
// a wait it sends carries the key, so that the endpoint workflow knows the same wait sent
// again (the attempt ran twice) from a new one.
func WithWaitKey(ctx context.Context, key uint32) context.Context {
	return context.WithValue(ctx, waitKeyCtx{}, key)
}

func waitKey(ctx context.Context) uint32 {
	k, _ := ctx.Value(waitKeyCtx{}).(uint32)
	return k
}

// wait puts waiter in the endpoint's queue (a signal, shared with the waiters that come
// meanwhile: it returns once the server has it, without waiting for the endpoint
// workflow) and says how long to wait for the permit.
func (g *Gate) wait(ctx context.Context, e *gateEntry, waiter string, snap policy.Snapshot, reason string) *herald.Hold {
	return g.waitFor(ctx, e, waitItem{waiter: waiter, key: waitKey(ctx)}, snap, reason)
}

// waitAgain is wait for a waiter that hands back the permit or pass it came with: the
// endpoint workflow grants it again (a plain wait from one that holds a permit gets none).
func (g *Gate) waitAgain(ctx context.Context, e *gateEntry, waiter string, snap policy.Snapshot, reason string) *herald.Hold {
	return g.waitFor(ctx, e, waitItem{waiter: waiter, key: waitKey(ctx), renew: true}, snap, reason)
}

func (g *Gate) waitFor(ctx context.Context, e *gateEntry, item waitItem, snap policy.Snapshot, reason string) *herald.Hold {
	if err := e.waits.add(ctx, item); err != nil {
		return &herald.Hold{Reason: "endpoint workflow unreachable: " + err.Error(), Recheck: herald.Duration(policy.UnreachableRecheck)}
	}
	if reason == "" {
		reason = fmt.Sprintf("endpoint at its concurrency cap of %d", snap.Cap)
	}
	return &herald.Hold{Reason: reason, Queued: true, Position: snap.Queue + 1, RetryAt: snap.RetryAt, Circuit: snap.Circuit,
		Brief: snap.RateTurn(), Recheck: herald.Duration(policy.HoldRecheck(true, snap.RetryAt, time.Now()))}
}

// Late checks an admitted attempt about to start its request at start: one for a
// rate-limited endpoint may start only within its grant's second (policy.InWindow). Past
// it, Late gives the room back and returns the hold the delivery waits on, asking for a
// grant again; otherwise it returns nil.
func (g *Gate) Late(ctx context.Context, a *Admission, start time.Time) *herald.Hold {
	if a.Window.IsZero() || policy.InWindow(a.Window, start) {
		return nil
	}
	if a.Waiter == "" {
		return g.lateShare(a, start)
	}
	defer g.unref(a.entry)
	a.entry.mu.Lock()
	snap := a.entry.h.Snapshot
	a.entry.mu.Unlock()
	// The grant stays with the endpoint workflow, which takes it back when asked again.
	return g.waitAgain(ctx, a.entry, a.Waiter, snap, windowReason(a.Window, start))
}

// untilWindow waits for the rate window a permit is for to begin, when it begins within a
// window's length: a permit granted in the second half of a second is for the next one
// (policy.RateAhead), so an attempt waits here at most half a second. A permit for a later
// window (this worker's clock is behind the endpoint workflow's) is not waited for.
func untilWindow(ctx context.Context, window time.Time) error {
	early := time.Until(window)
	if early <= 0 || early > policy.RateWindow {
		return nil
	}
	t := time.NewTimer(early)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// windowReason says why a rate-limited permit for window cannot be used at now.
func windowReason(window, now time.Time) string {
	if now.Before(window) {
		return "the second this rate-limited permit is for has not begun at this worker"
	}
	return "the second this rate-limited permit was for is over"
}

// fresh makes sure e's knowledge of the endpoint is at most one renewal interval (and at
// most policy.MaxConfigAge) old, reading it again (snapshot: no history event) if it is not.
func (g *Gate) fresh(ctx context.Context, e *gateEntry) error {
	e.mu.Lock()
	if e.h.Known && time.Since(e.learned) < min(g.every, policy.MaxConfigAge) {
		e.mu.Unlock()
		return nil
	}
	if c := e.ask; c != nil {
		e.mu.Unlock()
		return c.wait(ctx)
	}
	if f, ok := g.take(e.id); ok && !e.h.Known {
		// An endpoint this gate does not know, read by the process a moment ago (the API,
		// to accept the send): as fresh as a read of ours, and nothing told since.
		e.ep, e.learned = f.v.Endpoint, f.at
		e.h.Heard(f.v.Snapshot, false, 0, e.h.Told)
		e.mu.Unlock()
		return nil
	}
	c := &call{done: make(chan struct{})}
	e.ask = c
	seen := e.h.Told
	e.mu.Unlock()

	asked := time.Now()
	v, err := g.snapshot(ctx, e.id)
	e.mu.Lock()
	if err == nil && !e.learned.After(asked) {
		e.ep, e.learned = v.Endpoint, asked
		e.h.Heard(v.Snapshot, false, 0, seen)
	}
	e.ask = nil
	e.mu.Unlock()
	c.finish(err)
	return err
}

// snapshot reads endpoint id's configuration and limiter snapshot (Endpoints.Admission), within
// askTimeout.
func (g *Gate) snapshot(ctx context.Context, id string) (herald.AdmissionView, error) {
	qctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	return g.calls.Admission(qctx, id)
}

// Finish records the attempt's outcome and returns its room. An attempt on a permit of its
// own reports straight to the endpoint workflow; the others are told in the background,
// when they can change a decision. For a failed attempt it also returns its place in the
// retry window (policy.Spread of the endpoint's count of failures at this worker), so that
// failures that come together retry evenly spread.
func (g *Gate) Finish(ctx context.Context, a *Admission, res herald.Result) (spread float64, failed bool) {
	o := policy.Outcome{At: res.StartedAt, OK: res.Delivered(), Latency: res.Duration, Ticket: a.Ticket,
		Gone: res.Gone()}
	e := a.entry
	defer g.unref(e)
	own := a.Waiter != ""
	e.mu.Lock()
	spread, failed, trip := e.h.Finish(res.Delivered(), own)
	if !own {
		e.outcomes = append(e.outcomes, o)
	}
	settle := e.h.SettleNow()
	e.notifyLocked()
	e.mu.Unlock()
	g.count(e.id, res)
	if own {
		if err := e.dones.add(ctx, herald.Done{Waiter: a.Waiter, Outcome: &o}); err != nil {
			g.log.Warn("return of a permit not delivered; it expires on its own", "endpoint", e.id, "waiter", a.Waiter, "error", err)
		}
	}
	if trip || settle {
		g.kick(e) // tell the endpoint workflow now, not at the next pass
	}
	return spread, failed
}

// Release returns an admitted attempt's room without an outcome: the attempt did not run
// to an answer (the worker is stopping).
func (g *Gate) Release(ctx context.Context, a *Admission) {
	defer g.unref(a.entry)
	if a.Waiter != "" {
		g.giveBack(ctx, a.entry, a.Waiter)
		return
	}
	a.entry.mu.Lock()
	a.entry.h.Release()
	a.entry.notifyLocked()
	a.entry.mu.Unlock()
}

// entry returns endpoint id's entry, counting one more user of it; unref when done.
func (g *Gate) entry(id string) *gateEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.entries[id]
	if e == nil {
		e = &gateEntry{id: id, stopping: &g.stopping}
		e.waits.send = func(ctx context.Context, items []waitItem) error {
			var r herald.WaitRequest
			for _, it := range items {
				r.Waiters, r.Keys = append(r.Waiters, it.waiter), append(r.Keys, it.key)
				if it.renew {
					r.Renew = append(r.Renew, it.waiter)
				}
			}
			return g.calls.Wait(ctx, id, r)
		}
		e.dones.send = func(ctx context.Context, ds []herald.Done) error { return g.calls.Dones(ctx, id, ds) }
		g.entries[id] = e
	}
	e.refs++
	return e
}

func (g *Gate) unref(e *gateEntry) {
	g.mu.Lock()
	e.refs--
	g.mu.Unlock()
}

func (c *call) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *call) finish(err error) {
	c.err = err
	close(c.done)
}
