package bench

import (
	"context"
	"time"
)

// cpuMeter measures the CPU a phase costs per workflow: from start until the phase's
// workflows are all closed in the visibility store, so that a phase also pays for its own
// visibility records (written after the workflows close) and not for the one before.
type cpuMeter struct {
	start time.Duration
}

func startCPU() cpuMeter { return cpuMeter{start: processCPU()} }

// perWorkflow waits (bounded) until closed (a visibility query) counts at least want
// workflows, then returns the CPU milliseconds used since start per workflow, and whether
// they all settled in time. It is 0 where the process's CPU time cannot be read.
func (m cpuMeter) perWorkflow(ctx context.Context, e *env, closed string, want int64, n int) (float64, bool) {
	settled := e.awaitVisible(ctx, closed, want, time.Minute+time.Duration(n)*10*time.Millisecond)
	used := processCPU() - m.start
	if m.start == 0 || n == 0 {
		return 0, settled
	}
	return float64(used) / float64(time.Millisecond) / float64(n), settled
}
