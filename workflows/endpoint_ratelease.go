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
