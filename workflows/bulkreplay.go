package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
)

// BulkReplayInput asks for every dead letter a filter selects to be replayed, now or at a time.
type BulkReplayInput struct {
	Filter herald.DeadLetterFilter `json:"filter"`
	// At is when to replay; zero or past means at once.
	At time.Time `json:"at,omitzero"`
}

// BulkReplayResult says how many dead letters were replayed, and how many were skipped
// and why.
type BulkReplayResult struct {
	Replayed int `json:"replayed"`
	// Skipped counts the dead letters listed that had ended (expired, or replayed by
	// someone else) before their replay signal reached them; SkippedWhy says so.
	Skipped    int       `json:"skipped"`
	SkippedWhy string    `json:"skipped_why,omitempty"`
	ReplayedAt time.Time `json:"replayed_at,omitzero"`
}

// SkippedGone is BulkReplayResult.SkippedWhy for dead letters that had ended.
const SkippedGone = "no longer a dead letter when its replay was sent (expired, or replayed by someone else since it was listed)"

// BulkReplay waits until the requested time, then replays every dead letter the filter
// selects, each with its original event id. The wait is a durable timer, visible in the UI.
func BulkReplay(ctx workflow.Context, in BulkReplayInput) (BulkReplayResult, error) {
	if wait := in.At.Sub(workflow.Now(ctx)); wait > 0 {
		err := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{
			Summary: "replay dead letters at " + in.At.UTC().Format(time.RFC3339),
		}).Get(ctx, nil)
		if err != nil {
			return BulkReplayResult{}, err
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
		return BulkReplayResult{}, err
	}
	res := BulkReplayResult{Replayed: n.Replayed, Skipped: n.Gone, ReplayedAt: workflow.Now(ctx)}
	if n.Gone > 0 {
		res.SkippedWhy = SkippedGone
	}
	return res, nil
}
