package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
)

// BulkReplay waits until the requested time, then replays every dead letter the filter
// selects, each with its original event id. The wait is a durable timer, visible in the UI.
func BulkReplay(ctx workflow.Context, in herald.BulkReplayInput) (herald.BulkReplayResult, error) {
	if wait := in.At.Sub(workflow.Now(ctx)); wait > 0 {
		err := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{
			Summary: "replay dead letters at " + in.At.UTC().Format(time.RFC3339),
		}).Get(ctx, nil)
		if err != nil {
			return herald.BulkReplayResult{}, err
		}
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
		Summary:             "replay dead letters: " + in.Filter.Query(),
	})
	// Replay only what was a dead letter when the replay was asked for (at start, or at
	// in.At): another bulk replay's replays that park again are not replayed twice.
	f := in.Filter
	f.DeadBefore = workflow.GetInfo(ctx).WorkflowStartTime
	if in.At.After(f.DeadBefore) {
		f.DeadBefore = in.At
	}
	var op *activities.Operator
	var n activities.ReplayCount
	if err := workflow.ExecuteActivity(actx, op.ReplayDeadLetters, f).Get(ctx, &n); err != nil {
		return herald.BulkReplayResult{}, err
	}
	res := herald.BulkReplayResult{Replayed: n.Replayed, Skipped: n.Gone, ReplayedAt: workflow.Now(ctx)}
	if n.Gone > 0 {
		res.SkippedWhy = herald.SkippedGone
	}
	return res, nil
}
