package bench

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The two baselines Herald is compared with, each on a task queue of its own.
const (
	naiveQueue    = "bench-naive"
	naiveWorkflow = "BenchNaive"
	engineQueue   = "bench-engine"
	engineFlow    = "BenchEngine"
	noopActivity  = "BenchNoop"
)

// baselineInput is what a baseline workflow gets: the same size as a Herald event.
type baselineInput struct {
	ID   string          `json:"id"`
	Data json.RawMessage `json:"data"`
}

// effects records when each baseline workflow's activity ran: its "first request".
type effects struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (f *effects) noop(ctx context.Context, in baselineInput) error {
	f.mu.Lock()
	if _, ok := f.at[in.ID]; !ok {
		f.at[in.ID] = time.Now()
	}
	f.mu.Unlock()
	return nil
}

// count returns how many ids' activities have run: a poll that costs nothing however
// many workflows a phase has (seen builds a slice of them all).
func (f *effects) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.at)
}

// seen returns when each of ids' activity first ran (zero when not yet).
func (f *effects) seen(ids []string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return timesOf(f.at, ids)
}

// naive is the workflow most people write first: one regular activity.
func naive(ctx workflow.Context, in baselineInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	return workflow.ExecuteActivity(ctx, noopActivity, in).Get(ctx, nil)
}

// engine is the cheapest workflow the engine runs: one local activity (started eagerly).
func engine(ctx workflow.Context, in baselineInput) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	return workflow.ExecuteLocalActivity(ctx, noopActivity, in).Get(ctx, nil)
}

// startBaseline runs a worker for one baseline on its own task queue, with the SDK's
// default options like Herald's worker.
func startBaseline(c client.Client, queue, name string, wf any, f *effects) (sdkworker.Worker, error) {
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: name})
	w.RegisterActivityWithOptions(f.noop, activity.RegisterOptions{Name: noopActivity})
	return w, w.Start()
}
