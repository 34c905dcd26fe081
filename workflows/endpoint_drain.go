package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
)

// drainPasses reports whether this run wakes its queue with passes, admitted under the
// workers' leases (policy.Limiter.TickPasses), rather than with a permit of its own for
// each waiter (versionDrainPasses). Asked once per run, the first time it matters: when
// the queue could be woken (policy.Limiter.Drainable), or when a gate reports passes.
func (e *endpointRun) drainPasses(ctx workflow.Context) bool {
	if !e.passesAsked {
		e.passesAsked = true
		e.passes = workflow.GetVersion(ctx, versionDrainPasses, workflow.DefaultVersion, 1) == 1
	}
	return e.passes
}

// wakes returns the waiters to wake at now: with passes once the run drains that way
// (drainPasses), else each with a permit of its own, as before.
func (e *endpointRun) wakes(ctx workflow.Context, now time.Time) []policy.Grant {
	lim := e.in.Limiter
	if e.passes || (!e.passesAsked && lim.Drainable() && e.drainPasses(ctx)) {
		return lim.TickPasses(now)
	}
	return lim.Tick(now)
}

// leaseRequest is req as this run's limiter takes it: a run that does not drain with
// passes ignores what gates say of them, as the release before it did.
func (e *endpointRun) leaseRequest(ctx workflow.Context, req herald.LeaseRequest) policy.LeaseRequest {
	r := req.LeaseRequest
	if (len(r.Passed) > 0 || r.Passing > 0) && !e.drainPasses(ctx) {
		r.Passed, r.Passing = nil, 0
	}
	return r
}

// passUpdate reports whether this run hands its passes out by update, from the worker
// (versionPassUpdates), rather than with a signal each; asked once per run, at its first
// pass. Such a run hands out again a pass that no gate reports used in time
// (policy.Limiter.RewakePasses): the worker that had it may be gone.
func (e *endpointRun) passUpdate(ctx workflow.Context) bool {
	if !e.passUpdatesAsked {
		e.passUpdatesAsked = true
		e.passUpdates = workflow.GetVersion(ctx, versionPassUpdates, workflow.DefaultVersion, 1) == 1
		if e.passUpdates {
			e.in.Limiter.RewakePasses = true
		}
	}
	return e.passUpdates
}

// wakePasses hands passes to their deliveries in one local activity
// (activities.Operator.WakeWaiters): one event for the batch, where a signal each took
// two, and no task of the endpoint's own to see them delivered. The passes it had no room
// for, or all of them if it failed, go as permit signals.
func (e *endpointRun) wakePasses(ctx workflow.Context, passes []policy.Grant) {
	if len(passes) == 0 {
		return
	}
	e.waking++
	workflow.Go(ctx, func(gctx workflow.Context) {
		defer func() { e.waking-- }()
		req := herald.PassWake{Endpoint: e.in.ID, Grants: make([]policy.Grant, len(passes))}
		for i, w := range passes {
			req.Grants[i] = forDelivery(w)
			req.Grants[i].Waiter = w.Waiter // the worker's address for it
		}
		var op *activities.Operator
		var r herald.PassWoken
		err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(gctx, passOptions), op.WakeWaiters, req).Get(gctx, &r)
		if err != nil {
			workflow.GetLogger(gctx).Warn("passes not handed to the worker: signalled instead", "endpoint", e.in.ID, "passes", len(passes), "error", err)
		}
		for _, w := range passes {
			if err != nil || slices.Contains(r.Declined, w.Waiter) {
				e.wake(gctx, w)
			}
		}
	})
}

// passOptions are the options of WakeWaiters: one try, as it only hands the passes to its
// process; a failure falls back to signals.
var passOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: 10 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	Summary:             "hand the passes to their deliveries",
}
