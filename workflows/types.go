// Package workflows holds Herald's Temporal workflows: one delivery workflow per event
// (the retry ladder's timers), one endpoint workflow per endpoint (its configuration and
// counters), and the bulk replay workflow. Workflows only move messages and set timers;
// every decision comes from package policy and every HTTP detail from package activities.
package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald/activities"
)

// Names of workflows, signals, queries and updates, as they appear in the Temporal UI.
const (
	// DeliveryWorkflowName is the workflow type of a delivery (one per event).
	DeliveryWorkflowName = "Delivery"
	// EndpointWorkflowName is the workflow type of an endpoint (one per endpoint).
	EndpointWorkflowName = "Endpoint"
	// BulkReplayWorkflowName is the workflow type of a bulk replay of dead letters.
	BulkReplayWorkflowName = "BulkReplay"
	// StatsWorkflowName is the workflow type of a shard of endpoint attempt counts.
	StatsWorkflowName = activities.StatsWorkflowName

	// SignalPermit hands a waiting delivery a permit of its own.
	SignalPermit = activities.SignalPermit
	// UpdateLease leases permits to a worker's gate.
	UpdateLease = activities.UpdateLease
	// SignalDone returns a delivery's own permit.
	SignalDone = activities.SignalDone
	// UpdateReset closes an endpoint's circuit by hand.
	UpdateReset = "reset"

	// SignalReplay asks a dead-lettered delivery to run its ladder again with the same event id.
	SignalReplay = activities.SignalReplay
	// QueryStatus returns a delivery's Status.
	QueryStatus = "status"
	// QueryEvent returns a delivery's Event, payload included.
	QueryEvent = "event"

	// UpdatePutEndpoint registers or changes an endpoint; it answers with the stored Endpoint.
	UpdatePutEndpoint = "put"
	// QueryEndpointConfig returns the endpoint's full configuration, secrets included (for the worker).
	QueryEndpointConfig = activities.QueryEndpointConfig
	// QueryEndpointState returns the endpoint's EndpointState (no secrets).
	QueryEndpointState = "state"
	// SignalEndpointReport carries a batch of attempt outcomes from a worker to the endpoint workflow.
	SignalEndpointReport = activities.SignalEndpointReport

	// DefaultTaskQueue is the task queue Herald's workers poll unless told otherwise. The
	// endpoint workflows run on a queue of their own next to it (EndpointTaskQueue).
	DefaultTaskQueue = "herald"
	// DefaultTenant owns endpoints registered without a tenant.
	DefaultTenant = "default"
)

// Delivery states, as reported by the status query and the HeraldStatus search attribute.
const (
	StateScheduled    = "scheduled"
	StateAttempting   = "attempting"
	StateWaitingRetry = "waiting_retry"
	// StateWaitingEndpoint: the endpoint's concurrency cap or open circuit holds the
	// attempt back; it waits in the endpoint's queue and uses no attempt.
	StateWaitingEndpoint = "waiting_endpoint"
	StateDelivered       = "delivered"
	StateDeadLetter      = "dead_letter"
	StateExpired         = "expired"
	// StateWaitingKey: no worker so far could decrypt the delivery's payload; it waits
	// for a worker holding the key (reported by the starter, never by the workflow).
	StateWaitingKey = "waiting_key"
)

// Search attributes Herald registers in its namespace and sets on its workflows.
var (
	// AttrStatus is the delivery state, set when a delivery leaves the fast path
	// (waiting_retry, delivered after a retry, dead_letter, expired). A delivery that
	// succeeded at once has none: its execution status is Completed.
	AttrStatus = temporal.NewSearchAttributeKeyKeyword("HeraldStatus")
	// AttrEndpoint is the endpoint id of a delivery or an endpoint workflow.
	AttrEndpoint = temporal.NewSearchAttributeKeyKeyword("HeraldEndpoint")
	// AttrEventType is the event type of a delivery.
	AttrEventType = temporal.NewSearchAttributeKeyKeyword("HeraldEventType")
	// AttrCircuit is an endpoint workflow's circuit state (closed, open, half_open).
	AttrCircuit = temporal.NewSearchAttributeKeyKeyword("HeraldCircuit")
)

