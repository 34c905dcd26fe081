package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
)

// opsOptions are the options of the local activity that emits an operational event: retried
// for a few minutes, then given up (logged).
var opsOptions = workflow.LocalActivityOptions{
	ScheduleToCloseTimeout: 5 * time.Minute,
	StartToCloseTimeout:    15 * time.Second,
	RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	Summary:                "operational event",
}

// emitOps emits the operational event typ about d, its id made from key (herald.OpsEvent):
// a local activity starts its delivery if an operational endpoint is registered.
func emitOps(ctx workflow.Context, typ, key string, d herald.OpsData) {
	ev, err := herald.OpsEvent(typ, key, d)
	if err == nil {
		var ops *activities.Ops
		err = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opsOptions), ops.EmitOps, ev).Get(ctx, nil)
	}
	if err != nil {
		workflow.GetLogger(ctx).Warn("operational event not sent", "type", typ, "endpoint", d.EndpointID, "error", err)
	}
}

// emitTransitions emits the operational events of the endpoint's changes since the last
// pass: its circuit opened or closed (circuit was its state then), or it was disabled
// (disabled was the cause then). The operational endpoint emits none. Each runs in a
// goroutine of its own, counted in emitting, so that the loop never waits for one.
func (e *endpointRun) emitTransitions(ctx workflow.Context, circuit policy.CircuitState, disabled policy.DisableCause) {
	ep := e.in.Endpoint
	if ep == nil || herald.IsOps(ep.Tenant, e.in.ID) {
		return
	}
	now := workflow.Now(ctx)
	d := herald.OpsData{EndpointID: e.in.ID, Tenant: ep.Tenant, At: now}
	var events []herald.OpsData
	var types []string
	if circuit != "" && circuit != e.in.Circuit {
		switch e.in.Circuit {
		case policy.CircuitOpen:
			o := d
			o.Reason = e.in.Limiter.Breaker.TripReason()
			events, types = append(events, o), append(types, herald.OpsCircuitOpened)
		case policy.CircuitClosed:
			events, types = append(events, d), append(types, herald.OpsCircuitClosed)
		}
	}
	if disabled == "" && e.in.Disabled != "" && e.in.Limiter.Disabled != nil {
		o := d
		o.Cause, o.Reason = string(e.in.Limiter.Disabled.Cause), e.in.Limiter.Disabled.Reason
		events, types = append(events, o), append(types, herald.OpsEndpointDisabled)
	}
	for i, o := range events {
		typ := types[i]
		e.emitting++
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer func() { e.emitting-- }()
			emitOps(gctx, typ, fmt.Sprintf("%s|%d", e.in.ID, now.UnixNano()), o)
		})
	}
}

// emitOps emits the delivery's operational event typ (dead-lettered, recovered) with
// reason, unless the delivery is itself an operational one.
func (d *delivery) emitOps(ctx workflow.Context, typ, reason string) {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	tenant, _, _ := herald.ParseDeliveryID(id)
	ev := d.in.Event
	if herald.IsOps(tenant, ev.EndpointID) {
		return
	}
	emitOps(ctx, typ, fmt.Sprintf("%s|%d", id, d.status.Round), herald.OpsData{
		EndpointID: ev.EndpointID, Tenant: tenant, At: workflow.Now(ctx), Reason: reason,
		EventID: ev.ID, EventType: ev.Type, Round: d.status.Round, Attempts: len(d.status.Attempts),
	})
}
