package starter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/heraldhq/herald"
	"github.com/temporalio/sqlparser"
)

// fakeEndpoint is one endpoint workflow's current run in fakeVisibility.
type fakeEndpoint struct {
	id, tenant, circuit string
	started             time.Time
	run                 int
}

// fakeVisibility is a visibility store of endpoint workflows as Temporal's SQL store
// answers a listing: the running runs the query selects, latest started first, pageSize at
// a time, with a cursor holding the last run's start. It evaluates the conditions
// herald.EndpointFilter and ListEndpoints write, and answers each endpoint's state query.
type fakeVisibility struct {
	client.Client
	mu      sync.Mutex
	eps     map[string]*fakeEndpoint
	queries []*workflowservice.ListWorkflowExecutionsRequest
}

type fakeToken struct {
	StartTime time.Time
	RunID     string
}

func (v *fakeVisibility) add(id, tenant string, started time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.eps[id] = &fakeEndpoint{id: id, tenant: tenant, circuit: "closed", started: started}
}

// continueAsNew gives endpoint id a new run, started at t.
func (v *fakeVisibility) continueAsNew(id string, t time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.eps[id].started, v.eps[id].run = t, v.eps[id].run+1
}

func runID(e *fakeEndpoint) string { return fmt.Sprintf("%s/%d", e.id, e.run) }

func (v *fakeVisibility) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.queries = append(v.queries, req)
	stmt, err := sqlparser.Parse("select * from t where " + req.GetQuery())
	if err != nil {
		return nil, fmt.Errorf("the query does not parse: %w", err)
	}
	var after *fakeToken
	if len(req.GetNextPageToken()) > 0 {
		if err := json.Unmarshal(req.GetNextPageToken(), &after); err != nil {
			return nil, serviceerror.NewInvalidArgument("unable to deserialize page token")
		}
	}
	var sel []*fakeEndpoint
	for _, e := range v.eps {
		if matches(e, conjunctsOf(stmt.(*sqlparser.Select).Where.Expr)) {
			sel = append(sel, e)
		}
	}
	sort.Slice(sel, func(i, j int) bool {
		if !sel[i].started.Equal(sel[j].started) {
			return sel[i].started.After(sel[j].started)
		}
		return runID(sel[i]) < runID(sel[j])
	})
	if after != nil {
		sel = slices.DeleteFunc(sel, func(e *fakeEndpoint) bool {
			return !(e.started.Before(after.StartTime) || (e.started.Equal(after.StartTime) && runID(e) > after.RunID))
		})
	}
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	if int(req.GetPageSize()) < len(sel) {
		sel = sel[:req.GetPageSize()]
	}
	for _, e := range sel {
		kw := func(s string) *commonpb.Payload { b, _ := json.Marshal(s); return &commonpb.Payload{Data: b} }
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{
			Execution: &commonpb.WorkflowExecution{WorkflowId: herald.EndpointWorkflowID(e.id), RunId: runID(e)},
			Status:    enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, StartTime: timestamppb.New(e.started),
			SearchAttributes: &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{
				herald.AttrTenant.GetName(): kw(e.tenant), herald.AttrCircuit.GetName(): kw(e.circuit)}},
		})
	}
	if len(sel) == int(req.GetPageSize()) && len(sel) > 0 {
		last := sel[len(sel)-1]
		resp.NextPageToken, _ = json.Marshal(fakeToken{StartTime: last.started, RunID: runID(last)})
	}
	return resp, nil
}

func conjunctsOf(expr sqlparser.Expr) []sqlparser.Expr {
	if a, ok := expr.(*sqlparser.AndExpr); ok {
		return append(conjunctsOf(a.Left), conjunctsOf(a.Right)...)
	}
	return []sqlparser.Expr{expr}
}

