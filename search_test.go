package herald

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/temporalio/sqlparser"
)

// injections are the ways found to break out of a value of the event search, with their
// unicode and double-escape variants: each must stay one string literal.
var injections = []string{
	`x\' OR WorkflowType = "Delivery" -- `,
	`x' OR WorkflowType = 'Delivery' -- `,
	`x\' OR WorkflowType = 'Delivery' -- `,
	`x\\' OR WorkflowType = 'Delivery' -- `,
	`x\\\' OR WorkflowType = 'Delivery' -- `,
	`x'' OR WorkflowType = 'Delivery' -- `,
	`x" OR WorkflowType = "Delivery" -- `,
	`x\" OR WorkflowType = "Delivery" -- `,
	`x\`,
	`x\\`,
	`\`,
	`'`,
	`''`,
	`-- `,
	`x -- comment`,
	`x' -- `,
	`x' # `,
	`x' /* `,
	`x' OR 1=1 OR HeraldTenant = 'beta`,
	"x\u2019 OR WorkflowType = \u2018Delivery\u2019 -- ",
	"x\u02bc OR 1=1 -- ",
	"x\uff07 OR 1=1 -- ",
	"x\x00' OR 1=1 -- ",
	"x\x00",
	"\xff' OR 1=1 -- ",
	"x\xc0\xa7 OR 1=1 -- ",
	"x\x1a' OR 1=1 -- ",
	"x\n' OR 1=1 -- ",
	"x\r\t\b'",
	"%27 OR 1=1 -- ",
	"order.*",
	"*",
	"order.paid",
}

// conjuncts are the conditions of expr joined by AND at its top level.
func conjuncts(expr sqlparser.Expr) []sqlparser.Expr {
	switch e := expr.(type) {
	case *sqlparser.AndExpr:
		return append(conjuncts(e.Left), conjuncts(e.Right)...)
	case *sqlparser.ParenExpr:
		if _, ok := e.Expr.(*sqlparser.AndExpr); ok {
			return conjuncts(e.Expr)
		}
	}
	return []sqlparser.Expr{expr}
}

// hasCondition reports whether one of conds is "column op value", value a string literal
// (op = IN: a tuple of exactly that one literal).
func hasCondition(conds []sqlparser.Expr, column, op, value string) bool {
	for _, c := range conds {
		cmp, ok := c.(*sqlparser.ComparisonExpr)
		if !ok || cmp.Operator != op {
			continue
		}
		col, ok := cmp.Left.(*sqlparser.ColName)
		if !ok || col.Name.String() != column {
			continue
		}
		right := cmp.Right
		if tuple, ok := right.(sqlparser.ValTuple); ok {
			if len(tuple) != 1 {
				continue
			}
			right = tuple[0]
		}
		if v, ok := right.(*sqlparser.SQLVal); ok && v.Type == sqlparser.StrVal && string(v.Val) == value {
			return true
		}
	}
	return false
}

// parseWhere parses a visibility query as the Temporal server does (its query converter
// wraps it in a SELECT and hands it to this parser).
func parseWhere(t *testing.T, query string) []sqlparser.Expr {
	t.Helper()
	stmt, err := sqlparser.Parse("select * from table1 where " + query)
	if err != nil {
		t.Fatalf("the server's parser refuses the query %q: %v", query, err)
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok || sel.Where == nil || sel.Limit != nil || sel.OrderBy != nil || sel.GroupBy != nil {
		t.Fatalf("query %q does not parse to a plain WHERE: %s", query, sqlparser.String(stmt))
	}
	return conjuncts(sel.Where.Expr)
}

// checkTenantQuery builds a tenant's event search from request values as the server does
// (validate, then scope to the token's tenant), parses it with the server's parser and
// checks the tenant's condition, and the endpoint's, are top-level conditions. It also
// builds the query from the values unvalidated: quoting alone must keep them in.
func checkTenantQuery(t *testing.T, typ, state, event, endpoint, tenant string, since, until time.Time) {
	const token = "acme"
	req := EventFilter{Type: typ, State: State(state), EventID: event, Tenant: tenant, Since: since, Until: until}
	if endpoint != "" {
		req.Endpoints = []string{endpoint}
	}
	// Quoting alone: whatever the values, the tenant's condition holds at the top.
	raw := req
	raw.Tenant, raw.Tenants = token, []string{token}
	conds := parseWhere(t, raw.Query())
	if !hasCondition(conds, AttrTenant.GetName(), "=", token) || !hasCondition(conds, "WorkflowType", "=", DeliveryWorkflow) {
		t.Fatalf("unvalidated filter %+v: query %q lost its tenant or type condition", raw, raw.Query())
	}
	if endpoint != "" && !hasCondition(conds, AttrEndpoint.GetName(), "in", endpoint) {
		t.Fatalf("unvalidated filter %+v: query %q lost its endpoint condition", raw, raw.Query())
	}
	if prefix, wild := strings.CutSuffix(typ, "*"); typ != "" && !wild && !hasCondition(conds, AttrEventType.GetName(), "=", typ) {
		t.Fatalf("type %q did not stay one literal in %q", typ, raw.Query())
	} else if wild && prefix != "" && !hasCondition(conds, AttrEventType.GetName(), "starts_with", prefix) {
		t.Fatalf("type prefix %q did not stay one literal in %q", prefix, raw.Query())
	}

	// The server's path: values that break their grammar are refused, naming the filter.
	err := req.Validate()
	if err != nil {
		var fe *FilterError
		if !errors.As(err, &fe) || fe.Filter == "" || !strings.Contains(err.Error(), fe.Filter) {
			t.Fatalf("Validate(%+v) = %v: not a FilterError naming the filter", req, err)
		}
		return
	}
	if tenant != "" && tenant != token {
		return // a tenant token naming another tenant: refused (403) before any query
	}
	req.Tenant, req.Tenants = token, []string{token}
	if err := req.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v after scoping", req, err)
	}
	conds = parseWhere(t, req.Query())
	if !hasCondition(conds, AttrTenant.GetName(), "=", token) {
		t.Fatalf("filter %+v: query %q has no top-level tenant condition", req, req.Query())
	}
	if endpoint != "" && !hasCondition(conds, AttrEndpoint.GetName(), "in", endpoint) {
		t.Fatalf("filter %+v: query %q has no top-level endpoint condition", req, req.Query())
	}
}

