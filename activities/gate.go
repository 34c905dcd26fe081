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
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald/policy"
)

// Gate is a worker's local gate in front of every endpoint. It admits attempts against
// permits leased in blocks from the endpoint workflows, so a healthy endpoint under its cap
// costs no round trip per attempt; it renews the leases in the background, carrying the
// outcomes seen since the last renewal; and it stops admitting to an endpoint at once when
// it sees the breaker's trigger (consecutive failures), before the endpoint workflow has
// heard of them. Attempts it cannot admit are handed to the endpoint workflow, which
// grants them a permit of their own or queues them.
type Gate struct {
	client  client.Client
	holder  string
	every   time.Duration
	timeout func(Endpoint) time.Duration
	log     *slog.Logger
	// stopping: the worker is shutting down; admit nothing more.
	stopping atomic.Bool

	mu  sync.Mutex
	eps map[string]*gateEntry
}

// gateEntry is the gate's view of one endpoint: the lease's decisions (policy.Holding),
// and what only the gate has: the clock, the configuration and the outcomes to report.
type gateEntry struct {
	id       string
	stopping *atomic.Bool
	refs     int // attempts using the entry (guarded by Gate.mu): it is not dropped while used

	mu       sync.Mutex
	h        policy.Holding
	ep       Endpoint
	until    time.Time // admit nothing new after this (local clock)
	outcomes []policy.Outcome
	report   Report
	call     *leaseCall // the renewal in flight, if any
	renewed  time.Time  // when the last renewal was answered
	waiting  int        // acquirers waiting for a renewal
}

// renewParallel is how many background renewals may be in flight at once.
const renewParallel = 8

// leaseMargin is how much longer than an attempt timeout a lease lasts: a gate that can no
// longer renew stops admitting for half of it before the lease expires.
const leaseMargin = 10 * time.Second

// leaseCall is one renewal in flight; concurrent acquirers wait on it.
type leaseCall struct {
	done chan struct{}
	err  error
}

// NewGate returns a gate that renews its leases every interval through c. timeout gives
// an endpoint's attempt timeout (leases outlive it, so a running attempt keeps its permit).
func NewGate(c client.Client, every time.Duration, timeout func(Endpoint) time.Duration, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	return &Gate{
		client: c, every: every, timeout: timeout, log: log,
		holder: fmt.Sprintf("worker:%s:%d:%s", host, os.Getpid(), uuid.NewString()[:8]),
		eps:    map[string]*gateEntry{},
	}
}

// Holder is the id this gate's leases are held under.
func (g *Gate) Holder() string { return g.holder }

// Admission is an attempt let through by the gate; pass it to Finish.
type Admission struct {
	Endpoint Endpoint
	Ticket   policy.Ticket
	// Waiter is set when the attempt runs on a permit of its own (not the gate's lease).
	Waiter string
	entry  *gateEntry
}

// Acquire admits one attempt to endpoint id, or says why it must wait. waiter is the
// delivery's workflow id, used when the endpoint workflow must queue it; permit is a
// permit of its own the delivery was handed, if any. fresh forces a renewal first, so that
// the attempt uses the endpoint's current configuration.
func (g *Gate) Acquire(ctx context.Context, id, waiter string, permit *Permit, fresh bool) (*Admission, *Hold, error) {
	e := g.entry(id)
	a, h, err := g.acquire(ctx, e, waiter, permit, fresh)
	if a == nil {
		g.unref(e)
	}
	return a, h, err
}