// SearchAttributeNames lists the custom search attributes Herald needs, all of type Keyword.
var SearchAttributeNames = []string{AttrStatus.GetName(), AttrEndpoint.GetName(), AttrEventType.GetName(), AttrCircuit.GetName()}

// SearchAttributeTypes maps Herald's search attributes to their type (all Keyword), as a
// namespace must register them.
func SearchAttributeTypes() map[string]enums.IndexedValueType {
	m := make(map[string]enums.IndexedValueType, len(SearchAttributeNames))
	for _, n := range SearchAttributeNames {
		m[n] = enums.INDEXED_VALUE_TYPE_KEYWORD
	}
	return m
}

// MaxDataBytes is the largest event payload Herald accepts, counted compacted (as it goes
// on the wire).
const MaxDataBytes = 256 << 10

// MaxURLBytes is the longest endpoint URL Herald accepts.
const MaxURLBytes = 2048

// Event is what a producer hands Herald: one message for one endpoint.
type Event struct {
	ID         string          `json:"id"`
	EndpointID string          `json:"endpoint_id"`
	Type       string          `json:"type"`
	Data       json.RawMessage `json:"data"`
	CreatedAt  time.Time       `json:"created_at"`
}

// EndpointTaskQueue is the task queue of the endpoint workflows of Herald's task queue q:
// q + "-endpoints". Endpoint workflows have their own queue, and every worker polls it
// with slots of its own, so that they always get a workflow task promptly, however many
// deliveries wait.
func EndpointTaskQueue(q string) string {
	if strings.HasSuffix(q, endpointQueueSuffix) {
		return q
	}
	return q + endpointQueueSuffix
}

const endpointQueueSuffix = "-endpoints"

