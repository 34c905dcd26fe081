package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
)

// SignalReplay is the signal that replays a dead letter (package workflows re-exports it).
const SignalReplay = "replay"

// ReplayRequest is the payload of a replay signal (none, or a zero one, replays at once).
type ReplayRequest struct {
	// DeadBefore, when set, replays the delivery only if it became a dead letter at or
	// before this time: a bulk replay sets it to when it was asked to run, so a dead letter
	// that another replay already replayed, and that parked again since, is not replayed twice.
	DeadBefore time.Time `json:"dead_before,omitempty"`
}

// Stale reports whether r asks to replay an earlier dead letter than the one parked at deadAt.
func (r ReplayRequest) Stale(deadAt time.Time) bool {
	return !r.DeadBefore.IsZero() && deadAt.After(r.DeadBefore)
}

// DeadLetterFilter selects dead letters: by endpoint (empty for all) and by when the event
// was sent (zero times are open ends).
type DeadLetterFilter struct {
	EndpointID string    `json:"endpoint_id,omitempty"`
	Since      time.Time `json:"since,omitempty"`
	Until      time.Time `json:"until,omitempty"`
	// DeadBefore, set by a bulk replay to when it was asked to run, keeps only dead letters
	// parked by then: checked by each delivery as it receives the replay (see ReplayRequest),
	// not by the visibility query.
	DeadBefore time.Time `json:"dead_before,omitempty"`
}

// Query is the visibility query for the dead letters f selects.
func (f DeadLetterFilter) Query() string {
	q := []string{
		"WorkflowType = 'Delivery'",
		"ExecutionStatus = 'Running'",
		"HeraldStatus = 'dead_letter'",
	}
	if f.EndpointID != "" {
		q = append(q, fmt.Sprintf("HeraldEndpoint = '%s'", quote(f.EndpointID)))
	}
	if !f.Since.IsZero() {
		q = append(q, fmt.Sprintf("StartTime >= '%s'", f.Since.UTC().Format(time.RFC3339Nano)))
	}
	if !f.Until.IsZero() {
		q = append(q, fmt.Sprintf("StartTime <= '%s'", f.Until.UTC().Format(time.RFC3339Nano)))
	}
	return strings.Join(q, " AND ")
}

func quote(s string) string { return strings.ReplaceAll(s, "'", "''") }

// Operator holds the activities that act on other workflows (bulk replay).
type Operator struct {
	Client client.Client
}

// ReplayDeadLetters signals a replay to every dead letter f selects and returns how many it
// signalled. It heartbeats its progress, so a retried run picks up where it stopped. Each
// signal replays only a dead letter parked by f.DeadBefore (default: when the activity was
// scheduled): with two bulk replays over the same range, a dead letter one replayed and
// that parked again is not replayed by the other.
func (o *Operator) ReplayDeadLetters(ctx context.Context, f DeadLetterFilter) (int, error) {
	req := ReplayRequest{DeadBefore: f.DeadBefore}
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
			err := o.Client.SignalWorkflow(ctx, id, ex.GetExecution().GetRunId(), SignalReplay, req)
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