func (g *Gate) acquire(ctx context.Context, e *gateEntry, waiter string, permit *Permit, fresh bool) (*Admission, *Hold, error) {
	if fresh || permit != nil {
		// A retry, or a delivery woken with a permit of its own: make sure the
		// configuration is current (it is, if the lease was renewed a moment ago).
		if err := g.refresh(ctx, e); err != nil {
			return nil, nil, err
		}
	}
	if permit != nil {
		e.mu.Lock()
		ep := e.ep
		e.mu.Unlock()
		if time.Until(permit.Until) > g.timeout(ep) {
			return &Admission{Endpoint: ep, Ticket: permit.Ticket, Waiter: waiter, entry: e}, nil, nil
		}
		// Too late to use it safely: ask again (the endpoint workflow renews it).
	} else if a := e.admit(); a != nil {
		return a, nil, nil
	}
	e.mu.Lock()
	e.waiting++
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.waiting--
		e.mu.Unlock()
	}()
	for calls := 0; ; {
		reply, err := g.renewWith(ctx, e, waiter)
		if err != nil {
			return nil, nil, err
		}
		if reply == nil { // another attempt's renewal ran meanwhile: try its lease
			if a := e.admit(); a != nil {
				return a, nil, nil
			}
			continue
		}
		calls++
		for _, w := range reply.Waiters {
			if w.Waiter != waiter {
				continue
			}
			switch {
			case w.Covered:
				if a := e.admit(); a != nil {
					return a, nil, nil
				}
			case w.Granted:
				return &Admission{Endpoint: reply.Endpoint, Ticket: w.Ticket, Waiter: waiter, entry: e}, nil, nil
			default:
				return nil, &Hold{Reason: w.Reason, Queued: w.Queued, Position: w.Position, RetryAt: w.RetryAt}, nil
			}
		}
		if calls > 3 {
			return nil, &Hold{Reason: "no permit yet", RetryAt: time.Now().Add(time.Second)}, nil
		}
	}
}

// refresh renews e's lease unless it was renewed within the renewal interval.
func (g *Gate) refresh(ctx context.Context, e *gateEntry) error {
	e.mu.Lock()
	recent := e.h.Known && time.Since(e.renewed) < g.every
	e.mu.Unlock()
	if recent {
		return nil
	}
	return g.renew(ctx, e, "")
}

// admit takes a permit from the local lease, or returns nil.
func (e *gateEntry) admit() *Admission {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.h.Admit(time.Now().Before(e.until), e.stopping.Load()) {
		return nil
	}
	return &Admission{Endpoint: e.ep, Ticket: e.h.Ticket, entry: e}
}

// Finish returns the attempt's permit with its result. An attempt on a permit of its own
// reports straight to the endpoint workflow; the others wait for the next renewal. For a
// failed attempt it also returns its place in the retry window (policy.Spread of the
// endpoint's count of failures at this worker), so that failures that come together
// retry evenly spread.
func (g *Gate) Finish(ctx context.Context, a *Admission, res Result) (spread float64, failed bool) {
	o := policy.Outcome{At: res.StartedAt, OK: res.Delivered(), Latency: res.Duration, Ticket: a.Ticket}
	e := a.entry
	defer g.unref(e)
	e.mu.Lock()
	spread, failed, trip := e.h.Finish(res.Delivered(), a.Waiter == "")
	if a.Waiter == "" {
		e.outcomes = append(e.outcomes, o)
		e.report.Add(res)
	}
	e.mu.Unlock()
	if a.Waiter != "" {
		var rep Report
		rep.Add(res)
		err := g.client.SignalWorkflow(ctx, EndpointWorkflowID(e.id), "", SignalDone, Done{Waiter: a.Waiter, Outcome: &o, Report: rep})
		if err != nil {
			g.log.Warn("return of a permit not delivered; it expires on its own", "endpoint", e.id, "waiter", a.Waiter, "error", err)
		}
	}
	if trip {
		// Tell the endpoint workflow now, not at the next renewal.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = g.renew(ctx, e, "")
		}()
	}
	return spread, failed
}

// Release returns an admitted attempt's permit without an outcome: the attempt did not run
// to an answer (the worker is stopping).
func (g *Gate) Release(ctx context.Context, a *Admission) {
	defer g.unref(a.entry)
	if a.Waiter != "" {
		err := g.client.SignalWorkflow(ctx, EndpointWorkflowID(a.entry.id), "", SignalDone, Done{Waiter: a.Waiter})
		if err != nil {
			g.log.Warn("return of a permit not delivered; it expires on its own", "endpoint", a.entry.id, "waiter", a.Waiter, "error", err)
		}
		return
	}
	a.entry.mu.Lock()
	a.entry.h.Release()
	a.entry.mu.Unlock()
}

// Run renews the leases every interval until ctx ends, then gives them back.
func (g *Gate) Run(ctx context.Context) {
	t := time.NewTicker(g.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			g.stopping.Store(true)
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			g.renewAll(fctx)
			cancel()
			return
		case <-t.C:
			g.renewAll(ctx)
		}
	}
}

