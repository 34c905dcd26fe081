// Package starter is the Go API producer services and the herald CLI use: send events,
// read a delivery's status, replay dead letters, and register endpoints.
package starter

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/singleflight"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/policy"
)

// Event is what a producer sends; see herald.Event.
type Event = herald.Event

// ErrNotFound means the event or endpoint does not exist.
var ErrNotFound = errors.New("not found")

// ErrInvalid marks errors caused by bad input, so callers (the CLI, the HTTP API) can tell
// them from outages.
var ErrInvalid = errors.New("invalid input")

// ErrTooLarge marks event data over herald.MaxDataBytes once compacted. It is an
// ErrInvalid too (errors.Is reports both).
var ErrTooLarge error = tooLarge{}

type tooLarge struct{}

func (tooLarge) Error() string        { return "too large" }
func (tooLarge) Is(target error) bool { return target == ErrInvalid }

// ErrConflict means an event id was sent before with another endpoint, type or data.
var ErrConflict = errors.New("conflict")

// Options configure a Client.
type Options struct {
	// TaskQueue Herald's workers poll; default herald.DefaultTaskQueue.
	TaskQueue string
	// EagerStart asks the server to hand new deliveries straight to a worker in this process
	// (effective only when the Temporal client also runs a Herald worker).
	EagerStart bool
	// EndpointCacheTTL is how long Send remembers that an endpoint exists, and its tenant,
	// and which payload keys the workers hold; default 30s.
	EndpointCacheTTL time.Duration
	// EventTypeCacheTTL is how long Send uses the catalog of event types it read (strict
	// types, each type's schema) before reading it again; default DefaultEventTypeCacheTTL.
	// Puts through this client bind its next Send at once.
	EventTypeCacheTTL time.Duration
	// PayloadKeyID is the id of the key this client's data converter encrypts with (empty:
	// plain text). When set, Send refuses it if the workers polling TaskQueue advertise
	// their keys (codec.Identity) and none holds it.
	PayloadKeyID string
	// DataConverter is the client's data converter, to read an earlier event's input back
	// when its id is sent again; nil means the default (plain text) converter.
	DataConverter converter.DataConverter
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// FanoutParallelism bounds the deliveries Publish starts at once, across every Publish
	// call of the client: a burst of starts beyond what the workers take at once only
	// makes every delivery slower. Default 32.
	FanoutParallelism int
	// BeforeFanoutStart, if set, is called before Publish starts each endpoint's delivery,
	// with the endpoint's id: a hook for tests and instrumentation.
	BeforeFanoutStart func(endpointID string)
}

// Client is Herald's producer and operator API over a Temporal client.
type Client struct {
	c    client.Client
	opts Options

	mu         sync.Mutex
	known      map[string]knownEndpoint // endpoint id → its tenant, when last confirmed
	workerKeys workerKeys
	types      typeCache

	fanout    chan struct{}      // a slot per fan-out start in progress (Options.FanoutParallelism)
	backfills singleflight.Group // tenant → its directory's backfill in progress
}

// knownEndpoint is what Send remembers of an endpoint.
type knownEndpoint struct {
	tenant string
	seen   time.Time
}

// workerKeys is what Send remembers of the keys the workers advertise.
type workerKeys struct {
	ids  map[string]bool // nil: no worker advertises its keys
	seen time.Time
}

// New returns a Client that talks to Temporal through c.
func New(c client.Client, o Options) *Client {
	o.TaskQueue = cmp.Or(o.TaskQueue, herald.DefaultTaskQueue)
	o.EndpointCacheTTL = cmp.Or(o.EndpointCacheTTL, 30*time.Second)
	o.EventTypeCacheTTL = cmp.Or(o.EventTypeCacheTTL, DefaultEventTypeCacheTTL)
	o.DataConverter = cmp.Or(o.DataConverter, converter.GetDefaultDataConverter())
	o.FanoutParallelism = cmp.Or(o.FanoutParallelism, 32)
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Client{c: c, opts: o, known: map[string]knownEndpoint{}, fanout: make(chan struct{}, o.FanoutParallelism)}
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
	runID, existed, err := s.startOnce(ctx, wfID, fmt.Sprintf("%s → %s", ev.Type, ev.EndpointID), herald.DeliveryWorkflow, herald.DeliveryInput{Event: ev},
		herald.AttrEndpoint.ValueSet(ev.EndpointID), herald.AttrEventType.ValueSet(ev.Type), herald.AttrTenant.ValueSet(herald.TenantOrDefault(tenant)))
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
	return SendResult{EventID: ev.ID, WorkflowID: wfID, RunID: runID}, nil
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

// eachAtOnce calls f for every i in [0, n), at most limit at once, and returns when all
// have returned.
func eachAtOnce(n, limit int, f func(i int)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
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
	v, err := herald.ReadAdmission(ctx, s.c, id)
	if errors.Is(err, herald.ErrNoEndpoint) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", err
	}
	return v.Endpoint.Tenant, nil
}

