// Package starter is the Go API producer services and the herald CLI use: send events,
// read a delivery's status, replay dead letters, and register endpoints.
package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/workflows"
)

// Event is what a producer sends; see workflows.Event.
type Event = workflows.Event

// ErrNotFound means the event or endpoint does not exist.
var ErrNotFound = errors.New("not found")

// ErrInvalid marks errors caused by bad input, so callers (the CLI, the HTTP API) can tell
// them from outages.
var ErrInvalid = errors.New("invalid input")

// ErrTooLarge marks event data over workflows.MaxDataBytes once compacted. It is an
// ErrInvalid too (errors.Is reports both).
var ErrTooLarge error = tooLarge{}

type tooLarge struct{}

func (tooLarge) Error() string        { return "too large" }
func (tooLarge) Is(target error) bool { return target == ErrInvalid }

// Options configure a Client.
type Options struct {
	// TaskQueue Herald's workers poll; default workflows.DefaultTaskQueue.
	TaskQueue string
	// EagerStart asks the server to hand new deliveries straight to a worker in this process
	// (effective only when the Temporal client also runs a Herald worker).
	EagerStart bool
	// EndpointCacheTTL is how long Send remembers that an endpoint exists; default 30s.
	EndpointCacheTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Client is Herald's producer and operator API over a Temporal client.
type Client struct {
	c    client.Client
	opts Options

	mu    sync.Mutex
	known map[string]time.Time // endpoint id → when its existence was last confirmed
}

// New returns a Client that talks to Temporal through c.
func New(c client.Client, o Options) *Client {
	if o.TaskQueue == "" {
		o.TaskQueue = workflows.DefaultTaskQueue
	}
	if o.EndpointCacheTTL == 0 {
		o.EndpointCacheTTL = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Client{c: c, opts: o, known: map[string]time.Time{}}
}

// SendResult identifies the delivery started (or found) by Send.
type SendResult struct {
	EventID    string `json:"event_id"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
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
// is escaped): those are the bytes a receiver gets, and the ones workflows.MaxDataBytes
// limits. Errors wrap ErrInvalid (and ErrTooLarge for data over the limit) and say what to fix.
func ValidateEvent(ev *Event, now time.Time) error {
	if ev.ID == "" {
		ev.ID = NewEventID()
	}
	if err := signature.ValidateID(ev.ID); err != nil {
		return fmt.Errorf("%w: event id: %v", ErrInvalid, err)
	}
	if err := workflows.ValidateEndpointID(ev.EndpointID); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if ev.Type == "" {
		ev.Type = "event"
	}
	if len(ev.Type) > 255 || strings.ContainsAny(ev.Type, "\r\n\t") {
		return fmt.Errorf("%w: event type %q must be one line of at most 255 characters", ErrInvalid, ev.Type)
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
	if compact.Len() > workflows.MaxDataBytes {
		return fmt.Errorf("%w: event %s data is %d bytes compacted; the limit is %d (256 KiB): send a reference to large content instead",
			ErrTooLarge, ev.ID, compact.Len(), workflows.MaxDataBytes)
	}
	ev.Data = compact.Bytes()
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = now.UTC()
	}
	return nil
}

// Send starts the delivery of ev. It is idempotent: sending an event id that was sent
// before starts nothing and returns the existing delivery.
func (s *Client) Send(ctx context.Context, ev Event) (SendResult, error) {
	if err := ValidateEvent(&ev, s.opts.Now()); err != nil {
		return SendResult{}, err
	}
	if err := s.requireEndpoint(ctx, ev.EndpointID); err != nil {
		return SendResult{}, err
	}
	run, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    workflows.DeliveryID(ev.ID),
		TaskQueue:             s.opts.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		EnableEagerStart:      s.opts.EagerStart,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.AttrEndpoint.ValueSet(ev.EndpointID),
			workflows.AttrEventType.ValueSet(ev.Type),
		),
		StaticSummary: fmt.Sprintf("%s → %s", ev.Type, ev.EndpointID),
	}, workflows.DeliveryWorkflowName, workflows.DeliveryInput{Event: ev})
	if err != nil {
		return SendResult{}, fmt.Errorf("send event %s: %w", ev.ID, err)
	}
	return SendResult{EventID: ev.ID, WorkflowID: run.GetID(), RunID: run.GetRunID()}, nil
}

// requireEndpoint checks that the endpoint workflow exists, remembering a yes for a while.
func (s *Client) requireEndpoint(ctx context.Context, id string) error {
	now := s.opts.Now()
	s.mu.Lock()
	seen, ok := s.known[id]
	s.mu.Unlock()
	if ok && now.Sub(seen) < s.opts.EndpointCacheTTL {
		return nil
	}
	desc, err := s.c.DescribeWorkflowExecution(ctx, workflows.EndpointWorkflowID(id), "")
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("%w: endpoint %s is not registered: register it first", ErrNotFound, id)
		}
		return fmt.Errorf("endpoint %s: %w", id, err)
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return fmt.Errorf("%w: endpoint %s is not registered: register it first", ErrNotFound, id)
	}
	s.mu.Lock()
	s.known[id] = now
	s.mu.Unlock()
	return nil
}

// Status returns the delivery status of an event.
func (s *Client) Status(ctx context.Context, eventID string) (workflows.Status, error) {
	var st workflows.Status
	v, err := s.c.QueryWorkflow(ctx, workflows.DeliveryID(eventID), "", workflows.QueryStatus)
	if err != nil {
		if isNotFound(err) {
			return st, fmt.Errorf("%w: no event %s (it was never sent, or it closed longer ago than the namespace's retention)", ErrNotFound, eventID)
		}
		return st, fmt.Errorf("status of event %s: %w", eventID, err)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("status of event %s: %w", eventID, err)
	}
	return st, nil
}

// Replay runs a dead letter's ladder again from attempt 1 with its original event id. An
// event whose delivery has closed (delivered, or expired as a dead letter) is delivered
// again with the same id. An event still being retried is left alone, with an error.
func (s *Client) Replay(ctx context.Context, eventID string) error {
	st, err := s.Status(ctx, eventID)
	if err != nil {
		return err
	}
	switch st.State {
	case workflows.StateDeadLetter:
		err := s.c.SignalWorkflow(ctx, workflows.DeliveryID(eventID), "", workflows.SignalReplay, nil)
		if err != nil {
			return fmt.Errorf("replay event %s: %w", eventID, err)
		}
		return nil
	case workflows.StateDelivered, workflows.StateExpired:
		return s.redeliver(ctx, eventID, st)
	default:
		return fmt.Errorf("%w: event %s is %s, not a dead letter: its ladder is still running (next attempt at %s)",
			ErrInvalid, eventID, st.State, st.NextAttemptAt.Format(time.RFC3339))
	}
}

// redeliver starts a closed delivery again under the same workflow id.
func (s *Client) redeliver(ctx context.Context, eventID string, st workflows.Status) error {
	var ev Event
	v, err := s.c.QueryWorkflow(ctx, workflows.DeliveryID(eventID), "", workflows.QueryEvent)
	if err != nil {
		return fmt.Errorf("replay event %s: read event: %w", eventID, err)
	}
	if err := v.Get(&ev); err != nil {
		return fmt.Errorf("replay event %s: read event: %w", eventID, err)
	}
	_, err = s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.DeliveryID(eventID),
		TaskQueue:                s.opts.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.AttrEndpoint.ValueSet(ev.EndpointID),
			workflows.AttrEventType.ValueSet(ev.Type),
		),
		StaticSummary: fmt.Sprintf("%s → %s (replay)", ev.Type, ev.EndpointID),
	}, workflows.DeliveryWorkflowName, workflows.DeliveryInput{Event: ev, Round: st.Round + 1, Attempts: keepLast(st.Attempts)})
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return nil // a concurrent replay won; the event is being delivered again
		}
		return fmt.Errorf("replay event %s: %w", eventID, err)
	}
	return nil
}

func keepLast(a []workflows.AttemptRecord) []workflows.AttemptRecord {
	if len(a) > workflows.MaxKeptAttempts {
		return a[len(a)-workflows.MaxKeptAttempts:]
	}
	return a
}

// DeadLetter is one parked delivery.
type DeadLetter struct {
	EventID    string    `json:"event_id"`
	EndpointID string    `json:"endpoint_id"`
	Type       string    `json:"type"`
	SentAt     time.Time `json:"sent_at"`
	WorkflowID string    `json:"workflow_id"`
}

// ListDeadLetters lists the dead letters f selects, oldest first as the server returns them.
func (s *Client) ListDeadLetters(ctx context.Context, f activities.DeadLetterFilter) ([]DeadLetter, error) {
	var out []DeadLetter
	var token []byte
	for {
		resp, err := s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: f.Query(), PageSize: 500, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			id := ex.GetExecution().GetWorkflowId()
			evID, _ := workflows.EventIDFromWorkflowID(id)
			dl := DeadLetter{EventID: evID, WorkflowID: id, SentAt: ex.GetStartTime().AsTime()}
			sa := ex.GetSearchAttributes().GetIndexedFields()
			dl.EndpointID = keyword(sa[workflows.AttrEndpoint.GetName()].GetData())
			dl.Type = keyword(sa[workflows.AttrEventType.GetName()].GetData())
			out = append(out, dl)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return out, nil
		}
	}
}

func keyword(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// BulkReplay starts a bulk replay of the dead letters in.Filter selects, at in.At (or now),
// and returns the workflow id that carries it out (visible in the Temporal UI).
func (s *Client) BulkReplay(ctx context.Context, in workflows.BulkReplayInput) (string, error) {
	if f := in.Filter; !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return "", fmt.Errorf("%w: until (%s) is before since (%s)", ErrInvalid, f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	if err := policy.ValidateReplayAt(in.At, s.opts.Now()); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if in.Filter.EndpointID != "" {
		if err := workflows.ValidateEndpointID(in.Filter.EndpointID); err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	scope := in.Filter.EndpointID
	if scope == "" {
		scope = "all"
	}
	id := fmt.Sprintf("bulk-replay:%s:%s", scope, strings.ReplaceAll(uuid.NewString(), "-", "")[:12])
	run, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:            id,
		TaskQueue:     s.opts.TaskQueue,
		StaticSummary: "bulk replay of dead letters: " + in.Filter.Query(),
	}, workflows.BulkReplayWorkflowName, in)
	if err != nil {
		return "", fmt.Errorf("start bulk replay: %w", err)
	}
	return run.GetID(), nil
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
