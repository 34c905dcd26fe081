package herald

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/temporal"
)

// Search attributes Herald registers in its namespace and sets on its workflows.
var (
	// AttrStatus is the delivery State, set when a delivery leaves the fast path
	// (waiting_retry, delivered after a retry, dead_letter, expired). A delivery that
	// succeeded at once has none: its execution status is Completed.
	AttrStatus = temporal.NewSearchAttributeKeyKeyword("HeraldStatus")
	// AttrEndpoint is the endpoint id of a delivery or an endpoint workflow.
	AttrEndpoint = temporal.NewSearchAttributeKeyKeyword("HeraldEndpoint")
	// AttrEventType is the event type of a delivery.
	AttrEventType = temporal.NewSearchAttributeKeyKeyword("HeraldEventType")
	// AttrCircuit is an endpoint workflow's circuit state (closed, open, half_open).
	AttrCircuit = temporal.NewSearchAttributeKeyKeyword("HeraldCircuit")
	// AttrDisabled is set on an endpoint workflow while its endpoint is disabled, to the
	// cause (policy.DisableCause: manual, gone, failing); unset once enabled.
	AttrDisabled = temporal.NewSearchAttributeKeyKeyword("HeraldDisabled")
	// AttrEventID is the event id of a delivery, and of the record of an event sent to a
	// tenant (fan-out) with no destination: it lists one event's deliveries, in every
	// tenant at once. Deliveries sent to one endpoint by id set it since 0.2.0 (those
	// sent before are found by their workflow id, in their tenant's search).
	AttrEventID = temporal.NewSearchAttributeKeyKeyword("HeraldEventId")
	// AttrTenant is the tenant that sent a delivery (DefaultTenant for an endpoint
	// registered without one), set by the starter when the delivery starts and kept by
	// its replays: a tenant's event search selects by it, so an endpoint that moves to
	// another tenant leaves its past deliveries with the tenant that sent them.
	AttrTenant = temporal.NewSearchAttributeKeyKeyword("HeraldTenant")
	// AttrSubscriptions is an endpoint workflow's subscription, as the tokens its tenant's
	// sends look for (SubscriptionTokens): a send finds the endpoints its event type
	// reaches with one indexed visibility query (MatchingTokens), whatever the tenant's size.
	AttrSubscriptions = temporal.NewSearchAttributeKeyKeywordList("HeraldSubscriptions")
)

// SearchAttributeNames lists the custom search attributes Herald needs: all of type Keyword
// but HeraldSubscriptions, a KeywordList.
var SearchAttributeNames = []string{AttrStatus.GetName(), AttrEndpoint.GetName(), AttrEventType.GetName(), AttrCircuit.GetName(), AttrDisabled.GetName(), AttrEventID.GetName(), AttrTenant.GetName(), AttrSubscriptions.GetName()}

// SearchAttributeTypes maps Herald's search attributes to their type, as a namespace must
// register them.
func SearchAttributeTypes() map[string]enums.IndexedValueType {
	m := make(map[string]enums.IndexedValueType, len(SearchAttributeNames))
	for _, n := range SearchAttributeNames {
		m[n] = enums.INDEXED_VALUE_TYPE_KEYWORD
	}
	m[AttrSubscriptions.GetName()] = enums.INDEXED_VALUE_TYPE_KEYWORD_LIST
	return m
}

// Query is a visibility query: conditions joined with AND. Build one with Workflows and
// its methods; String gives the text the Temporal list API takes.
type Query struct {
	conds []string
}

// Workflows selects the workflows of type workflowType (e.g. DeliveryWorkflow).
func Workflows(workflowType string) Query {
	return Query{conds: []string{"WorkflowType = " + quote(workflowType)}}
}

// WorkflowID selects one workflow by id, every run of it.
func WorkflowID(id string) Query {
	return Query{conds: []string{"WorkflowId = " + quote(id)}}
}

// Where is a query with no condition yet, to build the alternatives of Either.
func Where() Query { return Query{} }

// Either keeps the workflows that match any of alts (each alt's conditions joined with AND).
func (q Query) Either(alts ...Query) Query {
	parts := make([]string, len(alts))
	for i, a := range alts {
		parts[i] = "(" + a.String() + ")"
	}
	return q.and("(" + strings.Join(parts, " OR ") + ")")
}

// Status keeps the workflows whose execution status is s (Running, Completed, Failed,
// ContinuedAsNew, ...).
func (q Query) Status(s string) Query { return q.and("ExecutionStatus = " + quote(s)) }

// NotStatus keeps the workflows whose execution status is not s.
func (q Query) NotStatus(s string) Query { return q.and("ExecutionStatus != " + quote(s)) }

// IDIn keeps the workflows whose id is one of ids.
func (q Query) IDIn(ids ...string) Query { return q.and("WorkflowId IN (" + quoteAll(ids) + ")") }

