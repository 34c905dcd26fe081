package activities

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// WakeWaiters hands r.Grants, passes of endpoint r.Endpoint's queue, to their deliveries
// (herald.UpdatePass), from this process, after the local activity that asked has
// returned: the endpoint workflow's task does not wait for the deliveries' tasks, and
// leaves one event for the whole batch where a signal per pass left two. It returns the
// waiters it had no room for (wakePending passes held at once per process, of which
// wakeInFlight are being sent), which the endpoint workflow signals itself.
//
// A pass a delivery refuses (it is not waiting for its endpoint), or whose delivery is
// gone, is given back to the endpoint (herald.SignalDones, herald.Done.Refused);
// an update the delivery's code refuses otherwise (a worker of an older release has no
// such update) falls back to the permit signal; one that gets no answer is left to the
// endpoint, which hands the pass out again. A pass lost with this process is handed out again by
// the endpoint once its time is over (policy.Limiter.RewakePasses).
func (o *Operator) WakeWaiters(ctx context.Context, r herald.PassWake) (herald.PassWoken, error) {
	o.wakeOnce.Do(func() { o.wakeSlots = make(chan struct{}, wakeInFlight) })
	var out herald.PassWoken
	for _, g := range r.Grants {
		if o.wakePending.Add(1) > wakePending {
			o.wakePending.Add(-1)
			out.Declined = append(out.Declined, g.Waiter)
			continue
		}
		out.Sent++
		go func() {
			defer o.wakePending.Add(-1)
			o.wakeSlots <- struct{}{}
			defer func() { <-o.wakeSlots }()
			o.sendPass(r.Endpoint, g)
		}()
	}
	return out, nil
}

// Limits of WakeWaiters (variables for the tests only).
var (
	// wakeInFlight bounds the pass updates a process has in flight at once: each is a
	// delivery's workflow task, with its attempt, and a burst of them as a backlog's drain
	// starts must not take every workflow-task slot of the workers.
	wakeInFlight = 64
	// wakePending bounds the passes a process holds, in flight or waiting for a place.
	wakePending int64 = 10000
	// wakeTimeout bounds one pass update: the delivery takes it in a workflow task that
	// also runs its attempt.
	wakeTimeout = time.Minute
)

// sendPass hands g to its delivery by update, or by signal when the update cannot say.
func (o *Operator) sendPass(endpoint string, g policy.Grant) {
	ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
	defer cancel()
	h, err := o.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: g.Waiter, UpdateName: herald.UpdatePass, Args: []any{g}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	var app *temporal.ApplicationError
	switch {
	case err == nil:
		return
	case errors.As(err, &app) && app.Type() == herald.NotWaitingForPermit, isNotFound(err):
	case app != nil:
		// Refused by the delivery's code for another reason (a worker of an older release
		// has no such update): it did not take the pass, so the permit signal is safe.
		if err = o.Client.SignalWorkflow(ctx, g.Waiter, "", herald.SignalPermit, g); err == nil || !isNotFound(err) {
			return
		}
	default:
		// No answer (a timeout, a server restarting): the delivery may have taken the pass,
		// and a permit signal it does not expect could make the server refuse its last
		// workflow task, so that its attempt runs again. The endpoint hands the pass out
		// again, by update, if no gate reports it used (policy.Limiter.RewakePasses).
		return
	}
	// Nobody takes the pass: the endpoint forgets it, if it is still the one it handed out.
	_ = o.Client.SignalWorkflow(ctx, herald.EndpointWorkflowID(endpoint), "", herald.SignalDones, []herald.Done{{Waiter: g.Waiter, Refused: g.Until}})
}

// wakeState is the Operator's part for WakeWaiters.
type wakeState struct {
	wakeOnce    sync.Once
	wakeSlots   chan struct{}
	wakePending atomic.Int64
}
