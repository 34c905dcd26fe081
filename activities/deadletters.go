package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
)

// Operator holds the activities that act on other workflows (bulk replay).
type Operator struct {
	Client client.Client
}

// ReplayDeadLetters signals a replay to every dead letter f selects and returns how many it
// signalled. It heartbeats its progress, so a retried run picks up where it stopped. Each
// signal replays only a dead letter parked by f.DeadBefore (default: when the activity was
// scheduled): with two bulk replays over the same range, a dead letter one replayed and
// that parked again is not replayed by the other.
func (o *Operator) ReplayDeadLetters(ctx context.Context, f herald.DeadLetterFilter) (int, error) {
	req := herald.ReplayRequest{DeadBefore: f.DeadBefore}
	if req.DeadBefore.IsZero() {
		req.DeadBefore = activity.GetInfo(ctx).ScheduledTime
	}
	replayed := 0
	for ex, err := range herald.Executions(ctx, o.Client, f.Query(), 200) {
		if err != nil {
			return replayed, fmt.Errorf("list dead letters: %w", err)
		}
		id := ex.GetExecution().GetWorkflowId()
		if err := o.Client.SignalWorkflow(ctx, id, ex.GetExecution().GetRunId(), herald.SignalReplay, req); err == nil {
			replayed++
		} else if !isNotFound(err) {
			return replayed, fmt.Errorf("replay %s: %w", id, err)
		}
		activity.RecordHeartbeat(ctx, replayed)
	}
	return replayed, nil
}
