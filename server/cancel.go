package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// cancelRequest is the optional body of POST /v1/events/{id}/cancel.
type cancelRequest struct {
	// Reason says why (at most herald.MaxCancelReason bytes); it is kept in the
	// delivery's history and status.
	Reason string `json:"reason,omitempty"`
}

// cancelResponse answers a cancel: the delivery's status, or for an event sent to a tenant
// named without an endpoint, the endpoints whose delivery was cancelled.
type cancelResponse struct {
	ID        string         `json:"id"`
	Cancelled bool           `json:"cancelled"`
	Status    *herald.Status `json:"status,omitempty"`
	Endpoints []string       `json:"endpoints,omitempty"`
}

// apiCancel stops a scheduled, waiting or dead-lettered delivery (starter.Client.Cancel).
// A tenant token cancels only its own tenant's events, to endpoints it still owns (as it
// replays them); the cancel records who asked.
func (s *Server) apiCancel(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	var body cancelRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, maxBody, &body); err != nil {
			return 0, nil, err
		}
	}
	id := r.PathValue("id")
	tenant, rep, err := s.pathEvent(ctx, r, p)
	if err != nil {
		return 0, nil, err
	}
	if err := s.mayCancel(ctx, p, rep); err != nil {
		return 0, nil, err
	}
	done, err := s.opts.Starter.Cancel(ctx, starter.Ref{Tenant: tenant, EventID: id, Endpoint: r.URL.Query().Get("endpoint")},
		herald.CancelRequest{Reason: body.Reason, By: p.who()})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, cancelResponse{ID: id, Cancelled: true, Status: done.Status, Endpoints: done.Endpoints}, nil
}

// mayCancel checks that p may cancel the deliveries of rep that a cancel would stop: an
// operator any, a tenant token those to endpoints its tenant still owns.
func (s *Server) mayCancel(ctx context.Context, p principal, rep starter.Report) error {
	if p.operator() {
		return nil
	}
	if rep.Fanout == nil {
		return s.mayCancelTo(ctx, p, rep.Status.Event.ID, rep.Status.Event.EndpointID)
	}
	for _, d := range rep.Fanout.Deliveries {
		if d.Status != nil && herald.CancelRefusal(d.Status.State) == "" {
			if err := s.mayCancelTo(ctx, p, rep.Fanout.ID, d.EndpointID); err != nil {
				return err
			}
		}
	}
	return nil
}

// mayCancelTo is mayCancel for event id's delivery to endpoint: the endpoint must still
// be p's tenant's.
func (s *Server) mayCancelTo(ctx context.Context, p principal, id, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	if _, err := s.endpointFor(ctx, p, endpoint); err != nil {
		if errors.Is(err, starter.ErrNotFound) {
			return fmt.Errorf("%w: event %s went to endpoint %s, which no longer belongs to tenant %s: ask an operator to cancel it", starter.ErrConflict, id, endpoint, p.token.Tenant)
		}
		return err
	}
	return nil
}

// cancelledText says on the event page when, by whom and why a delivery was cancelled.
func cancelledText(at string, c *herald.Cancellation) string {
	return "cancelled at " + at + cancelledWhy(c)
}

// cancelledWhy is " by <who> while <phase>: <reason>", with the parts known.
func cancelledWhy(c *herald.Cancellation) string {
	s := ""
	if c.By != "" {
		s += " by " + c.By
	}
	if c.Phase != "" {
		s += " while " + string(c.Phase)
	}
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// cancelForm is the event page's Cancel button: it cancels the delivery the page shows,
// with the reason typed next to it, as the signed-in principal, and returns to the page.
func (s *Server) cancelForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	ref, st, err := s.pathDelivery(ctx, r, p)
	if err != nil {
		return err
	}
	if err := s.mayCancel(ctx, p, starter.Report{Status: st}); err != nil {
		return err
	}
	reason := r.PostFormValue("reason")
	if len(reason) > herald.MaxCancelReason {
		return fmt.Errorf("%w: the reason is %d bytes long; the limit is %d", starter.ErrInvalid, len(reason), herald.MaxCancelReason)
	}
	if _, err := s.opts.Starter.Cancel(ctx, ref, herald.CancelRequest{Reason: reason, By: p.who()}); err != nil {
		return err
	}
	q := url.Values{"done": {"cancelled"}, "event": {ref.EventID}}
	if tenantQuery(ref.Tenant) != "" || ref.Endpoint != "" {
		q.Set("tenant", ref.Tenant)
	}
	if ref.Endpoint != "" {
		q.Set("endpoint", ref.Endpoint)
	}
	http.Redirect(w, r, withQuery("/events/"+url.PathEscape(ref.EventID), q), http.StatusSeeOther)
	return nil
}
