package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// leaseRates makes a rate-limited endpoint's limiter lease rate budgets to the workers'
// gates from now on (policy.Limiter.LeaseRates; versionRateLease), instead of granting
// every attempt on its own. Asked when the limiter is rate-limited and does not lease them
// yet: before each pass of the loop and each lease renewal. The limiter keeps the choice
// across continue-as-new.
func (e *endpointRun) leaseRates(ctx workflow.Context) {
	g := e.in.Limiter
	if g == nil || g.RateLeased || g.Config.RateLimit <= 0 {
		return
	}
	if workflow.GetVersion(ctx, versionRateLease, workflow.DefaultVersion, 1) == 1 {
		g.LeaseRates()
		e.dirty = true
	}
}

// drainRates makes a rate-leased limiter drain its queue through the gates' rate shares
// from now on (policy.Limiter.DrainRates; versionRateQueuePasses): queued waiters woken
// with passes that the gates admit against their shares, and shares lent while some are
// queued, instead of a request of the queue's own budget granted to each. Asked once per
// run, the first time it matters (policy.Limiter.RateDrainDue: a queue while the circuit is
// closed), before a pass of the loop or a lease renewal; only a run that drains with
// passes (versionDrainPasses) takes it. The limiter keeps the choice across
// continue-as-new.
func (e *endpointRun) drainRates(ctx workflow.Context) {
	g := e.in.Limiter
	if g == nil || e.rateDrainAsked || !g.RateDrainDue() {
		return
	}
	e.rateDrainAsked = true
	if workflow.GetVersion(ctx, versionRateQueuePasses, workflow.DefaultVersion, 1) == 1 && e.drainPasses(ctx) {
		g.DrainRates()
		e.dirty = true
	}
}
