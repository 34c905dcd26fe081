package bench

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald/internal/devserver"
)

// BenchmarkEngineWake measures how fast the engine itself wakes parked workflows, the
// floor under any drain of a queue of waiting deliveries: HERALD_WAKE_N (3,000) workflows
// wait on a signal (wakeFloorSignal), or on an update (wakeFloor, the backlog scenario's
// wake floor), and 50 clients wake them; each then runs one no-op local activity and
// completes. Beside it, the engine limit of the same run (engine: the same local activity,
// started eagerly, with nothing to wait for). Each round reports rates and CPU per
// workflow; run it with nothing else on the machine:
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
	const signalFlow = wakeFloorFlow + "Signal"
	f := &effects{at: map[string]time.Time{}}
	w := sdkworker.New(c, wakeFloorQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(engine, workflow.RegisterOptions{Name: engineFlow})
	w.RegisterWorkflowWithOptions(wakeFloor, workflow.RegisterOptions{Name: wakeFloorFlow})
	w.RegisterWorkflowWithOptions(wakeFloorSignal, workflow.RegisterOptions{Name: signalFlow})
	w.RegisterActivityWithOptions(f.noop, activity.RegisterOptions{Name: noopActivity})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	// each calls op for each of ids, 50 at a time.
	each := func(ids []string, op func(ctx context.Context, id string) error) {
		if _, _, err := drive(ctx, len(ids), 50, 0, func(ctx context.Context, i int) error { return op(ctx, ids[i]) }); err != nil {
			b.Fatal(err)
		}
	}
	// ran waits until k more local activities than base have run: a count, so that the
	// poll walks none of the ids it waits for (f.count).
	ran := func(base, k int) {
		if !waitUntil(ctx, arrivalTimeout(k), func() bool { return f.count() >= base+k }) {
			b.Fatalf("not every workflow ran its local activity in time")
		}
	}
	start := func(name string, eager bool) func(ctx context.Context, id string) error {
		return func(ctx context.Context, id string) error {
			_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "bench:" + id, TaskQueue: wakeFloorQueue, EnableEagerStart: eager},
				name, baselineInput{ID: id, Data: benchData})
			return err
		}
	}
	// timed runs op for each of n new ids and waits for their local activities: the rate
	// from the first call to the last activity, and the CPU per workflow meanwhile.
	timed := func(ids []string, op func(ctx context.Context, id string) error) (rate float64, cpu time.Duration) {
		base := f.count()
		began, cpu0 := time.Now(), processCPU()
		each(ids, op)
		ran(base, len(ids))
		return float64(len(ids)) / time.Since(began).Seconds(), (processCPU() - cpu0) / time.Duration(len(ids))
	}
	// parked starts n workflows of type name and returns their ids once all have parked.
	parked := func(name string) []string {
		ids, base := newIDs(n), f.count()
		each(ids, start(name, false))
		ran(base, n) // each records its parking under parkedID
		return ids
	}
	for range b.N {
		eager, eagerCPU := timed(newIDs(n), start(engineFlow, true))
		signal, signalCPU := timed(parked(signalFlow), func(ctx context.Context, id string) error {
			return c.SignalWorkflow(ctx, "bench:"+id, "", wakeFloorGo, nil)
		})
		update, updateCPU := timed(parked(wakeFloorFlow), func(ctx context.Context, id string) error {
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "bench:" + id, UpdateName: wakeFloorGo, WaitForStage: client.WorkflowUpdateStageCompleted})
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

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
