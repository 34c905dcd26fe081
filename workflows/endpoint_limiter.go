package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// runLimiter is the endpoint workflow as the authority that protects its endpoint: it leases
// permits to the workers' gates, aggregates their outcomes into the circuit breaker and the
// adaptive cap, and holds the durable queue of deliveries waiting for a permit, waking them
// through the gate. Every decision is policy.Limiter's; this loop only moves messages and
// sets the one timer the limiter asks for.
func (e *endpointRun) runLimiter(ctx workflow.Context, reports workflow.ReceiveChannel) error {
	dones := workflow.GetSignalChannel(ctx, herald.SignalDone)
	waits := workflow.GetSignalChannel(ctx, herald.SignalWait)
	doneBatches := workflow.GetSignalChannel(ctx, herald.SignalDones)
	outcomes := workflow.GetSignalChannel(ctx, herald.SignalOutcomes)
	if err := workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateLease, e.lease,
		workflow.UpdateHandlerOptions{Validator: e.validateLease}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, herald.UpdateReset, e.reset); err != nil {
		return err
	}
	if e.in.Endpoint == nil {
		ok, err := workflow.AwaitWithTimeout(ctx, unregisteredLifetime, func() bool { return e.in.Endpoint != nil })
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
	}
	e.keepRateLimit(ctx)
	e.ensureLimiter()
	publish := workflow.GetVersion(ctx, versionAdmissionMemo, workflow.DefaultVersion, 1) == 1
	lifecycle := workflow.GetVersion(ctx, versionEndpointLifecycle, workflow.DefaultVersion, 1) == 1
	if lifecycle {
		e.in.Limiter.Lifecycle = true
		if err := e.lifecycleHandlers(ctx); err != nil {
			return err
		}
	}
	if workflow.GetVersion(ctx, versionKeepFlight, workflow.DefaultVersion, 1) == 1 {
		e.in.Limiter.KeepFlight = true
	}
	gauges := newEndpointGauges(ctx, e.in.ID)

	drain := func(ctx workflow.Context) {
		// Outcomes first, so that the breaker has heard them before waiters are let go.
		var o herald.OutcomeReport
		for outcomes.ReceiveAsync(&o) {
			e.in.Limiter.Record(workflow.Now(ctx), o.Outcomes)
			o = herald.OutcomeReport{}
		}
		var r herald.Report
		for reports.ReceiveAsync(&r) { // from workers of the version before the gate
			e.in.Counters.Merge(r)
			r = herald.Report{}
		}
		var d herald.Done
		for dones.ReceiveAsync(&d) {
			e.in.Limiter.Done(workflow.Now(ctx), d.Waiter, d.Outcome)
			e.in.Counters.Merge(d.Report)
			d = herald.Done{}
		}
		var ds []herald.Done
		for doneBatches.ReceiveAsync(&ds) {
			for _, d := range ds {
				e.in.Limiter.Done(workflow.Now(ctx), d.Waiter, d.Outcome)
			}
			ds = nil
		}
		var w herald.WaitRequest
		for waits.ReceiveAsync(&w) {
			for _, waiter := range w.Waiters {
				if wk, ok := e.in.Limiter.Wait(workflow.Now(ctx), waiter); ok {
					e.wake(ctx, wk)
				}
			}
			w = herald.WaitRequest{}
		}
	}
	var (
		timerAt     time.Time
		fired       bool
		cancelTimer workflow.CancelFunc
	)
	for {
		now := workflow.Now(ctx)
		e.expirePreviousSecret(now)
		for _, w := range e.in.Limiter.Tick(now) {
			e.wake(ctx, w)
		}
		circuit, disabled := e.in.Circuit, e.in.Disabled
		e.showCircuit(ctx)
		if lifecycle {
			e.showDisabled(ctx)
			e.emitTransitions(ctx, circuit, disabled)
		}
		if publish {
			e.publishAdmission(ctx, now)
		}
		gauges.set(e.in.Limiter.View(now))

		next := e.in.Limiter.NextDeadline(now)
		if ep := e.in.Endpoint; ep.PreviousSecret != "" && (next.IsZero() || ep.PreviousUntil.Before(next)) {
			next = ep.PreviousUntil
		}
		if !next.IsZero() && (timerAt.IsZero() || next.Before(timerAt)) {
			if cancelTimer != nil {
				cancelTimer()
			}
			var tctx workflow.Context
			tctx, cancelTimer = workflow.WithCancel(ctx)
			timer := workflow.NewTimerWithOptions(tctx, max(next.Sub(now), time.Millisecond),
				workflow.TimerOptions{Summary: "next deadline: lease expiry, probe or secret rotation"})
			timerAt, fired = next, false
			workflow.Go(ctx, func(gctx workflow.Context) {
				if timer.Get(gctx, nil) == nil {
					fired = true
				}
			})
		}

		e.dirty = false
		err := workflow.Await(ctx, func() bool {
			return e.dirty || fired || reports.Len() > 0 || dones.Len() > 0 || doneBatches.Len() > 0 || waits.Len() > 0 ||
				outcomes.Len() > 0 || e.continueAsNew(ctx)
		})
		if err != nil {
			return err
		}
		if fired {
			timerAt, fired, cancelTimer = time.Time{}, false, nil
		}
		drain(ctx)
		if e.continueAsNew(ctx) {
			if cancelTimer != nil {
				cancelTimer()
			}
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			drain(ctx)
			// Permits handed out by the last drain, and operational events, go out before
			// this run ends.
			if err := workflow.Await(ctx, func() bool { return e.waking == 0 && e.emitting == 0 }); err != nil {
				return err
			}
			return e.continueAsNewError(ctx)
		}
	}
}