func (g *Gate) renewAll(ctx context.Context) {
	g.mu.Lock()
	entries := make([]*gateEntry, 0, len(g.eps))
	for _, e := range g.eps {
		entries = append(entries, e)
	}
	g.mu.Unlock()
	sort.Slice(entries, func(i, j int) bool { return entries[i].id < entries[j].id })
	stopping := g.stopping.Load()
	sem := make(chan struct{}, renewParallel)
	var wg sync.WaitGroup
	for _, e := range entries {
		e.mu.Lock()
		pending := len(e.outcomes) > 0 || e.report.Attempts > 0
		renew, drop := e.h.Background(pending, time.Until(e.until) < 2*g.every, stopping)
		renew = renew && e.call == nil
		e.mu.Unlock()
		if drop {
			g.mu.Lock()
			if e.refs == 0 {
				delete(g.eps, e.id)
			}
			g.mu.Unlock()
			continue
		}
		if !renew {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := g.renew(ctx, e, ""); err != nil && ctx.Err() == nil {
				g.log.Warn("lease renewal failed", "endpoint", e.id, "error", err)
			}
		}()
	}
	wg.Wait()
}

// entry returns endpoint id's entry, counting one more user of it; unref when done.
func (g *Gate) entry(id string) *gateEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.eps[id]
	if e == nil {
		e = &gateEntry{id: id, stopping: &g.stopping}
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

// renew renews e's lease, or waits for the renewal already in flight.
func (g *Gate) renew(ctx context.Context, e *gateEntry, waiter string) error {
	_, err := g.renewWith(ctx, e, waiter)
	return err
}

// renewWith sends one lease request carrying waiter (if any) and returns the reply. When
// another renewal is already in flight and waiter is empty, it waits for that one and
// returns a nil reply.
func (g *Gate) renewWith(ctx context.Context, e *gateEntry, waiter string) (*LeaseReply, error) {
	for {
		e.mu.Lock()
		call := e.call
		if call == nil {
			break
		}
		e.mu.Unlock()
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, call.err
	}
	call := &leaseCall{done: make(chan struct{})}
	e.call = call
	want := e.h.Want(e.waiting, g.stopping.Load())
	req := LeaseRequest{
		LeaseRequest: policy.LeaseRequest{Holder: g.holder, InUse: e.h.InUse, Want: want, Outcomes: e.outcomes},
		Report:       e.report,
	}
	if waiter != "" {
		req.Waiters = []string{waiter}
	}
	// The lease outlives an attempt admitted at its last moment (see until below).
	req.TTL = g.timeout(e.ep) + leaseMargin
	e.outcomes, e.report = nil, Report{}
	sentSeq := e.h.StartRenewal(want)
	e.mu.Unlock()

	sent := time.Now()
	reply, err := g.lease(ctx, e.id, req)

	e.mu.Lock()
	if err != nil {
		// Keep the outcomes for the next renewal.
		e.outcomes = append(req.Outcomes, e.outcomes...)
		e.report.Merge(req.Report)
		e.h.RenewFailed()
	} else {
		e.ep, e.renewed = reply.Endpoint, time.Now()
		e.h.Renewed(reply.Permits, reply.Ticket, reply.Circuit, reply.Threshold, sentSeq)
		// Stop admitting early enough that an attempt admitted last finishes before the
		// permit returns to the pool (the endpoint workflow starts the lease after sent).
		e.until = sent.Add(req.TTL - g.timeout(e.ep) - leaseMargin/2)
	}
	e.call = nil
	e.mu.Unlock()
	call.err = err
	close(call.done)
	if err != nil {
		return nil, err
	}
	return &reply, nil
}

// lease sends one lease update to the endpoint workflow.
func (g *Gate) lease(ctx context.Context, id string, req LeaseRequest) (LeaseReply, error) {
	var reply LeaseReply
	h, err := g.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   EndpointWorkflowID(id),
		UpdateName:   UpdateLease,
		Args:         []any{req},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &reply)
	}
	if err != nil {
		if isNotFound(err) || strings.Contains(err.Error(), ErrNoEndpoint.Error()) {
			return reply, fmt.Errorf("endpoint %s: %w: register it with `herald endpoint put %s --url URL`", id, ErrNoEndpoint, id)
		}
		return reply, fmt.Errorf("endpoint %s: lease: %w", id, err)
	}
	return reply, nil
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
