package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
)

// Operator holds the activities that act on other workflows (bulk replay).
type Operator struct {
	Client client.Client
	wakeState
}

// ReplayCount is what ReplayDeadLetters did: how many dead letters it signalled to replay,
// and how many it skipped because they were no longer running when signalled.
type ReplayCount struct {
	Replayed int `json:"replayed"`
	Gone     int `json:"gone,omitempty"`
}

// UnmarshalJSON reads a ReplayCount, or the bare count of replays that histories recorded
// before ReplayCount existed.
func (c *ReplayCount) UnmarshalJSON(b []byte) error {
	var n int
	if json.Unmarshal(b, &n) == nil {
		*c = ReplayCount{Replayed: n}
		return nil
	}
	type plain ReplayCount
	return json.Unmarshal(b, (*plain)(c))
}

// ReplayDeadLetters signals a replay to every dead letter f selects and says how many it
// signalled. It heartbeats its progress, so a retried run picks up where it stopped. Each
// signal replays only a dead letter parked by f.DeadBefore (default: when the activity was
// scheduled): with two bulk replays over the same range, a dead letter one replayed and
// that parked again is not replayed by the other.
func (o *Operator) ReplayDeadLetters(ctx context.Context, f herald.DeadLetterFilter) (ReplayCount, error) {
	req := herald.ReplayRequest{DeadBefore: f.DeadBefore}
	if req.DeadBefore.IsZero() {
		req.DeadBefore = activity.GetInfo(ctx).ScheduledTime
	}
	var n ReplayCount
	for ex, err := range herald.Executions(ctx, o.Client, f.Query(), 200) {
		if err != nil {
			return n, fmt.Errorf("list dead letters: %w", err)
		}
		id := ex.GetExecution().GetWorkflowId()
		if err := o.Client.SignalWorkflow(ctx, id, ex.GetExecution().GetRunId(), herald.SignalReplay, req); err == nil {
			n.Replayed++
		} else if isNotFound(err) {
			n.Gone++ // expired or replayed by someone else since it was listed
		} else {
			return n, fmt.Errorf("replay %s: %w", id, err)
		}
		activity.RecordHeartbeat(ctx, n)
	}
	return n, nil
}

// isNotFound reports whether err says the workflow is not running (completed, or never was).
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
