package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// Scheduled sends and cancels of the delivery workflow. A scheduled send waits on a
// durable timer before its first attempt; a cancel (herald.UpdateCancel) stops the
// delivery wherever it waits, and the update's answer says what became of it. What may
// be cancelled when is policy.OnCancel's.

// cancelling is a delivery's cancel once accepted: the request, and the channel that
// wakes the delivery's waits (a Selector cannot wait on a field).
type cancelling struct {
	req  *herald.CancelRequest
	wake workflow.Channel
}

// setCancelHandler registers the cancel update. Its validator refuses, without a trace in
// history, a delivery that has nothing left to stop (delivered, ended) and a reason over
// the limit; an accepted cancel waits until the delivery has stopped, or until the attempt
// in flight has delivered the event (an error then).
func (d *delivery) setCancelHandler(ctx workflow.Context) error {
	d.cancel.wake = workflow.NewBufferedChannel(ctx, 1)
	return workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateCancel,
		func(ctx workflow.Context, req herald.CancelRequest) (herald.Status, error) {
			if workflow.GetVersion(ctx, versionCancel, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
				return d.status, temporal.NewNonRetryableApplicationError("this delivery started on a release without cancel", "CancelUnsupported", nil)
			}
			if d.cancel.req == nil {
				d.cancel.req = &req
				d.cancel.wake.Send(ctx, struct{}{})
			}
			if err := workflow.Await(ctx, func() bool { return herald.CancelPhase(d.status.State) >= policy.PhaseDelivered }); err != nil {
				return d.status, err
			}
			if d.status.State != herald.StateCancelled {
				return d.status, d.refusal(d.status.State)
			}
			return d.status, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req herald.CancelRequest) error {
			if err := req.Validate(); err != nil {
				return err
			}
			if herald.CancelRefusal(d.status.State) != "" {
				return d.refusal(d.status.State)
			}
			return nil
		}})
}

// refusal is the error of a cancel that finds the delivery in state s, with nothing to stop.
func (d *delivery) refusal(s herald.State) error {
	why := herald.CancelRefusal(s)
	if s == herald.StateDelivered {
		why += " at " + d.status.DeliveredAt.UTC().Format(time.RFC3339)
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("event %s: %s", d.in.Event.ID, why), "CancelRefused", nil)
}

// addCancel makes sel stop waiting when a cancel comes: *stopped is set.
func (d *delivery) addCancel(ctx workflow.Context, sel workflow.Selector, stopped *bool) {
	sel.AddReceive(d.cancel.wake, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		*stopped = true
	})
}

// cancelled reports whether a cancel has been accepted.
func (d *delivery) cancelled() bool { return d.cancel.req != nil }

// stop ends the delivery as cancelled, from the state it waited in: the status, the
// MemoCancelled memo field (and no more MemoDeadLetter), HeraldStatus, and the permit it
// held back to its endpoint.
func (d *delivery) stop(ctx workflow.Context) {
	req := d.cancel.req
	now := workflow.Now(ctx)
	// attempting: the cancel came while an attempt was in flight, which failed; what
	// followed it (a retry, or the dead letter) is what stops.
	phase := d.status.State
	d.status.Cancelled = &herald.Cancellation{At: now, Reason: req.Reason, By: req.By, Phase: phase}
	d.status.NextAttemptAt, d.status.Waiting = time.Time{}, nil
	note := fmt.Sprintf("cancelled at %s while %s", now.UTC().Format(time.RFC3339), phase)
	if req.By != "" {
		note += " by " + req.By
	}
	if req.Reason != "" {
		note += ": " + req.Reason
	}
	memo := map[string]any{herald.MemoCancelled: note}
	if phase == herald.StateDeadLetter {
		memo[herald.MemoDeadLetter] = nil
		d.status.DeadAt, d.status.ExpiresAt = time.Time{}, time.Time{}
	}
	_ = workflow.UpsertMemo(ctx, memo)
	d.returnPermit(ctx)
	d.setState(ctx, herald.StateCancelled, true)
	workflow.GetLogger(ctx).Info(note, "event", d.in.Event.ID, "endpoint", d.in.Event.EndpointID)
}

// returnPermit gives a permit the delivery received and will not use back to its
// endpoint workflow (herald.SignalDones), as the gate does after an attempt.
func (d *delivery) returnPermit(ctx workflow.Context) {
	var p policy.Grant
	for d.permits.ReceiveAsync(&p) {
		if !p.Disabled {
			d.permit = &p
		}
		p = policy.Grant{}
	}
	if d.passes.ReceiveAsync(&p) { // a pass taken as the cancel came (herald.UpdatePass)
		d.permit = &p
	}
	if d.permit == nil {
		return
	}
	d.permit = nil
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	f := workflow.SignalExternalWorkflow(ctx, herald.EndpointWorkflowID(d.in.Event.EndpointID), "", herald.SignalDones, []herald.Done{{Waiter: id}})
	if err := f.Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("permit not returned: it comes back when it expires", "event", d.in.Event.ID, "error", err)
	}
}

// awaitSchedule waits until the scheduled send is due (its deliver_at), unless a cancel
// comes first; it reports whether the delivery was cancelled.
func (d *delivery) awaitSchedule(ctx workflow.Context, wait time.Duration) (bool, error) {
	at := d.status.DeliverAt.UTC().Format(time.RFC3339)
	d.setState(ctx, herald.StateScheduled, true)
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, wait, workflow.TimerOptions{Summary: "scheduled: first attempt at " + at})
	var err error
	fired, stopped := false, false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(f workflow.Future) { fired, err = true, f.Get(ctx, nil) })
	sel.AddReceive(d.replays, func(c workflow.ReceiveChannel, _ bool) {
		d.ignoreReplay(ctx, c, "the send is scheduled for "+at+": nothing to replay yet (cancel it, or wait)")
	})
	d.addCancel(ctx, sel, &stopped)
	for !fired && !stopped {
		sel.Select(ctx)
	}
	return stopped, err
}

// schedule waits for a scheduled send's deliver_at before the first attempt, when the run
// has one in the future; it reports whether the delivery was cancelled meanwhile.
func (d *delivery) schedule(ctx workflow.Context) (bool, error) {
	at := d.in.DeliverAt
	if at.IsZero() || d.status.Round > 0 || len(d.status.Attempts) > 0 {
		return false, nil
	}
	d.status.DeliverAt = at
	wait := policy.ScheduledWait(at, workflow.Now(ctx))
	if wait <= 0 || workflow.GetVersion(ctx, versionScheduledSend, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false, nil
	}
	return d.awaitSchedule(ctx, wait)
}
