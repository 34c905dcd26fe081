package starter

import (
	"encoding/json"
	"fmt"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/expr"
	"github.com/heraldhq/herald/policy"
)

// record is the visibility record of endpoint ep's workflow with its admission memo as
// the endpoint published it (memo) and search attributes as indexed (tokens).
func record(t testing.TB, memo herald.Endpoint, tokens []string) *workflowpb.WorkflowExecutionInfo {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	p, err := dc.ToPayload(herald.AdmissionView{Endpoint: memo, Snapshot: policy.UnlimitedSnapshot()})
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := json.Marshal(tokens)
	return &workflowpb.WorkflowExecutionInfo{
		Memo:             &commonpb.Memo{Fields: map[string]*commonpb.Payload{herald.MemoAdmission: p}},
		SearchAttributes: &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{herald.AttrSubscriptions.GetName(): {Data: sa}}},
	}
}

// TestMemoFilter: a send takes an endpoint's filter from its record's memo only when the
// memo shows the endpoint, tenant and subscription the record does; otherwise it reads.
func TestMemoFilter(t *testing.T) {
	s := &Client{opts: Options{DataConverter: converter.GetDefaultDataConverter()}}
	ep := herald.Endpoint{ID: "a", Tenant: "acme", Types: []string{"order.*"}, Filter: "data.n > 1", Secret: "whsec_x"}
	tokens := herald.SubscriptionTokens("acme", ep.Types)
	if f, ok := s.memoFilter(record(t, ep, tokens), "a", "acme", tokens); !ok || f != ep.Filter {
		t.Fatalf("memo that matches its record: %q, %v", f, ok)
	}
	older := ep
	older.Types = []string{"invoice.*"}
	if _, ok := s.memoFilter(record(t, older, tokens), "a", "acme", tokens); ok {
		t.Fatal("memo older than its record's subscription trusted")
	}
	if _, ok := s.memoFilter(record(t, ep, tokens), "b", "acme", tokens); ok {
		t.Fatal("memo of another endpoint trusted")
	}
	if _, ok := s.memoFilter(record(t, ep, tokens), "a", "other", tokens); ok {
		t.Fatal("memo of another tenant trusted")
	}
	none := &workflowpb.WorkflowExecutionInfo{}
	if _, ok := s.memoFilter(none, "a", "acme", tokens); ok {
		t.Fatal("missing memo trusted")
	}
	broken := record(t, ep, tokens)
	broken.Memo.Fields[herald.MemoAdmission].Data = []byte("{")
	if _, ok := s.memoFilter(broken, "a", "acme", tokens); ok {
		t.Fatal("memo that does not decode trusted")
	}
}

// BenchmarkSendFilters1000 is a send's filter work for 1,000 subscribers: each record's
// memo decoded and checked (memoFilter), the event decoded once, and each filter run.
func BenchmarkSendFilters1000(b *testing.B) {
	s := &Client{opts: Options{DataConverter: converter.GetDefaultDataConverter()}}
	recs := make([]*workflowpb.WorkflowExecutionInfo, 1000)
	tokens := herald.SubscriptionTokens("acme", []string{"order.*"})
	for i := range recs {
		recs[i] = record(b, herald.Endpoint{ID: fmt.Sprintf("ep-%04d", i), Tenant: "acme", URL: "https://example.com/hook", Types: []string{"order.*"},
			Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Filter: `data.amount > 100 && data.customer.country in ["FR", "DE"]`, Version: 3}, tokens)
	}
	data := []byte(`{"order_id": 42, "amount": 150.5, "customer": {"country": "FR"}}`)
	for b.Loop() {
		in, err := expr.NewInput(expr.Event{ID: "evt_1", Type: "order.paid", Tenant: "acme", Data: data})
		if err != nil {
			b.Fatal(err)
		}
		for i, ex := range recs {
			src, ok := s.memoFilter(ex, fmt.Sprintf("ep-%04d", i), "acme", tokens)
			if !ok {
				b.Fatal("memo not trusted")
			}
			f, err := expr.CompileFilter(src)
			if err != nil {
				b.Fatal(err)
			}
			if ok, err := f.Match(in); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	}
}
