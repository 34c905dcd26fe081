package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
)

// unreadyPatience is how long an update refused because its workflow task failed is tried
// again. A namespace whose search attributes were just registered is the usual cause: the
// frontend knows them at once, history within its namespace refresh (10 s by default), and
// until then the workflow task that upserts them fails and the server refuses the update.
const unreadyPatience = 30 * time.Second

// whenReady runs update, running it again while the server refuses it with
// WorkflowNotReady (its workflow task failed), backing off from 250 ms to 4 s for at most
// patience. The workflow retries a failed task by itself, so a transient cause heals; a
// persistent one (a worker bug) is returned with what to check.
func whenReady(ctx context.Context, patience time.Duration, update func() error) error {
	deadline := time.Now().Add(patience)
	delay := 250 * time.Millisecond
	for {
		err := update()
		var unready *serviceerror.WorkflowNotReady
		if err == nil || !errors.As(err, &unready) {
			return err
		}
		if time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("%w (still refused after %s: the workflow's task keeps failing, and the worker's log says why; just after herald namespace setup, history may not know the new search attributes yet: try again in a few seconds)", err, patience)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 4*time.Second)
	}
}

// startUpdate is an update sent with update-with-start to one of Herald's long-lived
// workflows on the endpoints' task queue: the workflow (ID, of type Type, started with Input,
// Summary and Attrs if it is not running) and the update (Name with Arg).
type startUpdate struct {
	ID, Type, Summary string
	Input             any
	Attrs             temporal.SearchAttributes
	// OnlyNew sends the update only with a start: if the workflow is running, nothing is
	// sent and the error is *serviceerror.WorkflowExecutionAlreadyStarted.
	OnlyNew bool
	Name    string
	Arg     any
}

// updateWithStart sends u, starting its workflow if need be, and waits for its result
// (into out, if not nil), trying again while the server refuses it for a failed workflow
// task (whenReady). It returns the start operation of the last try.
func (s *Client) updateWithStart(ctx context.Context, u startUpdate, out any) (client.WithStartWorkflowOperation, error) {
	var start client.WithStartWorkflowOperation
	err := whenReady(ctx, unreadyPatience, func() error {
		// An operation runs once: each try makes its own.
		conflict := enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
		if u.OnlyNew {
			conflict = enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
		}
		start = s.c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID:                       u.ID,
			TaskQueue:                herald.EndpointTaskQueue(s.opts.TaskQueue),
			WorkflowIDConflictPolicy: conflict,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			TypedSearchAttributes:    u.Attrs,
			StaticSummary:            u.Summary,
		}, u.Type, u.Input)
		h, err := s.c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{
				WorkflowID:   u.ID,
				UpdateName:   u.Name,
				Args:         []any{u.Arg},
				WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		if err == nil {
			err = h.Get(ctx, out)
		}
		return err
	})
	return start, err
}
