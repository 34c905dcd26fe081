package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/heraldhq/herald"
)

// Closed reports whether workflow id's latest run is closed, or never started: an ordering
// key's sequencer asks it of its tail before it closes when idle.
func (o *Ops) Closed(ctx context.Context, workflowID string) (bool, error) {
	d, err := o.Client.DescribeWorkflowExecution(ctx, workflowID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("describe %s: %w", workflowID, err)
	}
	return d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// Presence reports where workflow id's latest run is: herald.PresenceRunning,
// herald.PresenceClosed, or herald.PresenceMissing (never started, or gone past its
// retention). An ordering key's sequencer asks it of its tail as it appends the next
// delivery.
func (o *Ops) Presence(ctx context.Context, workflowID string) (string, error) {
	d, err := o.Client.DescribeWorkflowExecution(ctx, workflowID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return herald.PresenceMissing, nil
	}
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", workflowID, err)
	}
	if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return herald.PresenceRunning, nil
	}
	return herald.PresenceClosed, nil
}

// SignalOrdering sends an ordering signal (the successor's SignalOrderingNext, or the
// predecessor's SignalOrderingTurn) from a delivery's workflow task, and reports whether
// its target is running: false when it is closed or was never started.
func (o *Ops) SignalOrdering(ctx context.Context, s herald.OrderingSignal) (bool, error) {
	var arg any = s.Next
	if s.Name == herald.SignalOrderingTurn {
		arg = s.Turn
	}
	err := o.Client.SignalWorkflow(ctx, s.To, "", s.Name, arg)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("signal %s to %s: %w", s.Name, s.To, err)
	}
	return true, nil
}

// Follow tells the delivery s.To that the delivery s.Next waits after it (a
// herald.SignalOrderingNext signal), when s.To is running, and reports where s.To is:
// herald.PresenceRunning (signalled), herald.PresenceClosed, or herald.PresenceMissing (not
// started, or gone past its retention). A delivery asks it of a predecessor its sequencer
// has not seen started yet, which a failed signal alone cannot tell from a closed one.
//
// One not found is looked for again, FollowPoll apart, for up to FollowFor: its send has
// its answer and is starting it, most likely within milliseconds, and a durable wait
// would take a second or more.
func (o *Ops) Follow(ctx context.Context, s herald.OrderingSignal) (string, error) {
	deadline := time.Now().Add(FollowFor)
	for {
		if running, err := o.SignalOrdering(ctx, s); err != nil || running {
			return herald.PresenceRunning, err
		}
		p, err := o.Presence(ctx, s.To)
		switch {
		case err != nil || p == herald.PresenceClosed:
			return p, err
		case p == herald.PresenceMissing && !time.Now().Add(FollowPoll).Before(deadline):
			return p, nil
		case p == herald.PresenceMissing:
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(FollowPoll):
			}
		}
		// Started since (or between the signal and the describe): signal it again.
	}
}

// How long Follow looks again for a delivery not found, and how often.
const (
	FollowFor  = 2 * time.Second
	FollowPoll = 50 * time.Millisecond
)
