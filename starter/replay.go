package starter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// Replayed says what a replay did.
type Replayed struct {
	// State is the state of the delivery the replay acted on: dead_letter (its ladder runs
	// again from attempt 1), waiting_retry (its next retry goes now), or delivered, expired
	// skipped or cancelled (the event is delivered again). Empty for an event sent to the tenant
	// named without an endpoint.
	State herald.State `json:"state,omitempty"`
	// Retry is the number of the retry that goes now, and DueAt when it was due
	// (waiting_retry only).
	Retry int       `json:"retry,omitempty"`
	DueAt time.Time `json:"due_at,omitzero"`
	// Endpoints are the endpoints whose delivery was replayed, for an event sent to the
	// tenant (Publish); empty for one sent to one endpoint.
	Endpoints []string `json:"endpoints,omitempty"`
}

// Replay replays what ref names, with the event's original id, as each delivery's state
// allows. A dead letter runs its ladder again from attempt 1; a retry waiting on the
// ladder's timer goes now (the replay signal cuts the timer short); a delivery that has
// closed (delivered, expired as a dead letter, skipped at a disabled endpoint, or
// cancelled) is delivered again, at once. A delivery its endpoint holds back, or whose attempt is in flight, is
// left alone, with an error that says why.
//
// For an event sent to the tenant (Publish) named without an endpoint, every
// dead-lettered delivery of it is replayed and the others are left alone; Endpoints lists
// the endpoints replayed (none is not an error).
func (s *Client) Replay(ctx context.Context, ref Ref) (Replayed, error) {
	r, wfID, err := ref.resolve()
	if err != nil {
		return Replayed{}, err
	}
	rep, err := s.Status(ctx, ref)
	if r.Endpoint != "" && errors.Is(err, ErrNotFound) {
		return Replayed{}, fmt.Errorf("%w: event %s of tenant %s has no delivery to endpoint %s", ErrNotFound, r.EventID, r.Tenant, r.Endpoint)
	}
	if err != nil {
		return Replayed{}, err
	}
	if rep.Fanout != nil {
		return s.replayDeadLetters(ctx, *rep.Fanout)
	}
	res, err := s.replay(ctx, wfID, r.EventID, rep.Status)
	if err == nil && r.Endpoint != "" {
		res.Endpoints = []string{r.Endpoint}
	}
	return res, err
}

// replayDeadLetters replays every dead-lettered delivery of an event sent to the tenant.
func (s *Client) replayDeadLetters(ctx context.Context, v herald.EventView) (Replayed, error) {
	res := Replayed{Endpoints: []string{}}
	var errs []error
	for _, d := range v.Deliveries {
		if d.Status == nil || d.Status.State != herald.StateDeadLetter {
			continue
		}
		if _, err := s.replay(ctx, d.WorkflowID, v.ID, *d.Status); err != nil {
			errs = append(errs, fmt.Errorf("endpoint %s: %w", d.EndpointID, err))
			continue
		}
		res.Endpoints = append(res.Endpoints, d.EndpointID)
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("replay event %s: %w", v.ID, err)
	}
	return res, nil
}

// replay replays the delivery wfID of event eventID, whose status is st.
func (s *Client) replay(ctx context.Context, wfID, eventID string, st herald.Status) (Replayed, error) {
	r := Replayed{State: st.State}
	switch st.State {
	case herald.StateDeadLetter, herald.StateWaitingRetry:
		// The signal the stock CLI sends too (temporal workflow signal --name replay).
		if err := s.c.SignalWorkflow(ctx, wfID, "", herald.SignalReplay, nil); err != nil {
			return r, fmt.Errorf("replay event %s: %w", eventID, err)
		}
		if st.State == herald.StateWaitingRetry {
			r.Retry, r.DueAt = nextRetry(st), st.NextAttemptAt
		}
		return r, nil
	case herald.StateDelivered, herald.StateExpired, herald.StateSkipped, herald.StateCancelled:
		return r, s.redeliver(ctx, wfID, eventID, st)
	case herald.StateWaitingKey:
		return r, fmt.Errorf("%w: event %s is not a dead letter: it is %s", ErrInvalid, eventID, st.Waiting.Reason)
	case herald.StateWaitingTurn:
		return r, fmt.Errorf("%w: event %s has made no attempt yet: it waits for its turn in its ordering key (%s); replay the dead letter that holds the key, if one does",
			ErrInvalid, eventID, st.Ordering.Text())
	case herald.StateWaitingEndpoint:
		reason := "its endpoint holds it back"
		if st.Waiting != nil && st.Waiting.Reason != "" {
			reason = st.Waiting.Reason
		}
		return r, fmt.Errorf("%w: event %s waits for its endpoint (%s): a replay does not override the endpoint's protection; the attempt goes when the endpoint admits it (herald endpoint reset %s closes an open circuit by hand)",
			ErrInvalid, eventID, reason, st.Event.EndpointID)
	case herald.StateScheduled:
		if !st.DeliverAt.IsZero() {
			return r, fmt.Errorf("%w: event %s is scheduled for %s: nothing to replay yet (herald cancel stops it)",
				ErrInvalid, eventID, st.DeliverAt.UTC().Format(time.RFC3339))
		}
		fallthrough
	default: // scheduled, attempting
		hint := "herald status " + eventID
		if tenant, _, _ := herald.ParseDeliveryID(wfID); tenant != herald.DefaultTenant {
			hint += " --tenant " + tenant
		}
		return r, fmt.Errorf("%w: event %s has an attempt in flight: nothing to replay now; if it fails, replay it while it waits for its retry, or once it is a dead letter (%s)",
			ErrInvalid, eventID, hint)
	}
}

