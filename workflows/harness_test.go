package workflows

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// Helpers shared by the tests of this package.

// tape is a list that the goroutines of a test environment (activity and signal mocks,
// listeners) append to while the test reads it.
type tape[T any] struct {
	mu    sync.Mutex
	items []T
}

// add appends v.
func (l *tape[T]) add(v T) {
	l.mu.Lock()
	l.items = append(l.items, v)
	l.mu.Unlock()
}

// all returns a copy of what was added, in order.
func (l *tape[T]) all() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.items)
}

// recordTimers adds the duration of every timer env schedules to timers.
func recordTimers(env *testsuite.TestWorkflowEnvironment, timers *tape[time.Duration]) {
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers.add(d) })
}

// queryAs runs query name on env's workflow and decodes its answer as a T.
func queryAs[T any](env *testsuite.TestWorkflowEnvironment, name string) (T, error) {
	var out T
	v, err := env.QueryWorkflow(name)
	if err != nil {
		return out, err
	}
	err = v.Get(&out)
	return out, err
}

// mustQuery is queryAs failing the test on error.
func mustQuery[T any](t *testing.T, env *testsuite.TestWorkflowEnvironment, name string) T {
	t.Helper()
	out, err := queryAs[T](env, name)
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	return out
}

// updateOutcome is what became of one update of the endpoint workflow.
type updateOutcome[T any] struct {
	accepted  bool
	rejected  error
	completed bool
	err       error
	result    T
	decodeErr error
}

func sendUpdate[T any](env *testsuite.TestWorkflowEnvironment, name string, args ...any) *updateOutcome[T] {
	out := &updateOutcome[T]{}
	env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnAccept: func() { out.accepted = true },
		OnReject: func(err error) { out.rejected = err },
		OnComplete: func(v any, err error) {
			out.completed, out.err = true, err
			switch v := v.(type) {
			case T:
				out.result = v
			case converter.EncodedValue:
				out.decodeErr = v.Get(&out.result)
			case nil:
			default:
				out.decodeErr = fmt.Errorf("unexpected update result type %T", v)
			}
		},
	}, args...)
	return out
}

// check reports on t unless the update was accepted and completed without error.
func (o *updateOutcome[T]) check(t *testing.T, what string) bool {
	t.Helper()
	if o == nil {
		t.Errorf("%s: never sent", what)
		return false
	}
	if !o.accepted || o.rejected != nil || !o.completed || o.err != nil || o.decodeErr != nil {
		t.Errorf("%s: accepted %v, rejected %v, completed %v, error %v, decode %v",
			what, o.accepted, o.rejected, o.completed, o.err, o.decodeErr)
		return false
	}
	return true
}

// mustSucceed stops the test unless the update was accepted and completed without error.
func (o *updateOutcome[T]) mustSucceed(t *testing.T, what string) {
	t.Helper()
	if !o.check(t, what) {
		t.FailNow()
	}
}

// continuedAsNew fails the test unless env's workflow continued as new, and returns how,
// with the input (of type In) it continues with.
func continuedAsNew[In any](t *testing.T, env *testsuite.TestWorkflowEnvironment) (*workflow.ContinueAsNewError, In) {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want a continue-as-new", err)
	}
	var next In
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	return can, next
}
