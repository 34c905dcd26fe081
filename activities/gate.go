package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
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
	client  client.Client
	holder  string
	every   time.Duration
	timeout func(herald.Endpoint) time.Duration
	log     *slog.Logger
	// stopping: the worker is shutting down; admit nothing more.
	stopping atomic.Bool

	mu  sync.Mutex
	eps map[string]*gateEntry

	// queue is the endpoints' task queue, where the stats shards run.
	queue string
	// counts are the attempt counts added up since the last flush to the stats shards.
	countMu sync.Mutex
	counts  map[string]*herald.Report
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
	waits batcher[string]
	dones batcher[herald.Done]
}

// renewParallel is how many background renewals and reports may be in flight at once.
const renewParallel = 8

// leaseMargin is how much longer than an attempt timeout a lease lasts: a gate that can no
// longer renew stops admitting for half of it before the lease expires.
const leaseMargin = 10 * time.Second

// tellTimeout bounds each renewal or report the gate sends in the background.
const tellTimeout = 10 * time.Second

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
// (leases outlive it, so a running attempt keeps its permit); queue is the endpoint
// workflows' task queue, where it starts the stats shards.
func NewGate(c client.Client, every time.Duration, timeout func(herald.Endpoint) time.Duration, queue string, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	return &Gate{
		client: c, every: every, timeout: timeout, log: log,
		holder: fmt.Sprintf("worker:%s:%d:%s", host, os.Getpid(), uuid.NewString()[:8]),
		eps:    map[string]*gateEntry{}, queue: queue, counts: map[string]*herald.Report{},
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
				return nil, g.wait(ctx, e, waiter, snap, windowReason(w, time.Now())), nil
			}
		}
		if time.Until(permit.Until) > g.timeout(ep) {
			return &Admission{Endpoint: ep, Ticket: permit.Ticket, Waiter: waiter, Window: permit.Window, entry: e}, nil, nil
		}
		// Too late to use it safely: ask again (the endpoint workflow renews it).
		return nil, g.wait(ctx, e, waiter, snap, "the permit expired before the attempt could start"), nil
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
	reason := snap.Reason
	if tripped && snap.Circuit == policy.CircuitClosed {
		reason = fmt.Sprintf("%d consecutive failures at this worker: the circuit breaker decides", snap.Threshold)
	}
	switch kind {
	case policy.HoldDisabled:
		return nil, disabledHold(snap), nil
	case policy.HoldLease:
		g.kick(e)
		return nil, &herald.Hold{Reason: "this worker's share of the endpoint's cap is growing", Brief: true, Recheck: herald.Duration(g.every)}, nil
	case policy.HoldLater:
		return nil, &herald.Hold{Reason: reason + "; the queue is full", RetryAt: snap.RetryAt, Circuit: snap.Circuit,
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

// wait puts waiter in the endpoint's queue (a signal, shared with the waiters that come
// meanwhile: it returns once the server has it, without waiting for the endpoint
// workflow) and says how long to wait for the permit.
func (g *Gate) wait(ctx context.Context, e *gateEntry, waiter string, snap policy.Snapshot, reason string) *herald.Hold {
	if err := e.waits.add(ctx, waiter); err != nil {
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
	defer g.unref(a.entry)
	a.entry.mu.Lock()
	snap := a.entry.h.Snapshot
	a.entry.mu.Unlock()
	// The grant stays with the endpoint workflow, which takes it back when asked again.
	return g.wait(ctx, a.entry, a.Waiter, snap, windowReason(a.Window, start))
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

// snapshot reads endpoint id's configuration and limiter snapshot (ReadAdmission), within
// askTimeout.
func (g *Gate) snapshot(ctx context.Context, id string) (herald.AdmissionView, error) {
	qctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	return ReadAdmission(qctx, g.client, id)
}

// ReadAdmission reads endpoint id's configuration and limiter snapshot from its workflow's
// memo (a describe: served by the server alone, however busy the workflow is), or, for a
// workflow that does not publish it yet, asks it with a query. An endpoint that is not
// registered is herald.ErrNoEndpoint.
func ReadAdmission(ctx context.Context, c client.Client, id string) (herald.AdmissionView, error) {
	var v herald.AdmissionView
	d, err := c.DescribeWorkflow(ctx, herald.EndpointWorkflowID(id), "")
	if err != nil {
		return v, endpointError(id, "describe", err)
	}
	if d.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return v, endpointError(id, "describe", herald.ErrNoEndpoint)
	}
	if err := d.GetMemoValue(herald.MemoAdmission, &v); err == nil {
		return v, nil
	}
	res, err := c.QueryWorkflow(ctx, herald.EndpointWorkflowID(id), "", herald.QueryAdmission)
	if err == nil {
		err = res.Get(&v)
	}
	if err != nil {
		return v, endpointError(id, "snapshot", err)
	}
	return v, nil
}

// Finish records the attempt's outcome and returns its room. An attempt on a permit of its
// own reports straight to the endpoint workflow; the others are told in the background,
// when they can change a decision. For a failed attempt it also returns its place in the
// retry window (policy.Spread of the endpoint's count of failures at this worker), so that
// failures that come together retry evenly spread.
func (g *Gate) Finish(ctx context.Context, a *Admission, res herald.Result) (spread float64, failed bool) {
	o := policy.Outcome{At: res.StartedAt, OK: res.Delivered(), Latency: res.Duration, Ticket: a.Ticket,
		Gone: res.Outcome == herald.OutcomeHTTPStatus && res.StatusCode == policy.GoneStatus}
	e := a.entry
	defer g.unref(e)
	own := a.Waiter != ""
	e.mu.Lock()
	spread, failed, trip := e.h.Finish(res.Delivered(), own)
	if !own {
		e.outcomes = append(e.outcomes, o)
	}
	settle := e.h.SettleNow()
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
	a.entry.mu.Unlock()
}

// Run renews the leases and reports outcomes every interval until ctx ends, then gives
// the leases back and reports what is left.
func (g *Gate) Run(ctx context.Context) {
	t := time.NewTicker(g.every)
	defer t.Stop()
	var flushed time.Time
	for {
		select {
		case <-ctx.Done():
			g.stopping.Store(true)
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			g.pass(fctx)
			g.flushCounts(fctx)
			cancel()
			return
		case now := <-t.C:
			g.pass(ctx)
			if now.Sub(flushed) >= StatsInterval {
				flushed = now
				g.flushCounts(ctx)
			}
		}
	}
}

// pass is one periodic pass over the endpoints: renew, report or drop each as its local lease says.
func (g *Gate) pass(ctx context.Context) {
	g.mu.Lock()
	entries := make([]*gateEntry, 0, len(g.eps))
	for _, e := range g.eps {
		entries = append(entries, e)
	}
	g.mu.Unlock()
	stopping := g.stopping.Load()
	now := time.Now()
	type task struct {
		e   *gateEntry
		act policy.Action
	}
	var tasks []task
	for _, e := range entries {
		e.mu.Lock()
		act := policy.Wait
		if e.call == nil {
			act = e.h.Background(e.outcomes, e.until.Sub(now) < 2*g.every, stopping, policy.Stale(e.outcomes, now, latencyWindow))
		}
		e.mu.Unlock()
		switch act {
		case policy.Drop:
			g.mu.Lock()
			if e.refs == 0 {
				delete(g.eps, e.id)
			}
			g.mu.Unlock()
		case policy.Renew, policy.Report:
			tasks = append(tasks, task{e, act})
		}
	}
	// In the order of the endpoints' ids: only those with something to tell (a few, where
	// thousands of quiet ones wait for their outcomes to go stale).
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].e.id < tasks[j].e.id })
	sem := make(chan struct{}, renewParallel)
	var wg sync.WaitGroup
	for _, t := range tasks {
		e, act := t.e, t.act
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// One slow endpoint workflow must not hold up the pass for the others.
			tctx, cancel := context.WithTimeout(ctx, tellTimeout)
			defer cancel()
			if err := g.tell(tctx, e, act); err != nil && ctx.Err() == nil {
				g.log.Warn("telling the endpoint workflow failed", "endpoint", e.id, "error", err)
			}
		}()
	}
	wg.Wait()
}

