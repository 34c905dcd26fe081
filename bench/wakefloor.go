package bench

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
)

// The engine's wake floor: workflows that park waiting for an update and are woken by
// clients, each then running one local activity, as a drained delivery does with its
// pass. A drain of parked deliveries cannot beat it; the backlog scenario measures it in
// the same run as the drain.
const (
	wakeFloorQueue = "bench-wake-floor"
	wakeFloorFlow  = "BenchWakeFloor"
	wakeFloorGo    = "go"
)

// wakeFloor is the parked workflow: it waits for the update wakeFloorGo (parkThen).
func wakeFloor(ctx workflow.Context, in baselineInput) error {
	woken := false
	if err := workflow.SetUpdateHandler(ctx, wakeFloorGo, func(workflow.Context) error { woken = true; return nil }); err != nil {
		return err
	}
	return parkThen(ctx, in, func() error { return workflow.Await(ctx, func() bool { return woken }) })
}

// wakeFloorSignal is wakeFloor woken by the signal wakeFloorGo instead (BenchmarkEngineWake).
func wakeFloorSignal(ctx workflow.Context, in baselineInput) error {
	return parkThen(ctx, in, func() error {
		workflow.GetSignalChannel(ctx, wakeFloorGo).Receive(ctx, nil)
		return nil
	})
}

// parkThen records that in's workflow parked (a local activity for "parked:"+in.ID, before
// any measure), waits with wait, then runs in's local activity.
func parkThen(ctx workflow.Context, in baselineInput, wait func() error) error {
	parked := in
	parked.ID = parkedID(in.ID)
	if err := engine(ctx, parked); err != nil {
		return err
	}
	if err := wait(); err != nil {
		return err
	}
	return engine(ctx, in)
}

// parkedID is the id parkThen records a parked workflow under.
func parkedID(id string) string { return "parked:" + id }

// wakeFloorPhase parks n wakeFloor workflows, then wakes them with senders clients: the
// rate from the first update sent to the last local activity run, and the CPU per
// workflow meanwhile. If alongside is set, it is called as the first update is sent, and
// what it returns is called with the time the last woken workflow ran (or when waking
// was given up): a load run alongside learns which of its events met the engine's drain.
func (e *env) wakeFloorPhase(ctx context.Context, n, senders int, alongside func() func(woken time.Time)) (Phase, error) {
	f := &effects{at: map[string]time.Time{}}
	w, err := startBaseline(e.client, wakeFloorQueue, wakeFloorFlow, wakeFloor, f)
	if err != nil {
		return Phase{}, fmt.Errorf("start the wake floor's worker: %w", err)
	}
	defer w.Stop()
	ids := newIDs(n)
	parked := make([]string, n)
	for i, id := range ids {
		parked[i] = parkedID(id)
	}
	_, failed, ferr := drive(ctx, n, senders, 0, func(ctx context.Context, i int) error {
		_, err := e.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "bench:" + ids[i], TaskQueue: wakeFloorQueue},
			wakeFloorFlow, baselineInput{ID: ids[i], Data: benchData})
		return err
	})
	if failed > 0 {
		return Phase{}, fmt.Errorf("wake floor: %d starts failed, first: %w", failed, ferr)
	}
	// Every id recorded is a parked one until the first update is sent; then the woken
	// ones are added: no poll walks the n ids.
	if !waitUntil(ctx, parkTimeout(n), func() bool { return f.count() == n }) {
		return Phase{}, fmt.Errorf("wake floor: not every workflow parked within %s", parkTimeout(n))
	}
	closed := herald.Workflows(wakeFloorFlow).Closed().String()
	base := max(e.countVisible(ctx, closed), 0)
	cpu := startCPU()
	woken := func(time.Time) {}
	if alongside != nil {
		woken = alongside()
	}
	sentAt, failed, ferr := drive(ctx, n, senders, 0, func(ctx context.Context, i int) error {
		h, err := e.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: "bench:" + ids[i], UpdateName: wakeFloorGo, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		return err
	})
	if failed > 0 {
		woken(time.Now())
		return Phase{}, fmt.Errorf("wake floor: %d updates failed, first: %w", failed, ferr)
	}
	if !waitUntil(ctx, arrivalTimeout(n), func() bool { return f.count() == 2*n }) {
		e.progress("backlog: not every parked workflow ran after its update in time")
	}
	ran := f.seen(ids)
	p := phaseOf(sentAt, ran)
	_, last := span(ran)
	woken(last)
	if p.CPUms, _ = cpu.perWorkflow(ctx, e, closed, base+int64(n), n); p.CPUms <= 0 {
		e.progress("backlog: the wake floor's CPU figure is missing")
	}
	return p, nil
}