// nextRetry is the number of the attempt a delivery waiting for a retry makes next.
func nextRetry(st herald.Status) int {
	n := 0
	for _, a := range st.Attempts {
		if a.Round == st.Round {
			n = max(n, a.Number)
		}
	}
	return n + 1
}

// redeliver starts a closed delivery again under the same workflow id.
func (s *Client) redeliver(ctx context.Context, wfID, eventID string, st herald.Status) error {
	var ev Event
	v, err := s.c.QueryWorkflow(ctx, wfID, "", herald.QueryEvent)
	if err != nil {
		return fmt.Errorf("replay event %s: read event: %w", eventID, err)
	}
	if err := v.Get(&ev); err != nil {
		return fmt.Errorf("replay event %s: read event: %w", eventID, err)
	}
	attrs := []temporal.SearchAttributeUpdate{
		herald.AttrEndpoint.ValueSet(ev.EndpointID),
		herald.AttrEventType.ValueSet(ev.Type),
		herald.AttrEventID.ValueSet(ev.ID), // a delivery stays listed with its event
	}
	if tenant, _, ok := herald.ParseDeliveryID(wfID); ok {
		attrs = append(attrs, herald.AttrTenant.ValueSet(tenant)) // a replay stays with the tenant that sent it
	}
	_, err = s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       wfID,
		TaskQueue:                s.opts.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
		StaticSummary:            fmt.Sprintf("%s → %s (replay)", ev.Type, ev.EndpointID),
	}, herald.DeliveryWorkflow, replayInput(ev, st))
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return nil // a concurrent replay won; the event is being delivered again
		}
		return fmt.Errorf("replay event %s: %w", eventID, err)
	}
	return nil
}

// replayInput is the input of the next round of ev's delivery, whose status is st: the
// last herald.MaxKeptAttempts attempts, and the count of those dropped, earlier ones
// included, as the delivery keeps them when it continues as new.
func replayInput(ev Event, st herald.Status) herald.DeliveryInput {
	kept, dropped := st.Attempts, st.Dropped
	if n := len(kept) - herald.MaxKeptAttempts; n > 0 {
		kept, dropped = kept[n:], dropped+n
	}
	return herald.DeliveryInput{Event: ev, Round: st.Round + 1, Attempts: kept, Dropped: dropped}
}

// DeadLetter is one parked delivery.
type DeadLetter struct {
	EventID    string    `json:"event_id"`
	Tenant     string    `json:"tenant"`
	EndpointID string    `json:"endpoint_id"`
	Type       string    `json:"type"`
	SentAt     time.Time `json:"sent_at,omitzero"`
	WorkflowID string    `json:"workflow_id"`
	// HoldsKey is the ordering key this dead letter holds (ordering on dead letter: block).
	HoldsKey string `json:"holds_key,omitempty"`
}

// ListDeadLetters lists the dead letters f selects, oldest first as the server returns them.
func (s *Client) ListDeadLetters(ctx context.Context, f herald.DeadLetterFilter) ([]DeadLetter, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var out []DeadLetter
	for ex, err := range herald.Executions(ctx, s.c, f.Query(), 500) {
		if err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		id := ex.GetExecution().GetWorkflowId()
		tenant, evID, _ := herald.ParseDeliveryID(id)
		dl := DeadLetter{EventID: evID, Tenant: tenant, WorkflowID: id, SentAt: ex.GetStartTime().AsTime()}
		sa := ex.GetSearchAttributes().GetIndexedFields()
		dl.EndpointID = keyword(sa[herald.AttrEndpoint.GetName()].GetData())
		dl.Type = keyword(sa[herald.AttrEventType.GetName()].GetData())
		if p := ex.GetMemo().GetFields()[herald.MemoOrdering]; p != nil {
			var o herald.OrderingStatus
			if s.opts.DataConverter.FromPayload(p, &o) == nil && o.Blocking {
				dl.HoldsKey = o.Key
			}
		}
		out = append(out, dl)
	}
	return out, nil
}

// BulkReplay starts a bulk replay of the dead letters in.Filter selects, at in.At (or now),
// and returns the workflow id that carries it out (visible in the Temporal UI).
func (s *Client) BulkReplay(ctx context.Context, in herald.BulkReplayInput) (string, error) {
	if err := in.Filter.Validate(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := policy.ValidateReplayAt(in.At, s.opts.Now()); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
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
	}, herald.BulkReplayWorkflow, in)
	if err != nil {
		return "", fmt.Errorf("start bulk replay: %w", err)
	}
	return run.GetID(), nil
}

// WaitBulkReplay waits for the bulk replay workflowID to finish, at most until ctx ends,
// and returns how many dead letters it replayed and skipped.
func (s *Client) WaitBulkReplay(ctx context.Context, workflowID string) (herald.BulkReplayResult, error) {
	var res herald.BulkReplayResult
	if err := s.c.GetWorkflow(ctx, workflowID, "").Get(ctx, &res); err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("bulk replay %s: %w", workflowID, err)
	}
	return res, nil
}