// HasAny keeps the workflows whose keyword list a holds any of vs.
func (q Query) HasAny(a temporal.SearchAttributeKeyKeywordList, vs ...string) Query {
	return q.and(a.GetName() + " IN (" + quoteAll(vs) + ")")
}

// TypeNotIn keeps the workflows whose type is none of types.
func (q Query) TypeNotIn(types ...string) Query {
	return q.and("WorkflowType NOT IN (" + quoteAll(types) + ")")
}

// Running keeps the running workflows.
func (q Query) Running() Query { return q.and("ExecutionStatus = 'Running'") }

// Closed keeps the workflows that are no longer running.
func (q Query) Closed() Query { return q.and("ExecutionStatus != 'Running'") }

// Is keeps the workflows whose keyword attribute a is v.
func (q Query) Is(a temporal.SearchAttributeKeyKeyword, v string) Query {
	return q.and(a.GetName() + " = " + quote(v))
}

// In keeps the workflows whose keyword attribute a is one of vs.
func (q Query) In(a temporal.SearchAttributeKeyKeyword, vs ...string) Query {
	return q.and(a.GetName() + " IN (" + quoteAll(vs) + ")")
}

// StartsWith keeps the workflows whose keyword attribute a starts with prefix.
func (q Query) StartsWith(a temporal.SearchAttributeKeyKeyword, prefix string) Query {
	return q.and(a.GetName() + " STARTS_WITH " + quote(prefix))
}

// Missing keeps the workflows on which attribute a is not set.
func (q Query) Missing(a temporal.SearchAttributeKeyKeyword) Query {
	return q.and(a.GetName() + " IS NULL")
}

// Has keeps the workflows on which attribute a is set.
func (q Query) Has(a temporal.SearchAttributeKeyKeyword) Query {
	return q.and(a.GetName() + " IS NOT NULL")
}

// StartedSince keeps the workflows started at t or later; a zero t keeps all.
func (q Query) StartedSince(t time.Time) Query {
	if t.IsZero() {
		return q
	}
	return q.and(fmt.Sprintf("StartTime >= '%s'", t.UTC().Format(time.RFC3339Nano)))
}

// StartedUntil keeps the workflows started at t or before; a zero t keeps all.
func (q Query) StartedUntil(t time.Time) Query {
	if t.IsZero() {
		return q
	}
	return q.and(fmt.Sprintf("StartTime <= '%s'", t.UTC().Format(time.RFC3339Nano)))
}

// StartedBefore keeps the workflows (runs) started before t.
func (q Query) StartedBefore(t time.Time) Query {
	return q.and(fmt.Sprintf("StartTime < '%s'", t.UTC().Format(time.RFC3339Nano)))
}

// String is the query's text.
func (q Query) String() string { return strings.Join(q.conds, " AND ") }

func (q Query) and(c string) Query {
	return Query{conds: append(q.conds[:len(q.conds):len(q.conds)], c)}
}

// quote is s as a quoted string literal of the visibility query language, escaped as
// Temporal's query parser reads it (a MySQL-style lexer: a backslash escapes the
// character after it, so "\\'" is a quote, not the end of the string): every
// backslash, quote and control character the lexer decodes is written as its escape, so
// the literal ends exactly where quote ends it and reads back as s.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if e, ok := sqlEscapes[c]; ok {
			b.WriteByte('\\')
			b.WriteByte(e)
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('\'')
	return b.String()
}

// sqlEscapes maps each byte the query lexer reads after a backslash to the letter that
// stands for it there.
var sqlEscapes = map[byte]byte{0: '0', '\'': '\'', '"': '"', '\b': 'b', '\n': 'n', '\r': 'r', '\t': 't', 26: 'Z', '\\': '\\'}

func quoteAll(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = quote(v)
	}
	return strings.Join(q, ", ")
}

// Lister lists workflow executions: the part of the Temporal client Executions uses.
type Lister interface {
	ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
}

// Executions yields every workflow execution query selects, asking for pageSize at a time.
// A failed list yields its error once and ends.
func Executions(ctx context.Context, c Lister, query string, pageSize int32) iter.Seq2[*workflowpb.WorkflowExecutionInfo, error] {
	return func(yield func(*workflowpb.WorkflowExecutionInfo, error) bool) {
		var token []byte
		for {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Query: query, PageSize: pageSize, NextPageToken: token,
			})
			if err != nil {
				yield(nil, err)
				return
			}
			for _, ex := range resp.GetExecutions() {
				if !yield(ex, nil) {
					return
				}
			}
			if token = resp.GetNextPageToken(); len(token) == 0 {
				return
			}
		}
	}
}

// EventStates are the delivery states an EventFilter can select, in the order people meet them.
var EventStates = []State{StateScheduled, StateAttempting, StateWaitingRetry, StateWaitingEndpoint, StateWaitingTurn, StateDelivered, StateDeadLetter, StateExpired, StateSkipped, StateCancelled}

