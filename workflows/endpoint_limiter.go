package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
)

// runLimiter is the endpoint workflow as the authority that protects its endpoint: it leases
// permits to the workers' gates, aggregates their outcomes into the circuit breaker and the
// adaptive cap, and holds the durable queue of deliveries waiting for a permit, waking them
// through the gate. Every decision is policy.Limiter's; this loop only moves messages and
// sets the one timer the limiter asks for.
func (e *endpointRun) runLimiter(ctx workflow.Context) error {
	l := &limiterLoop{
		e:        e,
		outcomes: workflow.GetSignalChannel(ctx, herald.SignalOutcomes),
		dones:    workflow.GetSignalChannel(ctx, herald.SignalDones),
		waits:    workflow.GetSignalChannel(ctx, herald.SignalWait),
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateLease, e.lease,
		workflow.UpdateHandlerOptions{Validator: e.validateLease}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, herald.UpdateReset, e.reset); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, herald.QueryHolding, e.holding); err != nil {
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
	e.ensureLimiter()
	if err := e.lifecycleHandlers(ctx); err != nil {
		return err
	}
	l.gauges = newEndpointGauges(ctx, e.in.ID)
	return l.run(ctx)
}

// limiterLoop is the endpoint run's main loop: each pass lets the limiter act on the time
// (Tick), shows what changed, sets the timer for the limiter's next deadline, waits for a
// message or the timer, and hands the messages to the limiter.
type limiterLoop struct {
	e *endpointRun
	// outcomes, dones and waits are the gates' signals (herald.SignalOutcomes,
	// SignalDones, SignalWait).
	outcomes, dones, waits workflow.ReceiveChannel
	gauges                 *endpointGauges
	timer                  deadlineTimer
	// nudgeAsked is set once versionNudgeOverflow was asked, nudges when it answered 1;
	// nudging is set while a nudge runs (nudgeOverflow).
	nudgeAsked, nudges, nudging bool
}

func (l *limiterLoop) run(ctx workflow.Context) error {
	e := l.e
	for {
		now := workflow.Now(ctx)
		e.leaseRates(ctx)
		e.drainRates(ctx)
		l.tick(ctx, now)
		l.timer.set(ctx, l.nextDeadline(now), now)

		e.dirty = false
		if err := workflow.Await(ctx, l.ready(ctx)); err != nil {
			return err
		}
		l.timer.take()
		l.drain(ctx)
		if e.continueAsNew(ctx) {
			return l.finish(ctx)
		}
	}
}

// tick wakes the waiters whose permits are due at now, and shows what changed: the
// circuit and lifecycle search attributes, their operational events, the admission memo
// and the gauges.
func (l *limiterLoop) tick(ctx workflow.Context, now time.Time) {
	e := l.e
	e.expirePreviousSecret(now)
	var passes []policy.Grant
	for _, w := range e.wakes(ctx, now) {
		if w.Pass && e.passUpdate(ctx) {
			passes = append(passes, w)
			continue
		}
		e.wake(ctx, w)
	}
	e.wakePasses(ctx, passes)
	e.recover(ctx, now)
	circuit, disabled := e.in.Circuit, e.in.Disabled
	e.showCircuit(ctx)
	e.showDisabled(ctx)
	e.emitTransitions(ctx, circuit, disabled)
	e.publishAdmission(ctx, now)
	l.gauges.set(e.in.Limiter.View(now))
	l.nudgeOverflow(ctx, now)
}

// nudgeOverflow notes a full queue and, when the limiter says the deliveries turned away
// from it are due a nudge, starts one (activities.Operator.NudgeWaiting) in a goroutine
// of its own, so that neither the loop nor a continue-as-new waits for it; its end wakes
// the loop.
func (l *limiterLoop) nudgeOverflow(ctx workflow.Context, now time.Time) {
	lim := l.e.in.Limiter
	if !lim.Overflowing() {
		return
	}
	if !l.nudgeAsked {
		l.nudgeAsked = true
		l.nudges = workflow.GetVersion(ctx, versionNudgeOverflow, workflow.DefaultVersion, 1) == 1
	}
	if !l.nudges {
		return
	}
	lim.NoteFull(now)
	n := lim.NudgeDue(now)
	if n == 0 || l.nudging {
		return
	}
	l.nudging = true
	// A run that continues as new meanwhile leaves the nudge behind (its waits must not
	// stop the permits); the next run nudges again once NudgeEvery has passed.
	lim.NudgeStarted(now)
	workflow.Go(ctx, func(gctx workflow.Context) {
		defer func() { l.nudging = false; l.e.dirty = true }()
		var op *activities.Operator
		var c herald.NudgeCount
		actx := workflow.WithActivityOptions(gctx, nudgeOptions)
		err := workflow.ExecuteActivity(actx, op.NudgeWaiting,
			herald.NudgeRequest{Endpoint: l.e.in.ID, Limit: n, Window: policy.NudgeWindow}).Get(gctx, &c)
		if err != nil {
			workflow.GetLogger(gctx).Warn("nudge of the deliveries turned away by the full queue failed", "endpoint", l.e.in.ID, "error", err)
		}
		lim.Nudged(workflow.Now(gctx), now, n, c.Found, err == nil)
	})
}