// remember records that endpoint id exists and belongs to tenant.
func (s *Client) remember(id, tenant string) {
	if tenant == "" {
		tenant = herald.DefaultTenant
	}
	s.mu.Lock()
	s.known[id] = knownEndpoint{tenant: tenant, seen: s.opts.Now()}
	s.mu.Unlock()
}

// requireWorkerKey refuses to send with a payload key no worker holds, when the workers
// say which keys they hold (codec.Identity): such an event would wait until one does.
func (s *Client) requireWorkerKey(ctx context.Context) error {
	key := s.opts.PayloadKeyID
	if key == "" {
		return nil
	}
	ids, err := s.advertisedKeys(ctx)
	if err != nil || ids == nil {
		return nil // cannot tell: send, and the event waits if need be
	}
	if ids[key] {
		return nil
	}
	have := make([]string, 0, len(ids))
	for id := range ids {
		have = append(have, id)
	}
	sort.Strings(have)
	return fmt.Errorf("%w: no worker on task queue %s holds payload key %s (they hold: %s): give the workers the new key first (a line in their key file), then the producers", ErrInvalid, s.opts.TaskQueue, key, strings.Join(have, ", "))
}

// advertisedKeys returns the set of key ids the workers polling the task queue advertise;
// nil when none advertises its keys.
func (s *Client) advertisedKeys(ctx context.Context) (map[string]bool, error) {
	now := s.opts.Now()
	s.mu.Lock()
	wk := s.workerKeys
	s.mu.Unlock()
	if !wk.seen.IsZero() && now.Sub(wk.seen) < s.opts.EndpointCacheTTL {
		return wk.ids, nil
	}
	resp, err := s.c.DescribeTaskQueue(ctx, s.opts.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return nil, fmt.Errorf("describe task queue %s: %w", s.opts.TaskQueue, err)
	}
	var ids map[string]bool
	for _, p := range resp.GetPollers() {
		keys, ok := codec.IdentityKeyIDs(p.GetIdentity())
		if !ok {
			continue
		}
		if ids == nil {
			ids = map[string]bool{}
		}
		for _, k := range keys {
			ids[k] = true
		}
	}
	s.mu.Lock()
	s.workerKeys = workerKeys{ids: ids, seen: now}
	s.mu.Unlock()
	return ids, nil
}

// Status returns the delivery status of an event of the default tenant.
func (s *Client) Status(ctx context.Context, eventID string) (herald.Status, error) {
	return s.StatusOf(ctx, herald.DefaultTenant, eventID)
}

