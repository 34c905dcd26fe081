package workflows

import "go.temporal.io/sdk/workflow"

// historyLong reports whether a run should continue as new: the server suggests it, or its
// history is past maxEvents.
func historyLong(ctx workflow.Context, maxEvents int) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > maxEvents
}

// continueWhenLong waits until the run's history is long (historyLong) and every signal and
// update handler has finished, then returns the error that continues wf as new with what
// input returns then (the state as the last handler left it). Waiting adds no command.
func continueWhenLong[In any](ctx workflow.Context, maxEvents int, wf any, input func() In) error {
	if err := workflow.Await(ctx, func() bool { return historyLong(ctx, maxEvents) }); err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, wf, input())
}
