package starter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/heraldhq/herald"
)

// Report is what Status finds: the status of the delivery a Ref names or, for an event
// sent to the tenant (Publish) named without an endpoint, that event with each endpoint's
// delivery of it (Fanout set; the embedded status is then zero).
type Report struct {
	herald.Status
	// Fanout is set for an event sent to the tenant: the event and its deliveries, one
	// per endpoint.
	Fanout *herald.EventView
}

// Status returns where what ref names stands. For a delivery (an event sent to one
// endpoint, one endpoint's delivery of an event sent to the tenant, or a workflow id) it is
// the delivery's status, attempts included; a delivery no worker could start because it
// lacks the payload's key is reported as StateWaitingKey. For an event sent to the tenant
// named by its tenant and id, it is the event and each endpoint's delivery (Report.Fanout).
// ErrNotFound when there is no such event or delivery.
func (s *Client) Status(ctx context.Context, ref Ref) (Report, error) {
	r, wfID, err := ref.resolve()
	if err != nil {
		return Report{}, err
	}
	if r.delivery() {
		st, err := s.deliveryStatus(ctx, wfID, r.Tenant, r.EventID)
		return Report{Status: st}, err
	}
	st, err := s.statusOf(ctx, wfID, r.Tenant, r.EventID)
	if !errors.Is(err, ErrNotFound) {
		return Report{Status: st}, err
	}
	// Not sent to one endpoint: an event sent to the tenant, if any.
	v, ferr := s.eventStatus(ctx, r.Tenant, r.EventID)
	switch {
	case ferr == nil:
		return Report{Fanout: &v}, nil
	case errors.Is(ferr, ErrNotFound):
		return Report{}, err
	}
	return Report{}, ferr
}

// statusOf returns the status of the delivery wfID of a tenant's event sent to one
// endpoint. An event sent to the tenant holds its id under wfID too (the fan-out event
// record), and answers no status query: ErrNotFound then says where to look.
func (s *Client) statusOf(ctx context.Context, wfID, tenant, eventID string) (herald.Status, error) {
	st, err := s.deliveryStatus(ctx, wfID, tenant, eventID)
	if err != nil && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		if _, fanout, ferr := s.sentEvent(ctx, wfID); ferr == nil && fanout {
			return st, fmt.Errorf("%w: event %s%s was sent to the tenant, not to one endpoint: its deliveries are listed by tenant (herald status %s --tenant %s)",
				ErrNotFound, eventID, ofTenant(tenant), eventID, herald.TenantOrDefault(tenant))
		}
	}
	return st, err
}

// statusPatience is how long a status query is waited for before the status is read from
// the delivery's search attributes: a delivery answers queries only between attempts, and
// an attempt may take its endpoint's whole timeout (30 s by default).
const statusPatience = 3 * time.Second

// deliveryStatus returns the status of the delivery workflow wfID of a tenant's event.
func (s *Client) deliveryStatus(ctx context.Context, wfID, tenant, eventID string) (herald.Status, error) {
	var st herald.Status
	qctx, cancel := context.WithTimeout(ctx, statusPatience)
	v, err := s.c.QueryWorkflow(qctx, wfID, "", herald.QueryStatus)
	// The server may give up on the query before qctx does.
	var deadline *serviceerror.DeadlineExceeded
	unanswered := err != nil && ctx.Err() == nil && (qctx.Err() != nil || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded))
	cancel()
	if unanswered {
		if b, ok := s.busyStatus(ctx, wfID, eventID); ok {
			return b, nil
		}
		// No attempt in flight: wait for an answer as long as the caller does.
		v, err = s.c.QueryWorkflow(ctx, wfID, "", herald.QueryStatus)
	}
	if err != nil {
		if isNotFound(err) {
			return st, fmt.Errorf("%w: no event %s%s (it was never sent, or it closed longer ago than the namespace's retention)", ErrNotFound, eventID, ofTenant(tenant))
		}
		if w, ok := s.waitingForKey(ctx, wfID); ok {
			return w, nil
		}
		return st, fmt.Errorf("status of event %s: %w", eventID, err)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("status of event %s: %w", eventID, err)
	}
	return st, nil
}

// busyStatus reads the status of a running delivery that is making an attempt (its
// workflow task started and still open: the attempt is a local activity) from its search
// attributes, with Busy set. It reports false for any other delivery.
func (s *Client) busyStatus(ctx context.Context, wfID, eventID string) (herald.Status, bool) {
	d, err := s.c.DescribeWorkflowExecution(ctx, wfID, "")
	if err != nil {
		return herald.Status{}, false
	}
	task := d.GetPendingWorkflowTask()
	if d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING ||
		task.GetState() != enumspb.PENDING_WORKFLOW_TASK_STATE_STARTED {
		return herald.Status{}, false
	}
	sa := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	return herald.Status{
		Event: herald.EventSummary{ID: eventID, EndpointID: keyword(sa[herald.AttrEndpoint.GetName()].GetData()),
			Type: keyword(sa[herald.AttrEventType.GetName()].GetData())},
		State: herald.StateAttempting,
		Busy:  &herald.Busy{Since: task.GetStartedTime().AsTime()},
	}, true
}

