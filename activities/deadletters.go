package activities

import (
	"context"
	"fmt"

	"go.temporal.io/api/workflowservice/v1"
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
	var token []byte
	for {
		resp, err := o.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: f.Query(), PageSize: 200, NextPageToken: token,
		})
		if err != nil {
			return replayed, fmt.Errorf("list dead letters: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			id := ex.GetExecution().GetWorkflowId()
			err := o.Client.SignalWorkflow(ctx, id, ex.GetExecution().GetRunId(), herald.SignalReplay, req)
			if err != nil && !isNotFound(err) {
				return replayed, fmt.Errorf("replay %s: %w", id, err)
			}
			if err == nil {
				replayed++
			}
			activity.RecordHeartbeat(ctx, replayed)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return replayed, nil
		}
	}
}