// nudgeOptions are the options of the nudge activity: a few tries, each bounded; the
// next nudge is NudgeEvery after a failed one.
var nudgeOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	Summary:             "nudge the deliveries turned away by the full queue",
}

// holding answers QueryHolding: which of waiters the limiter holds.
func (e *endpointRun) holding(waiters []string) ([]string, error) {
	var held []string
	if lim := e.in.Limiter; lim != nil {
		for _, w := range waiters {
			if lim.Holds(w) {
				held = append(held, w)
			}
		}
	}
	return held, nil
}

// nextDeadline is when the loop must run again without a message: the limiter's next
// deadline, or the end of a secret rotation's grace period if sooner (zero: none).
func (l *limiterLoop) nextDeadline(now time.Time) time.Time {
	next := l.e.in.Limiter.NextDeadline(now)
	if ep := l.e.in.Endpoint; ep.PreviousSecret != "" && (next.IsZero() || ep.PreviousUntil.Before(next)) {
		next = ep.PreviousUntil
	}
	return next
}

// ready is the loop's wait condition: a message, a change by a handler, the timer, or the
// time to continue as new.
func (l *limiterLoop) ready(ctx workflow.Context) func() bool {
	return func() bool {
		return l.e.dirty || l.timer.fired || l.dones.Len() > 0 || l.waits.Len() > 0 ||
			l.outcomes.Len() > 0 || l.e.continueAsNew(ctx)
	}
}

// lateDones reports whether an outcome that comes after its waiter asked again leaves the
// waiter's new request standing (versionLateDones; asked at the first outcome of a run).
func (l *limiterLoop) lateDones(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, versionLateDones, workflow.DefaultVersion, 1) == 1
}

// waitOnce reports whether the same wait sent again (its key answered by the permit or pass
// its waiter holds) brings it nothing new (versionWaitOnce; asked the first time one comes
// in a run).
func (l *limiterLoop) waitOnce(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, versionWaitOnce, workflow.DefaultVersion, 1) == 1
}

// queueOverflow reports whether a waiter that comes to a full queue is queued all the same
// (versionQueueOverflow; asked the first time a wait finds the queue full).
func (l *limiterLoop) queueOverflow(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, versionQueueOverflow, workflow.DefaultVersion, 1) == 1
}

// pending reports whether a gate's signal waits to be handed to the limiter (drain).
func (l *limiterLoop) pending() bool {
	return l.dones.Len() > 0 || l.waits.Len() > 0 || l.outcomes.Len() > 0
}

// drain hands every signal received to the limiter: outcomes first, so that the breaker
// has heard them before waiters are let go, then returned permits, then new waiters.
func (l *limiterLoop) drain(ctx workflow.Context) {
	lim := l.e.in.Limiter
	var o herald.OutcomeReport
	for l.outcomes.ReceiveAsync(&o) {
		lim.Record(workflow.Now(ctx), o.Outcomes)
		o = herald.OutcomeReport{}
	}
	var ds []herald.Done
	for l.dones.ReceiveAsync(&ds) {
		for _, d := range ds {
			if !d.Refused.IsZero() {
				lim.Refused(d.Waiter, d.Refused)
				continue
			}
			if d.Outcome != nil && !l.lateDones(ctx) {
				lim.DoneDequeuing(workflow.Now(ctx), d.Waiter, d.Outcome)
				continue
			}
			lim.Done(workflow.Now(ctx), d.Waiter, d.Outcome)
		}
		ds = nil
	}
	var w herald.WaitRequest
	for l.waits.ReceiveAsync(&w) {
		for i, waiter := range w.Waiters {
			now, key := workflow.Now(ctx), w.Key(i)
			if !slices.Contains(w.Renew, waiter) && lim.Answered(now, waiter, key) && l.waitOnce(ctx) {
				// The same wait again: the permit or pass that answers it is on its way.
				lim.Renew(now, waiter)
				continue
			}
			wait := lim.Wait
			if lim.QueueFull() && !l.queueOverflow(ctx) {
				wait = lim.WaitRefusingWhenFull
			}
			wk, ok := wait(workflow.Now(ctx), waiter)
			lim.NoteKey(waiter, key)
			if ok {
				l.e.wake(ctx, wk)
			}
		}
		w = herald.WaitRequest{}
	}
}