// ofTenant names a tenant other than the default in messages: " of tenant acme".
func ofTenant(tenant string) string {
	if tenant == "" || tenant == herald.DefaultTenant {
		return ""
	}
	return " of tenant " + tenant
}

// eventStatus shows an event sent to a tenant (Publish) and each endpoint's delivery of
// it. It looks up directly the delivery of every endpoint of the tenant subscribed to the
// event's type now (the ids are deterministic; the type is the event's as the record of
// its id holds it), and lists by event id (HeraldEventId) any other, such as that of an
// endpoint that has left the tenant or the type since. An endpoint that matches the
// event's type (and whose filter lets it in) now but has no delivery is shown as missing. ErrNotFound when the tenant
// has no such event.
func (s *Client) eventStatus(ctx context.Context, tenant, eventID string) (herald.EventView, error) {
	tenant = herald.TenantOrDefault(tenant)
	view := herald.EventView{ID: eventID, Tenant: tenant, Deliveries: []herald.DeliveryView{}}
	if err := herald.ValidateTenant(tenant); err != nil {
		return view, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := herald.ValidateEventID(eventID); err != nil {
		return view, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	endpoints := map[string]bool{}
	var subscribed []string
	ev, held, err := s.sentEvent(ctx, herald.DeliveryID(tenant, eventID))
	if held = held && err == nil; held {
		view.Type, view.SentAt = ev.Type, ev.CreatedAt
		if subscribed, _, err = s.Receivers(ctx, tenant, ev); err != nil {
			return view, err
		}
		for _, ep := range subscribed {
			endpoints[ep] = true
		}
	}
	q := herald.Workflows(herald.DeliveryWorkflow).Is(herald.AttrEventID, eventID).String()
	for ex, err := range herald.Executions(ctx, s.c, q, 500) {
		if err != nil {
			return view, fmt.Errorf("list the deliveries of event %s: %w", eventID, err)
		}
		if t, ep, _, ok := herald.ParseFanoutDeliveryID(ex.GetExecution().GetWorkflowId()); ok && t == tenant {
			endpoints[ep] = true
		}
	}
	ids := make([]string, 0, len(endpoints))
	for ep := range endpoints {
		ids = append(ids, ep)
	}
	sort.Strings(ids)
	views := make([]herald.DeliveryView, len(ids))
	found := make([]bool, len(ids))
	eachAtOnce(len(ids), 8, func(i int) {
		wfID := herald.FanoutDeliveryID(tenant, ids[i], eventID)
		views[i] = herald.DeliveryView{EndpointID: ids[i], WorkflowID: wfID}
		st, err := s.deliveryStatus(ctx, wfID, tenant, eventID)
		switch {
		case errors.Is(err, ErrNotFound):
			return
		case err != nil:
			views[i].Error = err.Error()
		default:
			views[i].Status = &st
		}
		found[i] = true
	})
	for i, v := range views {
		if found[i] {
			view.Deliveries = append(view.Deliveries, v)
			if st := v.Status; st != nil && view.Type == "" {
				view.Type, view.SentAt = st.Event.Type, st.Event.CreatedAt
			}
		}
	}
	if ev, err := s.noDestinationEvent(ctx, herald.NoDestinationID(tenant, eventID)); err == nil {
		view.NoDestination = true
		if view.Type == "" {
			view.Type, view.SentAt = ev.Type, ev.CreatedAt
		}
	} else if len(view.Deliveries) == 0 && !held {
		return view, fmt.Errorf("%w: no event %s of tenant %s was sent to the tenant (it was never sent, or it closed longer ago than the namespace's retention; for an event sent to one endpoint, see herald status without fan-out)", ErrNotFound, eventID, tenant)
	}
	// Endpoints that subscribe to the type now and have no delivery: a send cut short, or
	// a subscription added since. Sending the event again adds them.
	for i, ep := range ids {
		if _, now := slices.BinarySearch(subscribed, ep); !found[i] && now {
			view.Deliveries = append(view.Deliveries, herald.DeliveryView{EndpointID: ep, WorkflowID: views[i].WorkflowID, Missing: true})
		}
	}
	sort.Slice(view.Deliveries, func(i, j int) bool { return view.Deliveries[i].EndpointID < view.Deliveries[j].EndpointID })
	return view, nil
}
