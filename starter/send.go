package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
)

// SendResult identifies the delivery started (or found) by Send.
type SendResult struct {
	EventID    string `json:"event_id"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// DeliverAt is when the first attempt goes, for a scheduled send (SendOptions).
	DeliverAt time.Time `json:"deliver_at,omitzero"`
}

// NewEventID returns a new event id: "evt_" and a time-ordered unique id.
func NewEventID() string {
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	return "evt_" + strings.ReplaceAll(id.String(), "-", "")
}

// ValidateEvent checks an event before anything is started, filling in a missing id,
// type and creation time, and compacting its data (json.Compact: whitespace goes, nothing
// is escaped): those are the bytes a receiver gets, and the ones herald.MaxDataBytes
// limits. Errors wrap ErrInvalid (and ErrTooLarge for data over the limit) and say what to fix.
func ValidateEvent(ev *Event, now time.Time) error { return validateEvent(ev, now, true) }

// validateEvent is ValidateEvent; the endpoint is checked when toEndpoint is set (a send
// to a tenant has none).
func validateEvent(ev *Event, now time.Time, toEndpoint bool) error {
	if ev.ID == "" {
		ev.ID = NewEventID()
	}
	if err := herald.ValidateEventID(ev.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if ev.OrderingKey != "" {
		if err := herald.ValidateOrderingKey(ev.OrderingKey); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	if toEndpoint {
		if err := herald.ValidateEndpointID(ev.EndpointID); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	if err := herald.ValidateEventTypeName(ev.Type); err != nil {
		return fmt.Errorf("%w: %v (every event needs a type: ASCII letters, digits, '-', '_' and '.')", ErrInvalid, err)
	}
	if len(bytes.TrimSpace(ev.Data)) == 0 {
		return fmt.Errorf("%w: event %s has no data: give a JSON value, e.g. {}", ErrInvalid, ev.ID)
	}
	if !utf8.Valid(ev.Data) {
		return fmt.Errorf("%w: event %s data is not valid UTF-8: JSON must be UTF-8", ErrInvalid, ev.ID)
	}
	// The limit applies to the bytes that go on the wire: the data compacted, never escaped.
	var compact bytes.Buffer
	if err := json.Compact(&compact, ev.Data); err != nil {
		return fmt.Errorf("%w: event %s data is not valid JSON: %v", ErrInvalid, ev.ID, err)
	}
	if compact.Len() > herald.MaxDataBytes {
		return fmt.Errorf("%w: event %s data is %d bytes compacted; the limit is %d (256 KiB): send a reference to large content instead",
			ErrTooLarge, ev.ID, compact.Len(), herald.MaxDataBytes)
	}
	ev.Data = compact.Bytes()
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = now.UTC()
	}
	return nil
}

// Send starts the delivery of ev. Event ids are scoped to the tenant of ev's endpoint, and
// shared with the tenant's sends to every subscribed endpoint (Publish). It is idempotent:
// sending an event id that was sent before with the same endpoint, type and data starts
// nothing and returns the existing delivery (for an id sent to the tenant, the delivery to
// ev's endpoint); with another endpoint, type or data it fails with ErrConflict, saying
// which differs. The event's type is checked
// against the catalog of event types first (see PutEventType): with strict types on, an
// unregistered type is refused; data that does not match its type's schema is refused
// with the path and rule that failed. Both refusals wrap ErrInvalid and start nothing.
func (s *Client) Send(ctx context.Context, ev Event) (SendResult, error) {
	return s.SendWith(ctx, ev, SendOptions{})
}

// SendWith is Send with options: a deliver_at schedules the first attempt (see
// SendOptions). A resend of the same event id finds the delivery the first send started,
// scheduled as that send asked.
func (s *Client) SendWith(ctx context.Context, ev Event, o SendOptions) (SendResult, error) {
	at, err := o.deliverAt(s.opts.Now())
	if err != nil {
		return SendResult{}, err
	}
	if err := ValidateEvent(&ev, s.opts.Now()); err != nil {
		return SendResult{}, err
	}
	if err := s.checkType(ctx, ev); err != nil {
		return SendResult{}, err
	}
	tenant, err := s.requireEndpoint(ctx, ev.EndpointID)
	if err != nil {
		return SendResult{}, err
	}
	if err := s.requireWorkerKey(ctx); err != nil {
		return SendResult{}, err
	}
	wfID := herald.DeliveryID(tenant, ev.ID)
	order, err := s.placeOrdered(ctx, tenant, wfID, ev)
	if err != nil {
		return SendResult{}, fmt.Errorf("send event %s: %w", ev.ID, err)
	}
	runID, existed, err := s.startOnce(ctx, wfID, fmt.Sprintf("%s → %s%s", ev.Type, ev.EndpointID, scheduledSummary(at)), herald.DeliveryWorkflow, herald.DeliveryInput{Event: ev, DeliverAt: at, Ordering: order},
		herald.AttrEndpoint.ValueSet(ev.EndpointID), herald.AttrEventType.ValueSet(ev.Type), herald.AttrTenant.ValueSet(herald.TenantOrDefault(tenant)),
		herald.AttrEventID.ValueSet(ev.ID)) // found by its id in every tenant at once (an operator's search)
	if err != nil {
		return SendResult{}, fmt.Errorf("send event %s: %w", ev.ID, err)
	}
	if existed {
		was, fanout, err := s.sentEvent(ctx, wfID)
		if err != nil {
			return SendResult{}, fmt.Errorf("send event %s: the id was sent before, and that event cannot be read to compare: %w", ev.ID, err)
		}
		if fanout {
			return s.resentToEndpoint(ctx, tenant, ev, was)
		}
		if diff := difference(was, ev); diff != "" {
			return SendResult{}, fmt.Errorf("%w: event id %s was already sent %s: send the same endpoint, type and data again, or choose a new id", ErrConflict, ev.ID, diff)
		}
	}
	return SendResult{EventID: ev.ID, WorkflowID: wfID, RunID: runID, DeliverAt: at}, nil
}

// startOnce starts workflow wfID of type wfType on the deliveries' task queue (eagerly
// when the client is set so) unless it was ever started: existed then says so, with the
// run found, so that the caller checks the id is reused for the same event.
func (s *Client) startOnce(ctx context.Context, wfID, summary, wfType string, in any, attrs ...temporal.SearchAttributeUpdate) (runID string, existed bool, err error) {
	run, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    wfID,
		TaskQueue:             s.opts.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		EnableEagerStart:      s.opts.EagerStart,
		// Told apart from a new start, so that a reused id is checked against its event.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    temporal.NewSearchAttributes(attrs...),
		StaticSummary:                            summary,
	}, wfType, in)
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return started.RunId, true, nil
		}
		return "", false, err
	}
	return run.GetRunID(), false, nil
}

// requireEndpoint checks that the endpoint is registered and returns its tenant,
// remembering them for a while.
func (s *Client) requireEndpoint(ctx context.Context, id string) (string, error) {
	now := s.opts.Now()
	s.mu.Lock()
	k, ok := s.known[id]
	s.mu.Unlock()
	if ok && now.Sub(k.seen) < s.opts.EndpointCacheTTL {
		return k.tenant, nil
	}
	tenant, err := s.endpointTenant(ctx, id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", fmt.Errorf("%w: endpoint %s is not registered: register it first", ErrNotFound, id)
		}
		return "", err
	}
	s.remember(id, tenant)
	return tenant, nil
}

// endpointTenant reads a registered endpoint's tenant from what its workflow publishes
// (herald.ReadAdmission: no worker is asked, however busy the endpoint workflow is).
func (s *Client) endpointTenant(ctx context.Context, id string) (string, error) {
	asked := time.Now()
	v, run, err := herald.ReadAdmissionRun(ctx, s.c, id, "")
	if errors.Is(err, herald.ErrNoEndpoint) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", err
	}
	if s.opts.OnEndpointRead != nil {
		s.opts.OnEndpointRead(id, run, v, asked)
	}
	return v.Endpoint.Tenant, nil
}

// maxKnownEndpoints bounds how many endpoints a Client remembers (about 100 bytes each, so
// 10 MB at most): when full, the expired entries go, and if none has expired all go (each
// endpoint is then read again once, at its next send).
const maxKnownEndpoints = 100_000

// remember records that endpoint id exists and belongs to tenant.
func (s *Client) remember(id, tenant string) {
	if tenant == "" {
		tenant = herald.DefaultTenant
	}
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.known[id]; !ok && len(s.known) >= s.knownCap {
		for k, e := range s.known {
			if now.Sub(e.seen) >= s.opts.EndpointCacheTTL {
				delete(s.known, k)
			}
		}
		if len(s.known) >= s.knownCap {
			clear(s.known)
		}
	}
	s.known[id] = knownEndpoint{tenant: tenant, seen: now}
}
