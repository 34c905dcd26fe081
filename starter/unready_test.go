package starter

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
)

func TestWhenReadyRetriesFailedWorkflowTasks(t *testing.T) {
	unready := serviceerror.NewWorkflowNotReady("Unable to perform workflow execution update due to unexpected workflow task failure.")
	calls := 0
	err := whenReady(context.Background(), time.Minute, func() error {
		calls++
		if calls < 3 {
			return unready
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("two refusals then success: err %v after %d calls, want nil after 3", err, calls)
	}

	calls = 0
	other := errors.New("invalid")
	if err := whenReady(context.Background(), time.Minute, func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("another error: %v after %d calls, want it at once", err, calls)
	}

	calls = 0
	err = whenReady(context.Background(), time.Second, func() error { calls++; return unready })
	var nr *serviceerror.WorkflowNotReady
	if !errors.As(err, &nr) || calls < 2 {
		t.Fatalf("refused for longer than its patience: %v after %d calls, want the refusal after a few tries", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = whenReady(ctx, time.Minute, func() error { calls++; cancel(); return unready })
	if !errors.As(err, &nr) || calls != 1 {
		t.Fatalf("cancelled while refused: %v after %d calls, want the refusal after one", err, calls)
	}
}

// unreadyClient refuses the first update-with-start as the server does when the workflow's
// task failed, and records the start operations it is given.
type unreadyClient struct {
	client.Client
	ops []client.WithStartWorkflowOperation
}

// startOp stands for one start operation; the SDK's refuses to run twice.
type startOp struct {
	client.WithStartWorkflowOperation
}

func (c *unreadyClient) NewWithStartWorkflowOperation(client.StartWorkflowOptions, any, ...any) client.WithStartWorkflowOperation {
	return &startOp{}
}

func (c *unreadyClient) UpdateWithStartWorkflow(_ context.Context, o client.UpdateWithStartWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.ops = append(c.ops, o.StartWorkflowOperation)
	if len(c.ops) == 1 {
		return nil, fmt.Errorf("failed workflow update: %w", serviceerror.NewWorkflowNotReady("Unable to perform workflow execution update due to unexpected workflow task failure."))
	}
	return doneUpdate{}, nil
}

type doneUpdate struct{ client.WorkflowUpdateHandle }

func (doneUpdate) Get(context.Context, any) error { return nil }

func TestUpdateWithStartTriesAgainWithANewOperation(t *testing.T) {
	c := &unreadyClient{}
	s := New(c, Options{})
	if _, err := s.updateWithStart(context.Background(), startUpdate{ID: herald.EndpointWorkflowID("a"), Type: herald.EndpointWorkflow, Name: herald.UpdatePutEndpoint}, nil); err != nil {
		t.Fatalf("refused once, then accepted: %v", err)
	}
	if len(c.ops) != 2 || c.ops[0] == c.ops[1] {
		t.Fatalf("%d tries, the second with the first's start operation: %v", len(c.ops), len(c.ops) == 2)
	}
}