// keepRateLimit drops the endpoint's rate limit in a run whose history was made by a
// worker that knew no rate limits (versionRateLimit): that worker ignored it, and so does
// its replay.
func (e *endpointRun) keepRateLimit(ctx workflow.Context) {
	ep := e.in.Endpoint
	if ep == nil || ep.Overrides.RateLimit == nil {
		return
	}
	if workflow.GetVersion(ctx, versionRateLimit, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		ep.Overrides.RateLimit = nil
	}
}

// ensureLimiter creates the limiter, or brings its settings in line with the endpoint's.
func (e *endpointRun) ensureLimiter() {
	cfg := e.in.Endpoint.Overrides.Limiter()
	if e.in.Limiter == nil {
		g := policy.NewLimiter(cfg)
		e.in.Limiter = &g
		return
	}
	// The overrides were validated by the put that set them.
	_ = e.in.Limiter.Reconfigure(cfg)
}

func (e *endpointRun) validateLease(ctx workflow.Context, req herald.LeaseRequest) error {
	if e.in.Endpoint == nil || e.in.Limiter == nil {
		return fmt.Errorf("endpoint %s: %w", e.in.ID, herald.ErrNoEndpoint)
	}
	return nil
}

// lease answers a worker's gate: its permits, its waiters, and the configuration.
func (e *endpointRun) lease(ctx workflow.Context, req herald.LeaseRequest) (herald.LeaseReply, error) {
	now := workflow.Now(ctx)
	e.in.Counters.Merge(req.Report)
	r := e.in.Limiter.Lease(now, req.LeaseRequest)
	e.dirty = true
	return herald.LeaseReply{
		LeaseReply: r,
		Endpoint:   *e.in.Endpoint,
		Threshold:  e.in.Limiter.Config.Breaker.ConsecutiveFailures,
		Snapshot:   e.in.Limiter.Snapshot(now),
	}, nil
}

// reset closes the circuit by hand.
func (e *endpointRun) reset(ctx workflow.Context) (herald.EndpointState, error) {
	if e.in.Limiter == nil {
		return herald.EndpointState{}, fmt.Errorf("endpoint %s: %w", e.in.ID, herald.ErrNoEndpoint)
	}
	e.in.Limiter.Reset(workflow.Now(ctx))
	e.dirty = true
	return e.view(workflow.Now(ctx)), nil
}

// wake hands waiter w its permit. A delivery that is gone gives the permit back.
func (e *endpointRun) wake(ctx workflow.Context, w policy.Grant) {
	f := workflow.SignalExternalWorkflow(ctx, w.Waiter, "", herald.SignalPermit,
		policy.Grant{Ticket: w.Ticket, Until: w.Until, Window: w.Window, Disabled: w.Disabled})
	e.waking++
	workflow.Go(ctx, func(gctx workflow.Context) {
		defer func() { e.waking-- }()
		if err := f.Get(gctx, nil); err != nil {
			e.in.Limiter.Done(workflow.Now(gctx), w.Waiter, nil)
			e.dirty = true
		}
	})
}

// showCircuit writes a changed circuit state to the HeraldCircuit search attribute (set
// first when the endpoint is registered: listings show registered endpoints only).
func (e *endpointRun) showCircuit(ctx workflow.Context) {
	if s := e.in.Limiter.Breaker.State(); s != e.in.Circuit {
		e.in.Circuit = s
		_ = workflow.UpsertTypedSearchAttributes(ctx, herald.AttrCircuit.ValueSet(string(s)))
	}
}

// expirePreviousSecret forgets the previous secret once its grace period has ended.
func (e *endpointRun) expirePreviousSecret(now time.Time) {
	if ep := e.in.Endpoint; ep != nil && ep.PreviousSecret != "" && !now.Before(ep.PreviousUntil) {
		ep.PreviousSecret, ep.PreviousUntil = "", time.Time{}
	}
}

// continueAsNewError continues the run as new on the endpoints' own task queue (runs
// started before endpoints had one move there now), keeping the whole state.
func (e *endpointRun) continueAsNewError(ctx workflow.Context) error {
	if workflow.GetVersion(ctx, versionOwnQueue, workflow.DefaultVersion, 1) == 1 {
		ctx = workflow.WithWorkflowTaskQueue(ctx, herald.EndpointTaskQueue(workflow.GetInfo(ctx).TaskQueueName))
	}
	return workflow.NewContinueAsNewError(ctx, herald.EndpointWorkflow, e.in)
}

// publishAdmission writes what the workers' gates read before admitting — the configuration
// and the limiter's coarse snapshot — to the memo, when it has changed. At most one event per
// workflow task, and none while a quiet endpoint stays as it is.
func (e *endpointRun) publishAdmission(ctx workflow.Context, now time.Time) {
	v, err := e.admission(now)
	if err != nil {
		return
	}
	v.Snapshot = v.Snapshot.Coarse()
	b, err := json.Marshal(v)
	if err != nil || bytes.Equal(b, e.published) {
		return
	}
	e.published = b
	// Upsert fails only on a memo it cannot encode; the gates then ask with a query.
	_ = workflow.UpsertMemo(ctx, map[string]any{herald.MemoAdmission: v})
}