// latencyWindow is how long untold fast outcomes are kept for the endpoint's latency window.
const latencyWindow = 5 * time.Minute

// kick tells the endpoint workflow in the background, unless a call is already in flight:
// a lease renewal when the gate holds a lease or wants one, else a report of its outcomes.
func (g *Gate) kick(e *gateEntry) {
	e.mu.Lock()
	busy := e.call != nil
	act := policy.Report
	if e.h.Permits > 0 || e.h.Demand > 0 || e.h.Growing() || e.h.Settling() {
		act = policy.Renew
	}
	e.mu.Unlock()
	if busy {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), tellTimeout)
		defer cancel()
		if err := g.tell(ctx, e, act); err != nil {
			g.log.Warn("telling the endpoint workflow failed", "endpoint", e.id, "error", err)
		}
	}()
}

// tell renews e's lease (act policy.Renew) or reports its outcomes (act policy.Report), unless another
// call is in flight.
func (g *Gate) tell(ctx context.Context, e *gateEntry, act policy.Action) error {
	e.mu.Lock()
	if e.call != nil {
		e.mu.Unlock()
		return nil
	}
	c := &call{done: make(chan struct{})}
	e.call = c
	outs := e.outcomes
	e.outcomes = nil
	seq := e.h.Seq
	var req herald.LeaseRequest
	if act == policy.Renew {
		want := e.h.Want(g.stopping.Load())
		req = herald.LeaseRequest{
			LeaseRequest: policy.LeaseRequest{Holder: g.holder, InUse: e.h.InUse, Want: want, Outcomes: outs},
		}
		// The lease outlives an attempt admitted at its last moment (see until below).
		req.TTL = duration.Duration(g.timeout(e.ep) + leaseMargin)
		seq = e.h.StartRenewal(want)
		flight := e.h.Flight
		req.Flight = &flight
	}
	e.mu.Unlock()

	sent := time.Now()
	var err error
	var reply herald.LeaseReply
	if act == policy.Renew {
		reply, err = g.lease(ctx, e.id, req)
	} else {
		err = g.client.SignalWorkflow(ctx, herald.EndpointWorkflowID(e.id), "", herald.SignalOutcomes,
			herald.OutcomeReport{Holder: g.holder, Outcomes: outs})
		if err != nil {
			err = endpointError(e.id, "report", err)
		}
	}

	e.mu.Lock()
	switch {
	case err != nil:
		// Keep the outcomes for the next try.
		e.outcomes = append(outs, e.outcomes...)
		if act == policy.Renew {
			e.h.RenewFailed()
		}
	case act == policy.Renew:
		e.ep, e.learned = reply.Endpoint, sent
		e.h.Heard(reply.Snapshot, true, reply.Permits, seq)
		// Stop admitting early enough that an attempt admitted last finishes before the
		// permit returns to the pool (the endpoint workflow starts the lease after sent).
		e.until = sent.Add(req.TTL.Std() - g.timeout(e.ep) - leaseMargin/2)
	default:
		// Told; what was told may change the circuit: ask afresh before the next admission.
		e.h.Told = max(e.h.Told, seq)
		e.learned = time.Time{}
	}
	e.call = nil
	e.mu.Unlock()
	c.finish(err)
	return err
}

