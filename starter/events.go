package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/heraldhq/herald"
)

// Limits of a page of ListEvents.
const (
	// DefaultEventPage is how many deliveries a page holds unless asked otherwise.
	DefaultEventPage = 25
	// MaxEventPage is the most a page may hold.
	MaxEventPage = 200
)

// ListedEvent is one delivery in the event list, as the visibility store knows it (no
// query to the workflow, so no payload nor attempts).
type ListedEvent struct {
	EventID    string       `json:"event_id"`
	Tenant     string       `json:"tenant"`
	EndpointID string       `json:"endpoint_id"`
	Type       string       `json:"type"`
	State      herald.State `json:"state"`
	// SentAt is when the delivery started: the send, or its last replay.
	SentAt time.Time `json:"sent_at,omitzero"`
	// ClosedAt is when the delivery finished (absent while it runs).
	ClosedAt   time.Time `json:"closed_at,omitzero"`
	WorkflowID string    `json:"workflow_id"`
	// Fanout is set for a delivery of an event sent to the tenant (its id names the endpoint).
	Fanout bool `json:"fanout,omitempty"`
}

// EventPage is one page of ListEvents: Next is the cursor of the next page, empty on the last.
type EventPage struct {
	Events []ListedEvent
	Next   []byte
}

// ListEvents lists one page of the deliveries f selects, in the order of the visibility
// store (running first, then the latest closed), from cursor (nil: the first page). limit
// is 1 to MaxEventPage (0: DefaultEventPage). A page may hold fewer than limit and still
// have a next one.
func (s *Client) ListEvents(ctx context.Context, f herald.EventFilter, cursor []byte, limit int) (EventPage, error) {
	if limit == 0 {
		limit = DefaultEventPage
	}
	if limit < 1 || limit > MaxEventPage {
		return EventPage{}, fmt.Errorf("%w: limit %d is out of range: use 1 to %d", ErrInvalid, limit, MaxEventPage)
	}
	if err := f.Validate(); err != nil {
		return EventPage{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	// Visibility stores' cursors are JSON objects. Refused here, another is no quick
	// error: the SQL store fails it in a way the client retries until its deadline.
	if cursor != nil && !isJSONObject(cursor) {
		return EventPage{}, fmt.Errorf("%w: the cursor is not one a page gave: start from the first page", ErrInvalid)
	}
	resp, err := s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: f.Query(), PageSize: int32(limit), NextPageToken: cursor,
	})
	if err != nil {
		if cursor != nil && strings.Contains(strings.ToLower(err.Error()), "token") {
			return EventPage{}, fmt.Errorf("%w: the cursor is not valid for this search: start from the first page", ErrInvalid)
		}
		return EventPage{}, fmt.Errorf("list events: %w", err)
	}
	page := EventPage{Next: resp.GetNextPageToken()}
	for _, ex := range resp.GetExecutions() {
		id := ex.GetExecution().GetWorkflowId()
		tenant, evID, ok := herald.ParseDeliveryID(id)
		if !ok {
			continue
		}
		_, _, _, fanout := herald.ParseFanoutDeliveryID(id)
		sa := ex.GetSearchAttributes().GetIndexedFields()
		le := ListedEvent{
			EventID: evID, Tenant: tenant, WorkflowID: id, Fanout: fanout,
			EndpointID: keyword(sa[herald.AttrEndpoint.GetName()].GetData()),
			Type:       keyword(sa[herald.AttrEventType.GetName()].GetData()),
			State: herald.ListedState(keyword(sa[herald.AttrStatus.GetName()].GetData()),
				executionStatus(ex.GetStatus().String())),
			SentAt: ex.GetStartTime().AsTime(),
		}
		if ct := ex.GetCloseTime(); ct != nil && ex.GetStatus().String() != "WORKFLOW_EXECUTION_STATUS_RUNNING" {
			le.ClosedAt = ct.AsTime()
		}
		page.Events = append(page.Events, le)
	}
	return page, nil
}

// isJSONObject reports whether b is one JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// executionStatus turns WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW into ContinuedAsNew.
func executionStatus(enum string) string {
	var b strings.Builder
	for _, w := range strings.Split(strings.TrimPrefix(enum, "WORKFLOW_EXECUTION_STATUS_"), "_") {
		if w != "" {
			b.WriteString(w[:1] + strings.ToLower(w[1:]))
		}
	}
	return b.String()
}

// DeliveryCounts counts an endpoint's finished deliveries in the visibility store (so
// within the namespace's retention): those delivered, and those that ended otherwise (dead
// letters and expired ones) of events tenant sent (an endpoint moved in from another tenant
// does not bring its old deliveries along). A delivery replayed and delivered again counts once per run.
// Skipped deliveries (endpoint disabled, no request made) count in neither.
func (s *Client) DeliveryCounts(ctx context.Context, endpointID, tenant string) (delivered, failed int, err error) {
	count := func(st herald.State) (int, error) {
		resp, err := s.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: herald.EventFilter{Endpoints: []string{endpointID}, Tenant: herald.TenantOrDefault(tenant), State: st}.Query(),
		})
		if err != nil {
			return 0, fmt.Errorf("count deliveries of %s: %w", endpointID, err)
		}
		return int(resp.GetCount()), nil
	}
	if delivered, err = count(herald.StateDelivered); err != nil {
		return 0, 0, err
	}
	for _, st := range []herald.State{herald.StateDeadLetter, herald.StateExpired} {
		n, err := count(st)
		if err != nil {
			return 0, 0, err
		}
		failed += n
	}
	return delivered, failed, nil
}

// EventOf returns a tenant's event as its delivery holds it, payload included (decrypted
// by the client's data converter): the delivery to endpoint of an event sent to the tenant,
// or with endpoint empty, the delivery of an event sent to one endpoint.
func (s *Client) EventOf(ctx context.Context, tenant, endpoint, eventID string) (herald.Event, error) {
	wfID := herald.DeliveryID(tenant, eventID)
	if endpoint != "" {
		wfID = herald.FanoutDeliveryID(tenant, endpoint, eventID)
	}
	var ev herald.Event
	v, err := s.c.QueryWorkflow(ctx, wfID, "", herald.QueryEvent)
	if err == nil {
		err = v.Get(&ev)
	}
	if err != nil {
		return herald.Event{}, fmt.Errorf("read event %s: %w", eventID, err)
	}
	return ev, nil
}
