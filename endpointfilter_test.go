package herald

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkEndpointQuery builds an endpoint listing's query from request values as the server
// does (validate, then scope to the token's tenant), parses it with the server's parser
// and checks the tenant's condition is at its top, with the running endpoint workflows'
// conditions; the values unvalidated too: quoting alone must keep them in.
func checkEndpointQuery(t *testing.T, tenant, state string) {
	const token = "acme"
	split := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	req := EndpointFilter{Tenant: tenant, State: state}
	raw := req
	raw.Tenant = token
	for _, q := range []Query{raw.Query(), raw.Query().StartedBefore(split), raw.Query().StartedSince(split)} {
		conds := parseWhere(t, q.String())
		if !hasCondition(conds, AttrTenant.GetName(), "=", token) || !hasCondition(conds, "WorkflowType", "=", EndpointWorkflow) ||
			!hasCondition(conds, "ExecutionStatus", "=", "Running") {
			t.Fatalf("unvalidated filter %+v: query %q lost its tenant, type or status condition", raw, q.String())
		}
		if state != "" && state != "disabled" && !hasCondition(conds, AttrCircuit.GetName(), "=", state) {
			t.Fatalf("state %q did not stay one literal in %q", state, q.String())
		}
	}

	err := req.Validate()
	if err != nil {
		var fe *FilterError
		if !errors.As(err, &fe) || (fe.Filter != "tenant" && fe.Filter != "state") || !strings.HasPrefix(err.Error(), "filter "+fe.Filter+": ") {
			t.Fatalf("Validate(%+v) = %v: not a FilterError naming the filter", req, err)
		}
		return
	}
	if state != "" && !slices.Contains(EndpointStates, state) {
		t.Fatalf("Validate(%+v) accepted state %q", req, state)
	}
	if tenant != "" && tenant != token {
		return // a tenant token naming another tenant: refused (403) before any query
	}
	req.Tenant = token
	conds := parseWhere(t, req.Query().StartedBefore(split).String())
	if !hasCondition(conds, AttrTenant.GetName(), "=", token) {
		t.Fatalf("filter %+v: query %q has no top-level tenant condition", req, req.Query().String())
	}
}

func TestEndpointFilterInjections(t *testing.T) {
	for _, v := range injections {
		checkEndpointQuery(t, v, "")
		checkEndpointQuery(t, "acme", v)
		if err := (EndpointFilter{State: v}).Validate(); err == nil {
			t.Errorf("state %q: Validate = nil, want a refusal", v)
		}
	}
	for _, st := range EndpointStates {
		if err := (EndpointFilter{Tenant: "acme", State: st}).Validate(); err != nil {
			t.Errorf("state %s: %v", st, err)
		}
		checkEndpointQuery(t, "acme", st)
	}
	if q := (EndpointFilter{State: "disabled"}).Query().String(); !strings.Contains(q, AttrDisabled.GetName()+" IS NOT NULL") {
		t.Errorf("disabled selects %q", q)
	}
}

func FuzzEndpointFilterQuery(f *testing.F) {
	for _, s := range injections {
		f.Add(s, "")
		f.Add("acme", s)
	}
	for _, st := range EndpointStates {
		f.Add("acme", st)
	}
	f.Fuzz(func(t *testing.T, tenant, state string) {
		checkEndpointQuery(t, tenant, state)
	})
}