// EventFilter selects deliveries for the event list, by their search attributes and start
// time; empty fields select all.
type EventFilter struct {
	// Type is an event type: a name (order.paid), or a prefix ending in * (order.*
	// matches order.paid and order.refund.created; * matches every type).
	Type string `json:"type,omitempty"`
	// State is one of EventStates. StateAttempting also selects deliveries that have not
	// left the fast path (running, no HeraldStatus yet), and StateDelivered those that
	// succeeded at once (completed with no HeraldStatus).
	State State `json:"state,omitempty"`
	// EventID is an event id: a delivery of an event sent to a tenant carries it in
	// HeraldEventId; one sent to an endpoint by id is found by its workflow id in each of
	// Tenants.
	EventID string `json:"event_id,omitempty"`
	// Tenant keeps the deliveries a tenant sent (HeraldTenant): the condition of a
	// tenant's search, always a top-level AND of the query.
	Tenant string `json:"tenant,omitempty"`
	// Tenants are the tenants whose workflow ids EventID is looked up in.
	Tenants []string `json:"tenants,omitempty"`
	// Endpoints keeps the deliveries to any of these endpoints.
	Endpoints []string `json:"endpoints,omitempty"`
	// Since and Until bound when the delivery started (its send, or its last replay).
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// Query is the visibility query for the deliveries f selects. Runs that continued as new
// are left out: their successor carries the delivery on. Check f with Validate first:
// the query quotes every value, but only a valid one selects what it says.
func (f EventFilter) Query() string {
	q := Workflows(DeliveryWorkflow).NotStatus("ContinuedAsNew")
	if f.Tenant != "" {
		q = q.Is(AttrTenant, f.Tenant)
	}
	switch prefix, ok := strings.CutSuffix(f.Type, "*"); {
	case ok && prefix != "":
		q = q.StartsWith(AttrEventType, prefix)
	case f.Type != "" && !ok:
		q = q.Is(AttrEventType, f.Type)
	}
	if len(f.Endpoints) > 0 {
		q = q.In(AttrEndpoint, f.Endpoints...)
	}
	if f.EventID != "" {
		alts := []Query{Where().Is(AttrEventID, f.EventID)}
		if len(f.Tenants) > 0 {
			ids := make([]string, len(f.Tenants))
			for i, t := range f.Tenants {
				ids[i] = DeliveryID(t, f.EventID)
			}
			alts = append(alts, Where().IDIn(ids...))
		}
		q = q.Either(alts...)
	}
	switch f.State {
	case "":
	case StateAttempting:
		q = q.Either(Where().Is(AttrStatus, string(StateAttempting)), Where().Missing(AttrStatus).Status("Running"))
	case StateDelivered:
		q = q.Either(Where().Is(AttrStatus, string(StateDelivered)), Where().Missing(AttrStatus).Status("Completed"))
	default:
		q = q.Is(AttrStatus, string(f.State))
	}
	return q.StartedSince(f.Since).StartedUntil(f.Until).String()
}

// EndpointStates are the states an EndpointFilter can select: an endpoint's circuit state
// (policy.CircuitState), or disabled.
var EndpointStates = []string{"closed", "open", "half_open", "disabled"}

// EndpointFilter selects registered endpoints for the endpoint list, by their search
// attributes; empty fields select all.
type EndpointFilter struct {
	// Tenant keeps the endpoints of one tenant (HeraldTenant; DefaultTenant for those put
	// without one): the condition of a tenant's listing, always a top-level AND of the
	// query. Endpoints registered before 0.2.0 carry it once herald migrate has run.
	Tenant string `json:"tenant,omitempty"`
	// State is one of EndpointStates: a circuit state (HeraldCircuit), or disabled
	// (HeraldDisabled set, whatever the circuit).
	State string `json:"state,omitempty"`
}

// Query is the visibility query for the running, registered endpoint workflows f selects
// (HeraldCircuit is set once an endpoint is registered). Check f with Validate first: the
// query quotes every value, but only a valid one selects what it says.
func (f EndpointFilter) Query() Query {
	q := Workflows(EndpointWorkflow).Running().Has(AttrCircuit)
	if f.Tenant != "" {
		q = q.Is(AttrTenant, f.Tenant)
	}
	switch f.State {
	case "":
	case "disabled":
		q = q.Has(AttrDisabled)
	default:
		q = q.Is(AttrCircuit, f.State)
	}
	return q
}

// ListedState is the state of a delivery as a listing shows it, from its HeraldStatus
// (status, empty when unset) and its execution status (Running, Completed, ...): a
// delivery on the fast path is attempting while it runs and delivered once completed.
func ListedState(status, execution string) State {
	switch {
	case status != "":
		return State(status)
	case execution == "Running":
		return StateAttempting
	case execution == "Completed":
		return StateDelivered
	}
	return State(strings.ToLower(execution))
}