// matches evaluates the conditions ListEndpoints writes on e; any other fails the test's
// query (it matches nothing).
func matches(e *fakeEndpoint, conds []sqlparser.Expr) bool {
	for _, c := range conds {
		switch c := c.(type) {
		case *sqlparser.IsExpr:
			col := c.Expr.(*sqlparser.ColName).Name.String()
			if c.Operator != sqlparser.IsNotNullStr || (col != herald.AttrCircuit.GetName()) {
				return false // nothing here is disabled
			}
		case *sqlparser.ComparisonExpr:
			col := c.Left.(*sqlparser.ColName).Name.String()
			val := string(c.Right.(*sqlparser.SQLVal).Val)
			switch {
			case col == "WorkflowType" && c.Operator == "=":
				if val != herald.EndpointWorkflow {
					return false
				}
			case col == "ExecutionStatus" && c.Operator == "=":
				if val != "Running" {
					return false
				}
			case col == herald.AttrTenant.GetName() && c.Operator == "=":
				if val != e.tenant {
					return false
				}
			case col == herald.AttrCircuit.GetName() && c.Operator == "=":
				if val != e.circuit {
					return false
				}
			case col == "StartTime":
				t, err := time.Parse(time.RFC3339Nano, val)
				if err != nil || (c.Operator == "<" && !e.started.Before(t)) || (c.Operator == ">=" && e.started.Before(t)) ||
					(c.Operator != "<" && c.Operator != ">=") {
					return false
				}
			default:
				return false
			}
		default:
			return false
		}
	}
	return true
}

// fakeValue is a query's answer.
type fakeValue struct{ v any }

func (f fakeValue) HasValue() bool { return true }
func (f fakeValue) Get(ptr any) error {
	b, err := json.Marshal(f.v)
	if err == nil {
		err = json.Unmarshal(b, ptr)
	}
	return err
}

