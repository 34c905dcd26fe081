package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald/internal/devserver"
)

// BenchmarkEngineWake measures how fast the engine itself wakes parked workflows, the
// floor under any drain of a queue of waiting deliveries: HERALD_WAKE_N (3,000) workflows
// wait on a signal, or on an update, and 50 clients wake them; each then runs one no-op
// local activity and completes. Beside it, the engine limit of the same run (the same
// workflows started eagerly, with nothing to wait for). Each round reports rates and CPU
// per workflow; run it with nothing else on the machine:
//
//	go test ./bench -run '^$' -bench EngineWake -benchtime 1x -v
func BenchmarkEngineWake(b *testing.B) {
	n := 3000
	if v, err := strconv.Atoi(os.Getenv("HERALD_WAKE_N")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	srv, err := devserver.Start(ctx, devserver.Options{HTTPPort: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace(),
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var ran atomic.Int64
	w := sdkworker.New(c, wakeQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(wakeEager, workflow.RegisterOptions{Name: "BenchWakeEager"})
	w.RegisterWorkflowWithOptions(wakeOnSignal, workflow.RegisterOptions{Name: "BenchWakeSignal"})
	w.RegisterWorkflowWithOptions(wakeOnUpdate, workflow.RegisterOptions{Name: "BenchWakeUpdate"})
	w.RegisterActivityWithOptions(func(context.Context) error { ran.Add(1); return nil }, activity.RegisterOptions{Name: "BenchWakeNoop"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	round := 0
	// timedRun runs start for each of n ids, 50 at a time, and waits until n more local
	// activities ran: the rate and the CPU per workflow from the first call to the last.
	timedRun := func(start func(id string) error) (rate float64, cpu time.Duration) {
		base := ran.Load()
		began, cpu0 := time.Now(), processCPU()
		if _, _, err := drive(ctx, n, 50, 0, func(_ context.Context, i int) error { return start(fmt.Sprintf("wake-%d-%d", round, i)) }); err != nil {
			b.Fatal(err)
		}
		for ran.Load() < base+int64(n) {
			time.Sleep(5 * time.Millisecond)
		}
		return float64(n) / time.Since(began).Seconds(), (processCPU() - cpu0) / time.Duration(n)
	}
	// park starts n workflows of type wf that wait, and lets them reach their wait.
	park := func(wf string) {
		if _, _, err := drive(ctx, n, 50, 0, func(ctx context.Context, i int) error {
			_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("wake-%d-%d", round, i), TaskQueue: wakeQueue}, wf)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(8 * time.Second)
	}
	for range b.N {
		round++
		eager, eagerCPU := timedRun(func(id string) error {
			_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: wakeQueue, EnableEagerStart: true}, "BenchWakeEager")
			return err
		})
		round++
		park("BenchWakeSignal")
		signal, signalCPU := timedRun(func(id string) error { return c.SignalWorkflow(ctx, id, "", "go", nil) })
		round++
		park("BenchWakeUpdate")
		update, updateCPU := timedRun(func(id string) error {
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: "go", WaitForStage: client.WorkflowUpdateStageCompleted})
			if err == nil {
				err = h.Get(ctx, nil)
			}
			return err
		})
		b.Logf("%d workflows: eager start %.1f/s (%.2f ms CPU each); woken by a signal %.1f/s (%.2fx, %.2f ms); by an update %.1f/s (%.2fx, %.2f ms)",
			n, eager, ms(eagerCPU), signal, signal/eager, ms(signalCPU), update, update/eager, ms(updateCPU))
		b.ReportMetric(signal/eager, "signal/eager")
		b.ReportMetric(update/eager, "update/eager")
	}
}

// wakeQueue is BenchmarkEngineWake's task queue.
const wakeQueue = "bench-wake"

func wakeLocal(ctx workflow.Context) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	return workflow.ExecuteLocalActivity(ctx, "BenchWakeNoop").Get(ctx, nil)
}

// wakeEager runs its local activity at once.
func wakeEager(ctx workflow.Context) error { return wakeLocal(ctx) }

// wakeOnSignal waits for the signal "go", then runs its local activity.
func wakeOnSignal(ctx workflow.Context) error {
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
	return wakeLocal(ctx)
}

// wakeOnUpdate waits for the update "go", then runs its local activity.
func wakeOnUpdate(ctx workflow.Context) error {
	woken := false
	if err := workflow.SetUpdateHandler(ctx, "go", func(workflow.Context) error { woken = true; return nil }); err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool { return woken }); err != nil {
		return err
	}
	return wakeLocal(ctx)
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
