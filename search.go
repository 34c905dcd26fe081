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
)

// SearchAttributeNames lists the custom search attributes Herald needs, all of type Keyword.
var SearchAttributeNames = []string{AttrStatus.GetName(), AttrEndpoint.GetName(), AttrEventType.GetName(), AttrCircuit.GetName(), AttrDisabled.GetName()}

// SearchAttributeTypes maps Herald's search attributes to their type (all Keyword), as a
// namespace must register them.
func SearchAttributeTypes() map[string]enums.IndexedValueType {
	m := make(map[string]enums.IndexedValueType, len(SearchAttributeNames))
	for _, n := range SearchAttributeNames {
		m[n] = enums.INDEXED_VALUE_TYPE_KEYWORD
	}
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

// Running keeps the running workflows.
func (q Query) Running() Query { return q.and("ExecutionStatus = 'Running'") }

// Closed keeps the workflows that are no longer running.
func (q Query) Closed() Query { return q.and("ExecutionStatus != 'Running'") }

// Is keeps the workflows whose keyword attribute a is v.
func (q Query) Is(a temporal.SearchAttributeKeyKeyword, v string) Query {
	return q.and(a.GetName() + " = " + quote(v))
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

// String is the query's text.
func (q Query) String() string { return strings.Join(q.conds, " AND ") }

func (q Query) and(c string) Query {
	return Query{conds: append(q.conds[:len(q.conds):len(q.conds)], c)}
}

// quote is s as a quoted string literal of the visibility query language.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

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
