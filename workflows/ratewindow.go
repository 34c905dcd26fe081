package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald/policy"
)

// untilWindow waits on a durable timer for the second that a rate-limited permit is for to
// begin, when the permit came before it (grants made in the second half of a second are
// for the next one, policy.RateAhead): the attempt's local activity then starts its
// request at once, and no worker slot is held while the delivery waits
// (versionWindowTimer). A permit for a second more than a window away (clocks apart) is
// not waited for: the gate asks again. It returns the timer's error (cancellation).
func (d *delivery) untilWindow(ctx workflow.Context, round, n int) error {
	if d.permit == nil || d.permit.Window.IsZero() {
		return nil
	}
	w := d.permit.Window
	early := w.Sub(workflow.Now(ctx))
	if early <= 0 || early > policy.RateWindow {
		return nil
	}
	if workflow.GetVersion(ctx, versionWindowTimer, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil // before: the local activity waited (gate.untilWindow)
	}
	return workflow.NewTimerWithOptions(ctx, early, workflow.TimerOptions{
		Summary: stepName(round, n) + " waits for the second its permit is for: " + w.UTC().Format("15:04:05Z"),
	}).Get(ctx, nil)
}
