package gate

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

// renewParallel is how many background renewals and reports may be in flight at once.
const renewParallel = 8

// leaseMargin is how much longer than an attempt timeout a lease lasts: a gate that can no
// longer renew stops admitting for half of it before the lease expires.
const leaseMargin = 10 * time.Second

// tellTimeout bounds each renewal or report the gate sends in the background.
const tellTimeout = 10 * time.Second

// Run renews the leases and reports outcomes every interval until ctx ends, then gives
// the leases back and reports what is left.
func (g *Gate) Run(ctx context.Context) {
	t := time.NewTicker(g.every)
	defer t.Stop()
	flushed := time.Now()
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
			if now.Sub(flushed) >= g.statsEvery {
				flushed = now
				g.flushCounts(ctx)
			}
		}
	}
}

// pass is one periodic pass over the endpoints: renew, report or drop each as its local lease says.
func (g *Gate) pass(ctx context.Context) {
	g.mu.Lock()
	entries := make([]*gateEntry, 0, len(g.entries))
	for _, e := range g.entries {
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
			act = e.h.RateAction(act, stopping, now)
		}
		e.mu.Unlock()
		switch act {
		case policy.Drop:
			g.mu.Lock()
			if e.refs == 0 {
				delete(g.entries, e.id)
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
	if e.h.Permits > 0 || e.h.Demand > 0 || e.h.Growing() || e.h.Settling() || e.h.RateWant(false, time.Now()) > 0 || e.h.Waiting() {
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

// tell renews e's lease (act Renew) or reports its outcomes (act policy.Report), unless another
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
		req.RateWant = e.h.RateWant(g.stopping.Load(), time.Now())
		e.h.Rate.Asking()
		seq = e.h.StartRenewal(want)
		flight := e.h.Flight
		req.Flight = &flight
		req.Passed, req.Passing = e.passed, e.h.Passing
		e.passed, e.h.Passed = nil, 0
	}
	e.mu.Unlock()

	sent := time.Now()
	var err error
	var reply herald.LeaseReply
	if act == policy.Renew {
		reply, err = g.calls.Lease(ctx, e.id, req)
	} else {
		err = g.calls.Outcomes(ctx, e.id, herald.OutcomeReport{Holder: g.holder, Outcomes: outs})
	}

	e.mu.Lock()
	switch {
	case err != nil:
		// Keep the outcomes for the next try.
		e.outcomes = append(outs, e.outcomes...)
		if act == policy.Renew {
			e.h.RenewFailed()
			// Report the passes with the next try.
			e.passed = append(req.Passed, e.passed...)
			e.h.Passed = len(e.passed)
		}
	case act == policy.Renew:
		e.ep, e.learned = reply.Endpoint, sent
		e.h.Heard(reply.Snapshot, true, reply.Permits, seq)
		e.h.Rate.Heard(reply.Rate, reply.RateExpect, time.Now())
		// Stop admitting early enough that an attempt admitted last finishes before the
		// permit returns to the pool (the endpoint workflow starts the lease after sent).
		e.until = sent.Add(req.TTL.Std() - g.timeout(e.ep) - leaseMargin/2)
	default:
		// Told; what was told may change the circuit: ask afresh before the next admission.
		e.h.Told = max(e.h.Told, seq)
		e.learned = time.Time{}
	}
	e.call = nil
	e.notifyLocked()
	again, report := e.h.AfterTell(req.Passing, act == policy.Renew)
	e.mu.Unlock()
	c.finish(err)
	switch {
	case err != nil: // the periodic pass tries again
	case again:
		g.kick(e)
	case report:
		g.reportPasses(e)
	}
	return err
}

// reportPasses renews e's lease within g.passReport (policy.PassReportDelay) to report the
// passes used at e: those used meanwhile go with the same renewal. A renewal due already
// takes them.
func (g *Gate) reportPasses(e *gateEntry) {
	e.mu.Lock()
	due := e.reportDue
	e.reportDue = true
	e.mu.Unlock()
	if due {
		return
	}
	time.AfterFunc(g.passReport, func() {
		e.mu.Lock()
		e.reportDue = false
		e.mu.Unlock()
		if g.stopping.Load() {
			return // the gate's last pass (Run) reports what is left
		}
		g.kick(e)
	})
}