func (v *fakeVisibility) QueryWorkflow(_ context.Context, wfID, _, query string, _ ...any) (converter.EncodedValue, error) {
	id, ok := herald.ParseEndpointWorkflowID(wfID)
	v.mu.Lock()
	defer v.mu.Unlock()
	e := v.eps[id]
	if !ok || query != herald.QueryEndpointState || e == nil {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	return fakeValue{herald.EndpointState{ID: e.id, Tenant: e.tenant, Registered: true}}, nil
}

// listAll pages through the listing of f, limit at a time; between calls after(page).
func listAll(t *testing.T, s *Client, f herald.EndpointFilter, limit int, after func(page int)) []string {
	t.Helper()
	var ids []string
	var cursor []byte
	for page := 1; page < 1000; page++ {
		p, err := s.ListEndpoints(context.Background(), f, cursor, limit)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		for _, e := range p.Endpoints {
			ids = append(ids, e.ID)
		}
		if len(p.Next) == 0 {
			return ids
		}
		cursor = p.Next
		if after != nil {
			after(page)
		}
	}
	t.Fatal("the listing does not end")
	return nil
}

func TestListEndpointsMissesNoEndpointThatContinuesAsNew(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	v := &fakeVisibility{eps: map[string]*fakeEndpoint{}}
	var want []string
	for i := range 300 {
		id := fmt.Sprintf("ep-%03d", i)
		v.add(id, "acme", now.Add(-time.Hour+time.Duration(i)*time.Second))
		v.add("other-"+id, "globex", now.Add(-time.Hour+time.Duration(i)*time.Second))
		want = append(want, id)
	}
	s := New(v, Options{Now: func() time.Time { return now }})
	// While the listing pages, endpoints continue as new (the latest started, a page away
	// from the cursor, and one already listed) and new ones are registered.
	got := listAll(t, s, herald.EndpointFilter{Tenant: "acme"}, 20, func(page int) {
		now = now.Add(time.Second)
		if page <= 5 {
			v.continueAsNew(fmt.Sprintf("ep-%03d", 300-20*page-5), now) // not listed yet
			v.continueAsNew(fmt.Sprintf("ep-%03d", 299), now)           // listed on page 1
		}
		if page == 3 {
			v.add("late", "acme", now)
			want = append(want, "late")
		}
	})
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for _, id := range want {
		if seen[id] == 0 {
			t.Errorf("endpoint %s is missing from the listing", id)
		}
	}
	for id, n := range seen {
		if !slices.Contains(want, id) {
			t.Errorf("endpoint %s of another tenant is listed", id)
		}
		// ep-299 continued as new after its page: listed again, in the second part.
		if wantN := map[bool]int{true: 2, false: 1}[id == "ep-299"]; n != wantN {
			t.Errorf("endpoint %s listed %d times, want %d", id, n, wantN)
		}
	}
	for _, q := range v.queries {
		if q.GetPageSize() < 1 || q.GetPageSize() > 20 {
			t.Errorf("a read asked for %d, the page is 20", q.GetPageSize())
		}
	}
}

func TestListEndpointsListsEachOnceWhenNothingMoves(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	v := &fakeVisibility{eps: map[string]*fakeEndpoint{}}
	for i := range 95 {
		// Half registered within listingSkew of the first page: the listing's second part.
		v.add(fmt.Sprintf("ep-%03d", i), "acme", now.Add(-2*listingSkew+time.Duration(i)*2*listingSkew/95))
	}
	s := New(v, Options{Now: func() time.Time { return now }})
	for _, limit := range []int{1, 7, 50, 95, MaxEndpointPage} {
		got := listAll(t, s, herald.EndpointFilter{Tenant: "acme"}, limit, nil)
		if len(got) != 95 || len(slices.Compact(slices.Sorted(slices.Values(got)))) != 95 {
			t.Errorf("limit %d: %d listed, %d distinct, want 95 once each", limit, len(got), len(slices.Compact(slices.Sorted(slices.Values(got)))))
		}
	}
}

// FuzzListEndpointsInput: whatever tenant, state, cursor and limit a caller gives, the
// listing refuses it (ErrInvalid) before Temporal sees it, or sends only queries that the
// server's parser reads with the tenant's condition at the top, page sizes within the
// page's bound and the store's own cursors; and lists only the tenant's endpoints.
func FuzzListEndpointsInput(f *testing.F) {
	for _, s := range []string{"acme", "", "closed", "disabled", "a' OR 1=1 -- ", `x\' OR 1=1 -- `, "\x00", "open"} {
		f.Add(s, "", []byte(nil), 0)
		f.Add("acme", s, []byte(nil), 10)
	}
	f.Add("acme", "closed", []byte(`{"split":"2026-12-01T11:59:00Z","recent":true}`), 3)
	f.Add("acme", "", []byte(`{"split":"2026-12-01T11:59:00Z","token":{"StartTime":"2026-12-01T11:30:00Z","RunID":"x"}}`), 5)
	f.Add("acme", "", []byte(`{"split":"2026-12-01T11:59:00Z","token":"x"}`), 5)
	f.Add("", "", []byte(`garbage`), 501)
	f.Fuzz(func(t *testing.T, tenant, state string, cursor []byte, limit int) {
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		v := &fakeVisibility{eps: map[string]*fakeEndpoint{}}
		for i := range 12 {
			v.add(fmt.Sprintf("a-%d", i), "acme", now.Add(-time.Duration(i)*10*time.Second))
			v.add(fmt.Sprintf("g-%d", i), "globex", now.Add(-time.Duration(i)*10*time.Second))
		}
		s := New(v, Options{Now: func() time.Time { return now }})
		page, err := s.ListEndpoints(context.Background(), herald.EndpointFilter{Tenant: tenant, State: state}, cursor, limit)
		valid := (herald.EndpointFilter{Tenant: tenant, State: state}).Validate() == nil && limit >= 0 && limit <= MaxEndpointPage
		switch {
		case err != nil && !errors.Is(err, ErrInvalid):
			t.Fatalf("ListEndpoints(%q, %q, %q, %d) = %v, not ErrInvalid", tenant, state, cursor, limit, err)
		case err == nil && !valid:
			t.Fatalf("ListEndpoints(%q, %q, %q, %d) accepted input outside the grammar", tenant, state, cursor, limit)
		case err != nil && valid && cursor == nil:
			t.Fatalf("ListEndpoints(%q, %q, nil, %d) = %v, want a page", tenant, state, limit, err)
		}
		if !valid && len(v.queries) > 0 {
			t.Fatalf("input outside the grammar reached the store: %q", v.queries[0].GetQuery())
		}
		for _, q := range v.queries {
			stmt, perr := sqlparser.Parse("select * from t where " + q.GetQuery())
			if perr != nil {
				t.Fatalf("query %q does not parse: %v", q.GetQuery(), perr)
			}
			conds := conjunctsOf(stmt.(*sqlparser.Select).Where.Expr)
			if tenant != "" && !slices.ContainsFunc(conds, func(c sqlparser.Expr) bool {
				return sqlparser.String(c) == herald.AttrTenant.GetName()+" = '"+tenant+"'"
			}) {
				t.Fatalf("query %q has no top-level condition on tenant %s", q.GetQuery(), tenant)
			}
			if n := q.GetPageSize(); n < 1 || n > MaxEndpointPage || (limit > 0 && int(n) > limit) {
				t.Fatalf("a read asked for %d endpoints (limit %d)", n, limit)
			}
			if tok := q.GetNextPageToken(); len(tok) > 0 && !isJSONObject(tok) {
				t.Fatalf("the store got the cursor %q", tok)
			}
		}
		for _, e := range page.Endpoints {
			if tenant != "" && e.Tenant != tenant {
				t.Fatalf("tenant %s's listing shows %s of %s", tenant, e.ID, e.Tenant)
			}
		}
	})
}