func FuzzEventFilterQuery(f *testing.F) {
	for _, s := range injections {
		f.Add(s, "", "", "", "", int64(0), int64(0))
		f.Add("order.paid", s, "", "", "", int64(0), int64(0))
		f.Add("", "", s, "", "", int64(0), int64(0))
		f.Add("", "", "", s, "", int64(0), int64(0))
		f.Add("", "", "", "", s, int64(0), int64(0))
		f.Add(s+"*", "dead_letter", s, s, "acme", int64(1), int64(2))
	}
	f.Add("order.*", "delivered", "evt_1", "acme-billing", "acme", int64(1767225600), int64(1767312000))
	f.Fuzz(func(t *testing.T, typ, state, event, endpoint, tenant string, since, until int64) {
		var s, u time.Time
		if since != 0 {
			s = time.Unix(since%(1<<35), 0)
		}
		if until != 0 {
			u = time.Unix(until%(1<<35), 0)
		}
		checkTenantQuery(t, typ, state, event, endpoint, tenant, s, u)
	})
}

func TestEventFilterInjections(t *testing.T) {
	// The few injections that are valid values of a field: they stay one literal.
	wantValid := map[string]map[string]bool{
		"type":     {"order.*": true, "*": true, "order.paid": true},
		"event":    {"*": true, `x\`: true, `x\\`: true, `\`: true, `'`: true, `''`: true},
		"endpoint": {"order.paid": true},
		"tenant":   {"order.paid": true},
	}
	for _, v := range injections {
		for _, field := range []string{"type", "event", "endpoint", "tenant", "state"} {
			f := EventFilter{}
			switch field {
			case "type":
				f.Type = v
			case "event":
				f.EventID = v
			case "endpoint":
				f.Endpoints = []string{v}
			case "tenant":
				f.Tenant = v
			case "state":
				f.State = State(v)
			}
			err := f.Validate()
			switch {
			case wantValid[field][v] && err != nil:
				t.Errorf("%s %q: Validate = %v, want ok", field, v, err)
			case !wantValid[field][v] && err == nil:
				t.Errorf("%s %q: Validate = nil, want a refusal", field, v)
			case err != nil && !strings.HasPrefix(err.Error(), "filter "+field+": "):
				t.Errorf("%s %q: Validate = %v, want it to name the filter", field, v, err)
			}
			checkTenantQuery(t, f.Type, string(f.State), f.EventID, strings.Join(f.Endpoints, ""), f.Tenant, time.Time{}, time.Time{})
		}
	}
}

func TestQuoteReadsBack(t *testing.T) {
	for _, v := range append(injections, "", "a'b''c\\d\\\\e\"f\x00g\x1ah") {
		stmt, err := sqlparser.Parse("select * from table1 where HeraldEventId = " + quote(v))
		if err != nil {
			t.Fatalf("quote(%q) = %s: parse: %v", v, quote(v), err)
		}
		conds := conjuncts(stmt.(*sqlparser.Select).Where.Expr)
		if len(conds) != 1 || !hasCondition(conds, "HeraldEventId", "=", v) {
			t.Errorf("quote(%q) = %s reads back as %s", v, quote(v), sqlparser.String(stmt))
		}
	}
}

func TestValidateTypeFilter(t *testing.T) {
	for _, ok := range []string{"order.paid", "order.*", "ord*", "*", "a"} {
		if err := ValidateTypeFilter(ok); err != nil {
			t.Errorf("ValidateTypeFilter(%q) = %v, want ok", ok, err)
		}
	}
	for _, bad := range []string{"", "**", "order.*.paid", "a' b\\", "ordér.paid", "a;b", "\xff", "a\x00"} {
		if err := ValidateTypeFilter(bad); err == nil {
			t.Errorf("ValidateTypeFilter(%q) = nil, want an error", bad)
		}
	}
}