// eventJSON is an Event as Temporal's payloads carry it. The data travels as a JSON string
// (data_text) holding the producer's bytes: Temporal's JSON converter escapes <, > and & in
// a raw JSON value for HTML (\u003c, six bytes each) and the receiver would get those
// escapes, while a string's escapes decode back to exactly the bytes sent. Data (data) is
// the raw form of histories written before.
type eventJSON struct {
	ID         string          `json:"id"`
	EndpointID string          `json:"endpoint_id"`
	Type       string          `json:"type"`
	DataText   *string         `json:"data_text,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
}

// MarshalJSON writes the event with its data as a string, so that its bytes survive any
// JSON encoder unchanged.
func (e Event) MarshalJSON() ([]byte, error) {
	text := string(e.Data)
	return json.Marshal(eventJSON{ID: e.ID, EndpointID: e.EndpointID, Type: e.Type, DataText: &text, CreatedAt: e.CreatedAt})
}

// UnmarshalJSON reads what MarshalJSON writes, and the raw data of earlier histories.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Event{ID: j.ID, EndpointID: j.EndpointID, Type: j.Type, Data: j.Data, CreatedAt: j.CreatedAt}
	if j.DataText != nil {
		e.Data = json.RawMessage(*j.DataText)
	}
	return nil
}

// DeliveryID is the workflow id of the delivery of event id for the default tenant.
func DeliveryID(eventID string) string { return DeliveryIDFor(DefaultTenant, eventID) }

// DeliveryIDFor is the workflow id of the delivery of event id for a tenant: event ids are
// scoped to the tenant of the endpoint, so two tenants may use the same id. The default
// tenant's ids are "delivery:<event-id>" (as before tenants had their own ids); another
// tenant's are "delivery@<tenant>:<event-id>". The forms cannot collide (event ids may
// contain ':', but the default form starts with "delivery:", and tenant names have no ':').
func DeliveryIDFor(tenant, eventID string) string {
	if tenant == "" || tenant == DefaultTenant {
		return "delivery:" + eventID
	}
	return "delivery@" + tenant + ":" + eventID
}

// EndpointWorkflowID is the workflow id of endpoint id.
func EndpointWorkflowID(endpointID string) string { return activities.EndpointWorkflowID(endpointID) }

// EventIDFromWorkflowID is the inverse of DeliveryIDFor, without the tenant; ok is false
// for other ids.
func EventIDFromWorkflowID(workflowID string) (string, bool) {
	_, id, ok := ParseDeliveryID(workflowID)
	return id, ok
}

// ParseDeliveryID is the inverse of DeliveryIDFor: the tenant (DefaultTenant for the
// "delivery:" form) and the event id; ok is false for other ids.
func ParseDeliveryID(workflowID string) (tenant, eventID string, ok bool) {
	if id, ok := strings.CutPrefix(workflowID, "delivery:"); ok {
		return DefaultTenant, id, true
	}
	rest, ok := strings.CutPrefix(workflowID, "delivery@")
	if !ok {
		return "", "", false
	}
	tenant, eventID, ok = strings.Cut(rest, ":")
	if !ok || tenant == "" {
		return "", "", false
	}
	return tenant, eventID, true
}

// ValidateEndpointID checks that id can be part of a workflow id and a URL path:
// 1 to 128 characters of letters, digits, '-', '_' and '.'.
func ValidateEndpointID(id string) error { return validateName("endpoint id", "acme-prod", id) }

// ValidateTenant checks a tenant name, with the same rules as endpoint ids.
func ValidateTenant(t string) error { return validateName("tenant", "acme", t) }

func validateName(kind, example, id string) error {
	if id == "" {
		return fmt.Errorf("%s is empty: give one like %s", kind, example)
	}
	if len(id) > 128 {
		return fmt.Errorf("%s %q is %d characters long: use at most 128", kind, id, len(id))
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("%s %q contains %q: use only letters, digits, '-', '_' and '.'", kind, id, r)
		}
	}
	return nil
}

// AttemptRecord is one attempt as the status query shows it.
type AttemptRecord struct {
	Round  int               `json:"round"`
	Number int               `json:"number"`
	Result activities.Result `json:"result"`
	Next   *NextStep         `json:"next,omitempty"`
}

// NextStep is what the ladder decided after a failed attempt.
type NextStep struct {
	Retry     bool          `json:"retry"`
	At        time.Time     `json:"at,omitempty"`
	Delay     time.Duration `json:"delay,omitempty"`
	BaseDelay time.Duration `json:"base_delay,omitempty"`
	Source    string        `json:"source,omitempty"`
}

// Status is the answer of the status query: where a delivery stands and every attempt so far.
type Status struct {
	Event         EventSummary    `json:"event"`
	State         string          `json:"state"`
	Round         int             `json:"round"`
	Attempts      []AttemptRecord `json:"attempts"`
	Dropped       int             `json:"dropped_attempts,omitempty"`
	NextAttemptAt time.Time       `json:"next_attempt_at,omitempty"`
	DeliveredAt   time.Time       `json:"delivered_at,omitempty"`
	DeadAt        time.Time       `json:"dead_lettered_at,omitempty"`
	ExpiresAt     time.Time       `json:"expires_at,omitempty"`
	// Waiting says why the next attempt is held back, while it is.
	Waiting *Waiting `json:"waiting,omitempty"`
}

// Waiting is a hold on a delivery by its endpoint's gate or breaker.
type Waiting struct {
	activities.Hold
	Since time.Time `json:"since"`
}

// EventSummary is an event without its payload.
type EventSummary struct {
	ID         string    `json:"id"`
	EndpointID string    `json:"endpoint_id"`
	Type       string    `json:"type"`
	CreatedAt  time.Time `json:"created_at"`
}

func summarize(e Event) EventSummary {
	return EventSummary{ID: e.ID, EndpointID: e.EndpointID, Type: e.Type, CreatedAt: e.CreatedAt}
}
