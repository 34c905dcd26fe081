package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// SendOptions are a send's options beyond the event (SendWith, PublishWith).
type SendOptions struct {
	// DeliverAt, if set, is when the first attempt goes: the delivery starts now, durable,
	// shows as scheduled, and waits on a timer until then. It may be up to
	// policy.ScheduleSkew in the past (taken as now) and at most policy.MaxScheduleAhead
	// (90 days) ahead; anything else is refused with ErrInvalid.
	DeliverAt time.Time
}

// deliverAt checks o's deliver_at at now: zero for at once.
func (o SendOptions) deliverAt(now time.Time) (time.Time, error) {
	at, err := policy.CheckDeliverAt(o.DeliverAt, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return at.UTC(), nil
}

// scheduledSummary is what a scheduled delivery's summary in the Temporal UI adds.
func scheduledSummary(at time.Time) string {
	if at.IsZero() {
		return ""
	}
	return ", scheduled for " + at.UTC().Format(time.RFC3339)
}

// Cancelled says what a cancel stopped.
type Cancelled struct {
	// Status is the cancelled delivery's status (state cancelled, Cancelled set), for an
	// event sent to one endpoint or a delivery named by its endpoint.
	Status *herald.Status `json:"status,omitempty"`
	// Endpoints are the endpoints whose delivery was cancelled, for an event sent to the
	// tenant named without an endpoint: every delivery that could be stopped is.
	Endpoints []string `json:"endpoints,omitempty"`
}

// Cancel stops the delivery ref names, recording req's reason and who asked in its
// history and status: a scheduled send, a delivery waiting for its retry or for its
// endpoint, or a dead letter. An attempt in flight finishes first; Cancel waits for it
// (within ctx), and if it delivered the event, fails with ErrConflict ("already
// delivered"), as it does for a delivery that has ended (delivered, skipped, expired,
// cancelled). For an event sent to the tenant (Publish) named without an endpoint, every
// delivery that can be stopped is, and Endpoints lists them (none is ErrConflict).
func (s *Client) Cancel(ctx context.Context, ref Ref, req herald.CancelRequest) (Cancelled, error) {
	if err := req.Validate(); err != nil {
		return Cancelled{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	r, wfID, err := ref.resolve()
	if err != nil {
		return Cancelled{}, err
	}
	if r.delivery() {
		st, err := s.cancel(ctx, wfID, r.EventID, req)
		return Cancelled{Status: &st}, err
	}
	rep, err := s.Status(ctx, ref)
	if err != nil {
		return Cancelled{}, err
	}
	if rep.Fanout == nil {
		st, err := s.cancel(ctx, wfID, r.EventID, req)
		return Cancelled{Status: &st}, err
	}
	out := Cancelled{Endpoints: []string{}}
	var errs []error
	for _, d := range rep.Fanout.Deliveries {
		if d.Status == nil || herald.CancelRefusal(d.Status.State) != "" {
			continue
		}
		if _, err := s.cancel(ctx, d.WorkflowID, r.EventID, req); err != nil {
			errs = append(errs, fmt.Errorf("endpoint %s: %w", d.EndpointID, err))
			continue
		}
		out.Endpoints = append(out.Endpoints, d.EndpointID)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("cancel event %s: %w", r.EventID, err)
	}
	if len(out.Endpoints) == 0 {
		return out, fmt.Errorf("%w: event %s%s: none of its deliveries can be cancelled (delivered or ended)", ErrConflict, r.EventID, ofTenant(r.Tenant))
	}
	return out, nil
}

// cancel sends the cancel update to delivery wfID of event eventID and waits for its answer.
func (s *Client) cancel(ctx context.Context, wfID, eventID string, req herald.CancelRequest) (herald.Status, error) {
	var st herald.Status
	h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: wfID, UpdateName: herald.UpdateCancel, Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &st)
	}
	if err == nil {
		return st, nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return st, fmt.Errorf("%w: %s", ErrConflict, app.Message())
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		// Closed (delivered, ended) or never sent: the status says which.
		closed, serr := s.deliveryStatus(ctx, wfID, "", eventID)
		if serr != nil {
			return st, serr
		}
		why := herald.CancelRefusal(closed.State)
		if closed.State == herald.StateDelivered && !closed.DeliveredAt.IsZero() {
			why += " at " + closed.DeliveredAt.UTC().Format(time.RFC3339)
		}
		if why == "" {
			why = "it is " + string(closed.State)
		}
		return closed, fmt.Errorf("%w: event %s: %s", ErrConflict, eventID, why)
	}
	return st, fmt.Errorf("cancel event %s: %w", eventID, err)
}
