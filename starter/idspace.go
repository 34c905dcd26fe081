package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/heraldhq/herald"
)

// One event id names one event per tenant, whether it was sent to one endpoint (Send) or
// to the tenant (Publish). Both hold the id by starting a workflow under the same id,
// herald.DeliveryID: a send to an endpoint starts its delivery there, a send to the tenant
// starts a herald.FanoutEventWorkflow record there before any delivery. Temporal starts
// one workflow per id (the reuse policy refuses a second while the first is kept), so the
// check is as consistent as the start itself, and costs a send to one endpoint nothing.
// A send that finds the id held compares its event with the holder's first history event
// (no worker is asked): the same type and data is the same event, anything else is
// ErrConflict.

// sentEvent returns the event the workflow holding a tenant's event id (wfID, a
// herald.DeliveryID) was started with, and whether it was sent to the tenant (fan-out)
// rather than to one endpoint.
func (s *Client) sentEvent(ctx context.Context, wfID string) (ev Event, fanout bool, err error) {
	started, err := s.startedEvent(ctx, wfID)
	if err != nil {
		return Event{}, false, err
	}
	in := started.GetInput()
	if started.GetWorkflowType().GetName() == herald.FanoutEventWorkflow {
		err = s.opts.DataConverter.FromPayloads(in, &ev)
		return ev, true, err
	}
	var d herald.DeliveryInput
	err = s.opts.DataConverter.FromPayloads(in, &d)
	return d.Event, false, err
}

// contentDifference says how ev's type or data differ from the event sent before (was),
// or returns "" when they are the same; the endpoint is not compared.
func contentDifference(was, ev Event) string {
	was.EndpointID = ev.EndpointID
	return difference(was, ev)
}

// resentToEndpoint answers a send of ev to one endpoint whose id the tenant's send to
// every subscribed endpoint (fan-out) holds: the same type and data, with a delivery to
// that endpoint, is that delivery; anything else is ErrConflict.
func (s *Client) resentToEndpoint(ctx context.Context, tenant string, ev, was Event) (SendResult, error) {
	if diff := contentDifference(was, ev); diff != "" {
		return SendResult{}, fmt.Errorf("%w: event id %s was already sent to tenant %s %s: send the same type and data again, or choose a new id", ErrConflict, ev.ID, herald.TenantOrDefault(tenant), diff)
	}
	wfID := herald.FanoutDeliveryID(tenant, ev.EndpointID, ev.ID)
	d, err := s.c.DescribeWorkflowExecution(ctx, wfID, "")
	if isNotFound(err) {
		return SendResult{}, fmt.Errorf("%w: event id %s was already sent to tenant %s (every endpoint subscribed to %s), and endpoint %s has no delivery of it: choose a new id, or send the event to the tenant again to reach endpoints subscribed since",
			ErrConflict, ev.ID, herald.TenantOrDefault(tenant), was.Type, ev.EndpointID)
	}
	if err != nil {
		return SendResult{}, fmt.Errorf("send event %s: the id was sent to tenant %s before, and its delivery to endpoint %s cannot be read: %w", ev.ID, herald.TenantOrDefault(tenant), ev.EndpointID, err)
	}
	return SendResult{EventID: ev.ID, WorkflowID: wfID, RunID: d.GetWorkflowExecutionInfo().GetExecution().GetRunId()}, nil
}

// holdForTenant holds a tenant's event id for ev, sent to the tenant, before any delivery
// starts. It returns the event as first sent when the id was held already by the same
// event sent to the tenant (its deliveries are then started again, which adds any a
// cut-short send left out), and direct set to the delivery when a send to one endpoint
// holds it with the same type and data (nothing more is started). Other content is
// ErrConflict.
func (s *Client) holdForTenant(ctx context.Context, tenant string, ev Event) (first Event, direct *FanoutDelivery, err error) {
	wfID := herald.DeliveryID(tenant, ev.ID)
	runID, existed, err := s.startOnce(ctx, wfID, fmt.Sprintf("%s for tenant %s", ev.Type, tenant), herald.FanoutEventWorkflow, ev,
		herald.AttrEventType.ValueSet(ev.Type), herald.AttrEventID.ValueSet(ev.ID), herald.AttrTenant.ValueSet(herald.TenantOrDefault(tenant)))
	if err != nil {
		return Event{}, nil, fmt.Errorf("send event %s to tenant %s: %w", ev.ID, tenant, err)
	}
	if !existed {
		return ev, nil, nil
	}
	was, fanout, err := s.sentEvent(ctx, wfID)
	if err != nil {
		return Event{}, nil, fmt.Errorf("send event %s: the id was sent before, and that event cannot be read to compare: %w", ev.ID, err)
	}
	if diff := contentDifference(was, ev); diff != "" {
		to := "to tenant " + tenant
		if !fanout {
			to = "to endpoint " + was.EndpointID
		}
		return Event{}, nil, fmt.Errorf("%w: event id %s was already sent %s %s: send the same type and data again, or choose a new id", ErrConflict, ev.ID, to, diff)
	}
	if !fanout {
		return was, &FanoutDelivery{EndpointID: was.EndpointID, WorkflowID: wfID, RunID: runID, Existed: true}, nil
	}
	return was, nil, nil
}

// sameEvent checks that ev is the event the delivery wfID was started with (sentEvent):
// the same endpoint, type and data (compared compacted). Otherwise it says which differs.
func (s *Client) sameEvent(ctx context.Context, wfID string, ev Event) error {
	was, _, err := s.sentEvent(ctx, wfID)
	if err != nil {
		return fmt.Errorf("send event %s: the id was sent before, and that event cannot be read to compare: %w", ev.ID, err)
	}
	if diff := difference(was, ev); diff != "" {
		return fmt.Errorf("%w: event id %s was already sent %s: send the same endpoint, type and data again, or choose a new id", ErrConflict, ev.ID, diff)
	}
	return nil
}

// difference says in which field (endpoint, type, data) the event sent before (was) and
// ev differ, the first only, or returns "" for the same event.
func difference(was, ev Event) string {
	switch {
	case was.EndpointID != ev.EndpointID:
		return fmt.Sprintf("to endpoint %s, not %s", was.EndpointID, ev.EndpointID)
	case was.Type != ev.Type:
		return fmt.Sprintf("with type %q, not %q", was.Type, ev.Type)
	case !sameJSON(was.Data, ev.Data):
		return "with different data"
	case was.OrderingKey != ev.OrderingKey:
		return fmt.Sprintf("with ordering key %q, not %q", was.OrderingKey, ev.OrderingKey)
	}
	return ""
}

func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// startInput returns the input of the latest run of workflow wfID, from its first history
// event: no worker is asked, so it works while no worker can run the workflow.
func (s *Client) startInput(ctx context.Context, wfID string) (*commonpb.Payloads, error) {
	attrs, err := s.startedEvent(ctx, wfID)
	if err != nil {
		return nil, err
	}
	return attrs.GetInput(), nil
}

// startedEvent returns the first history event of the latest run of workflow wfID: its
// type and input.
func (s *Client) startedEvent(ctx context.Context, wfID string) (*historypb.WorkflowExecutionStartedEventAttributes, error) {
	it := s.c.GetWorkflowHistory(ctx, wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return nil, fmt.Errorf("workflow %s has no history", wfID)
	}
	first, err := it.Next()
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", wfID, err)
	}
	attrs := first.GetWorkflowExecutionStartedEventAttributes()
	if attrs == nil {
		return nil, fmt.Errorf("history of %s does not start with the workflow's start", wfID)
	}
	return attrs, nil
}
