package activities

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
)

// Ops starts the deliveries of operational events (herald.OpsEvent). The workflow that sees
// a transition runs EmitOps as a local activity, so the event is emitted once the
// transition is recorded, and again (a no-op) if the workflow task is retried.
type Ops struct {
	Client client.Client
	// TaskQueue is the deliveries' task queue.
	TaskQueue string
}

// EmitOps starts the delivery of the operational event ev, if an operational endpoint is
// registered and enabled, and reports whether the delivery exists. Its id comes from the event's, so
// emitting the same event again starts nothing more.
func (o *Ops) EmitOps(ctx context.Context, ev herald.Event) (bool, error) {
	v, err := herald.ReadAdmission(ctx, o.Client, herald.OpsEndpointID)
	switch {
	case errors.Is(err, herald.ErrNoEndpoint):
		return false, nil // nobody listens: nothing to send
	case err != nil:
		return false, err
	case v.Snapshot.Disabled:
		return false, nil // switched off: not even a skipped delivery
	}
	_, err = o.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       herald.DeliveryID(herald.OpsTenant, ev.ID),
		TaskQueue:                                o.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			herald.AttrEndpoint.ValueSet(ev.EndpointID),
			herald.AttrEventType.ValueSet(ev.Type),
			herald.AttrEventID.ValueSet(ev.ID), // an operator's search by event id finds it
		),
		StaticSummary: fmt.Sprintf("%s → %s", ev.Type, ev.EndpointID),
	}, herald.DeliveryWorkflow, herald.DeliveryInput{Event: ev})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return false, fmt.Errorf("operational event %s: %w", ev.ID, err)
	}
	return true, nil
}