// StatusOf returns the delivery status of a tenant's event. A delivery no worker could
// start because it lacks the payload's key is reported as StateWaitingKey.
// An event sent to the tenant (Publish) has a delivery per endpoint: ErrNotFound says
// where to look.
func (s *Client) StatusOf(ctx context.Context, tenant, eventID string) (herald.Status, error) {
	wfID := herald.DeliveryID(tenant, eventID)
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

// waitingForKey reports a running delivery whose payload is encrypted with a key no worker
// advertises (and so none could start it) as StateWaitingKey.
func (s *Client) waitingForKey(ctx context.Context, wfID string) (herald.Status, bool) {
	desc, err := s.c.DescribeWorkflowExecution(ctx, wfID, "")
	if err != nil {
		return herald.Status{}, false
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return herald.Status{}, false
	}
	in, err := s.startInput(ctx, wfID)
	if err != nil || len(in.GetPayloads()) == 0 {
		return herald.Status{}, false
	}
	key := codec.PayloadKeyID(in.GetPayloads()[0])
	if key == "" {
		return herald.Status{}, false
	}
	if ids, err := s.advertisedKeys(ctx); err != nil || ids == nil || ids[key] {
		return herald.Status{}, false
	}
	_, eventID, _ := herald.ParseDeliveryID(wfID)
	sa := info.GetSearchAttributes().GetIndexedFields()
	since := info.GetStartTime().AsTime()
	return herald.Status{
		Event: herald.EventSummary{
			ID:         eventID,
			EndpointID: keyword(sa[herald.AttrEndpoint.GetName()].GetData()),
			Type:       keyword(sa[herald.AttrEventType.GetName()].GetData()),
			CreatedAt:  since,
		},
		State:   herald.StateWaitingKey,
		Waiting: &herald.Waiting{Hold: herald.Hold{Reason: codec.WaitingForKey(key)}, Since: since},
	}, true
}

// Replay replays a dead letter of the default tenant; see ReplayOf.
func (s *Client) Replay(ctx context.Context, eventID string) error {
	return s.ReplayOf(ctx, herald.DefaultTenant, eventID)
}

// ReplayOf replays a tenant's event; see ReplayDelivery.
func (s *Client) ReplayOf(ctx context.Context, tenant, eventID string) error {
	_, err := s.ReplayDelivery(ctx, tenant, eventID)
	return err
}

// Replayed says what a replay did to a delivery.
type Replayed struct {
	// State is the delivery's state the replay acted on: dead_letter (its ladder runs again
	// from attempt 1), waiting_retry (its next retry goes now), or delivered, expired or
	// skipped (the event is delivered again).
	State herald.State `json:"state"`
	// Retry is the number of the retry that goes now, and DueAt when it was due
	// (waiting_retry only).
	Retry int       `json:"retry,omitempty"`
	DueAt time.Time `json:"due_at,omitzero"`
}

// ReplayDelivery replays a tenant's event, with its original event id, as its state
// allows. A dead letter runs its ladder again from attempt 1; a retry waiting on the
// ladder's timer goes now (the replay signal cuts the timer short); a delivery that has
// closed (delivered, expired as a dead letter, or skipped at a disabled endpoint) is
// delivered again. A delivery its endpoint holds back, or whose attempt is in flight, is
// left alone, with an error that says why.
func (s *Client) ReplayDelivery(ctx context.Context, tenant, eventID string) (Replayed, error) {
	st, err := s.StatusOf(ctx, tenant, eventID)
	if err != nil {
		return Replayed{}, err
	}
	return s.replay(ctx, herald.DeliveryID(tenant, eventID), eventID, st)
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
	case herald.StateDelivered, herald.StateExpired, herald.StateSkipped:
		return r, s.redeliver(ctx, wfID, eventID, st)
	case herald.StateWaitingKey:
		return r, fmt.Errorf("%w: event %s is not a dead letter: it is %s", ErrInvalid, eventID, st.Waiting.Reason)
	case herald.StateWaitingEndpoint:
		reason := "its endpoint holds it back"
		if st.Waiting != nil && st.Waiting.Reason != "" {
			reason = st.Waiting.Reason
		}
		return r, fmt.Errorf("%w: event %s waits for its endpoint (%s): a replay does not override the endpoint's protection; the attempt goes when the endpoint admits it (herald endpoint reset %s closes an open circuit by hand)",
			ErrInvalid, eventID, reason, st.Event.EndpointID)
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
	}
	if tenant, _, ok := herald.ParseDeliveryID(wfID); ok {
		attrs = append(attrs, herald.AttrTenant.ValueSet(tenant)) // a replay stays with the tenant that sent it
	}
	if _, _, _, fanout := herald.ParseFanoutDeliveryID(wfID); fanout {
		attrs = append(attrs, herald.AttrEventID.ValueSet(ev.ID)) // a fan-out delivery stays listed with its event
	}
	_, err = s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       wfID,
		TaskQueue:                s.opts.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
		StaticSummary:            fmt.Sprintf("%s → %s (replay)", ev.Type, ev.EndpointID),
	}, herald.DeliveryWorkflow, herald.DeliveryInput{Event: ev, Round: st.Round + 1, Attempts: keepLast(st.Attempts)})
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return nil // a concurrent replay won; the event is being delivered again
		}
		return fmt.Errorf("replay event %s: %w", eventID, err)
	}
	return nil
}

func keepLast(a []herald.AttemptRecord) []herald.AttemptRecord {
	if len(a) > herald.MaxKeptAttempts {
		return a[len(a)-herald.MaxKeptAttempts:]
	}
	return a
}

// DeadLetter is one parked delivery.
type DeadLetter struct {
	EventID    string    `json:"event_id"`
	Tenant     string    `json:"tenant"`
	EndpointID string    `json:"endpoint_id"`
	Type       string    `json:"type"`
	SentAt     time.Time `json:"sent_at,omitzero"`
	WorkflowID string    `json:"workflow_id"`
}

// ListDeadLetters lists the dead letters f selects, oldest first as the server returns them.
func (s *Client) ListDeadLetters(ctx context.Context, f herald.DeadLetterFilter) ([]DeadLetter, error) {
	if f.EndpointID != "" {
		if err := herald.ValidateEndpointID(f.EndpointID); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
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
		out = append(out, dl)
	}
	return out, nil
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
func (s *Client) BulkReplay(ctx context.Context, in herald.BulkReplayInput) (string, error) {
	if f := in.Filter; !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return "", fmt.Errorf("%w: until (%s) is before since (%s)", ErrInvalid, f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	if err := policy.ValidateReplayAt(in.At, s.opts.Now()); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if in.Filter.EndpointID != "" {
		if err := herald.ValidateEndpointID(in.Filter.EndpointID); err != nil {
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

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
