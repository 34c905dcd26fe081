package starter

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
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