// entry returns endpoint id's entry, counting one more user of it; unref when done.
func (g *Gate) entry(id string) *gateEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.eps[id]
	if e == nil {
		e = &gateEntry{id: id, stopping: &g.stopping}
		wid := herald.EndpointWorkflowID(id)
		e.waits.send = func(ctx context.Context, ws []string) error {
			return g.client.SignalWorkflow(ctx, wid, "", herald.SignalWait, herald.WaitRequest{Waiters: ws})
		}
		e.dones.send = func(ctx context.Context, ds []herald.Done) error {
			return g.client.SignalWorkflow(ctx, wid, "", herald.SignalDones, ds)
		}
		g.eps[id] = e
	}
	e.refs++
	return e
}

func (g *Gate) unref(e *gateEntry) {
	g.mu.Lock()
	e.refs--
	g.mu.Unlock()
}

// lease sends one lease update to the endpoint workflow. It runs only in the background:
// no attempt waits for it.
func (g *Gate) lease(ctx context.Context, id string, req herald.LeaseRequest) (herald.LeaseReply, error) {
	var reply herald.LeaseReply
	h, err := g.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   herald.EndpointWorkflowID(id),
		UpdateName:   herald.UpdateLease,
		Args:         []any{req},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &reply)
	}
	if err != nil {
		return reply, endpointError(id, "lease", err)
	}
	return reply, nil
}

// endpointError names what failed; an endpoint that is not registered is herald.ErrNoEndpoint.
func endpointError(id, what string, err error) error {
	if isNotFound(err) || strings.Contains(err.Error(), herald.ErrNoEndpoint.Error()) {
		return fmt.Errorf("endpoint %s: %w: register it first (herald endpoint put, or PUT /v1/endpoints/%s)", id, herald.ErrNoEndpoint, id)
	}
	return fmt.Errorf("endpoint %s: %s: %w", id, what, err)
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

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// count adds one attempt to endpoint id's counts, for the next flush.
func (g *Gate) count(id string, res herald.Result) {
	g.countMu.Lock()
	defer g.countMu.Unlock()
	r := g.counts[id]
	if r == nil {
		r = &herald.Report{}
		g.counts[id] = r
	}
	r.Add(res)
}

// flushCounts sends the counts added up since the last flush to the stats shards, one
// signal per shard (starting it if needed); counts that could not be sent wait for the next.
func (g *Gate) flushCounts(ctx context.Context) {
	g.countMu.Lock()
	counts := g.counts
	g.counts = map[string]*herald.Report{}
	g.countMu.Unlock()
	shards := map[string][]herald.EndpointCounts{}
	for id, r := range counts {
		sid := herald.StatsWorkflowID(id)
		shards[sid] = append(shards[sid], herald.EndpointCounts{Endpoint: id, Counts: *r})
	}
	for sid, batch := range shards {
		sort.Slice(batch, func(i, j int) bool { return batch[i].Endpoint < batch[j].Endpoint })
		sctx, cancel := context.WithTimeout(ctx, tellTimeout)
		_, err := g.client.SignalWithStartWorkflow(sctx, sid, herald.SignalStats, batch, client.StartWorkflowOptions{
			ID: sid, TaskQueue: g.queue, StaticSummary: "attempt counts of the endpoints of " + sid,
		}, herald.StatsWorkflow, struct{}{})
		cancel()
		if err == nil {
			continue
		}
		g.log.Warn("endpoint counts not sent; they go with the next flush", "shard", sid, "error", err)
		g.countMu.Lock()
		for _, c := range batch {
			r := g.counts[c.Endpoint]
			if r == nil {
				r = &herald.Report{}
				g.counts[c.Endpoint] = r
			}
			r.Merge(c.Counts)
		}
		g.countMu.Unlock()
	}
}
