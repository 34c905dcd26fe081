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

// DeadLetterFilter selects dead letters: by endpoint (empty for all) and by when the event
// was sent (zero times are open ends).
type DeadLetterFilter struct {
	EndpointID string    `json:"endpoint_id,omitempty"`
	Since      time.Time `json:"since,omitempty"`
	Until      time.Time `json:"until,omitempty"`
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
// replayed. It heartbeats its progress, so a retried run picks up where it stopped.
func (o *Operator) ReplayDeadLetters(ctx context.Context, f DeadLetterFilter) (int, error) {
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
			err := o.Client.SignalWorkflow(ctx, id, ex.GetExecution().GetRunId(), SignalReplay, nil)
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
