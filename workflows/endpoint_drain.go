package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
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