// finish ends the run to continue as new: it stops the timer, lets the handlers finish,
// takes the last signals, and waits until the permits handed out and the operational
// events have gone, taking the signals that come meanwhile (versionDrainBeforeContinue):
// a run ends only in a workflow task that leaves no signal unread, so that every waiter
// that asked is granted or carried in the queue into the next run.
func (l *limiterLoop) finish(ctx workflow.Context) error {
	e := l.e
	l.timer.stop()
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	l.drain(ctx)
	if workflow.GetVersion(ctx, versionDrainBeforeContinue, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		// Before: the signals that came while the permits went were left unread, and lost.
		if err := workflow.Await(ctx, func() bool { return e.waking == 0 && e.emitting == 0 && !e.probing }); err != nil {
			return err
		}
	} else {
		for {
			if err := workflow.Await(ctx, func() bool { return e.waking == 0 && e.emitting == 0 && !e.probing || l.pending() }); err != nil {
				return err
			}
			if !l.pending() && e.waking == 0 && e.emitting == 0 && !e.probing && workflow.AllHandlersFinished(ctx) {
				break
			}
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			l.drain(ctx)
		}
	}
	// Counts that came in this workflow task, which the counts coroutine may not have
	// run for yet: they are not sent again.
	e.drainCounts()
	return e.continueAsNewError(ctx)
}

// deadlineTimer is the loop's one timer, set for the earliest deadline it was asked for. A
// sooner deadline cancels it and starts another; fired is set when it goes off.
type deadlineTimer struct {
	at     time.Time
	fired  bool
	cancel workflow.CancelFunc
}

// set starts the timer for next (zero: none) unless one is set already for that time or
// sooner.
func (t *deadlineTimer) set(ctx workflow.Context, next, now time.Time) {
	if next.IsZero() || (!t.at.IsZero() && !next.Before(t.at)) {
		return
	}
	t.stop()
	var tctx workflow.Context
	tctx, t.cancel = workflow.WithCancel(ctx)
	timer := workflow.NewTimerWithOptions(tctx, max(next.Sub(now), time.Millisecond),
		workflow.TimerOptions{Summary: "next deadline: lease expiry, probe or secret rotation"})
	t.at, t.fired = next, false
	workflow.Go(ctx, func(gctx workflow.Context) {
		if timer.Get(gctx, nil) == nil {
			t.fired = true
		}
	})
}

// take clears a timer that went off, so that the next deadline sets a new one.
func (t *deadlineTimer) take() {
	if t.fired {
		t.at, t.fired, t.cancel = time.Time{}, false, nil
	}
}

// stop cancels the timer, if one is set.
func (t *deadlineTimer) stop() {
	if t.cancel != nil {
		t.cancel()
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
	e.leaseRates(ctx)
	e.drainRates(ctx)
	r := e.in.Limiter.Lease(now, e.leaseRequest(ctx, req))
	e.dirty = true
	return herald.LeaseReply{
		LeaseReply: r,
		Endpoint:   *e.in.Endpoint,
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
	f := workflow.SignalExternalWorkflow(ctx, w.Waiter, "", herald.SignalPermit, forDelivery(w))
	e.waking++
	workflow.Go(ctx, func(gctx workflow.Context) {
		defer func() { e.waking-- }()
		if err := f.Get(gctx, nil); err != nil {
			e.in.Limiter.Done(workflow.Now(gctx), w.Waiter, nil)
			e.dirty = true
		}
	})
}

// forDelivery is what a delivery is handed of its grant w: the endpoint's own bookkeeping
// (the waiter's name, the key of its wait) stays with the endpoint.
func forDelivery(w policy.Grant) policy.Grant {
	return policy.Grant{Ticket: w.Ticket, Until: w.Until, Window: w.Window, Disabled: w.Disabled, Pass: w.Pass}
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

// continueAsNewError continues the run as new on the endpoints' own task queue, keeping
// the whole state.
func (e *endpointRun) continueAsNewError(ctx workflow.Context) error {
	ctx = workflow.WithWorkflowTaskQueue(ctx, herald.EndpointTaskQueue(workflow.GetInfo(ctx).TaskQueueName))
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
