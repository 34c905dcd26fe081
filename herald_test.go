package herald

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

// TestIDs pins the workflow ids: they are in every running workflow and recorded history.
func TestIDs(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{DeliveryID("", "evt_1"), "delivery:evt_1"},
		{DeliveryID(DefaultTenant, "evt_1"), "delivery:evt_1"},
		{DeliveryID("acme", "evt:1"), "delivery@acme:evt:1"},
		{EndpointWorkflowID("acme-prod"), "endpoint:acme-prod"},
		{StatsWorkflowID("acme-prod")[:len("endpoint-stats:")], "endpoint-stats:"},
		{EndpointTaskQueue("herald"), "herald-endpoints"},
		{EndpointTaskQueue("herald-endpoints"), "herald-endpoints"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	for _, id := range []string{"delivery:evt:1", "delivery@acme:evt:1"} {
		tenant, ev, ok := ParseDeliveryID(id)
		if !ok || DeliveryID(tenant, ev) != id {
			t.Errorf("ParseDeliveryID(%q) = %q, %q, %v: not the inverse of DeliveryID", id, tenant, ev, ok)
		}
	}
	if id, ok := ParseEndpointWorkflowID("endpoint:acme"); !ok || id != "acme" {
		t.Errorf("ParseEndpointWorkflowID = %q, %v", id, ok)
	}
	if _, ok := ParseEndpointWorkflowID("delivery:acme"); ok {
		t.Error("a delivery id parsed as an endpoint id")
	}
}

// TestQueries pins the visibility queries to the text hand-written before the builder.
func TestQueries(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct{ got, want string }{
		{DeadLetterFilter{}.Query(), "WorkflowType = 'Delivery' AND ExecutionStatus = 'Running' AND HeraldStatus = 'dead_letter'"},
		{DeadLetterFilter{EndpointID: "o'k", Since: since, Until: since}.Query(),
			"WorkflowType = 'Delivery' AND ExecutionStatus = 'Running' AND HeraldStatus = 'dead_letter' AND HeraldEndpoint = 'o\\'k'" +
				" AND StartTime >= '2026-01-02T03:04:05Z' AND StartTime <= '2026-01-02T03:04:05Z'"},
		{Workflows(EndpointWorkflow).Running().Has(AttrCircuit).Is(AttrCircuit, "open").String(),
			"WorkflowType = 'Endpoint' AND ExecutionStatus = 'Running' AND HeraldCircuit IS NOT NULL AND HeraldCircuit = 'open'"},
		{Workflows(DeliveryWorkflow).Is(AttrEndpoint, "acme").String(), "WorkflowType = 'Delivery' AND HeraldEndpoint = 'acme'"},
		{WorkflowID("delivery:x").Closed().String(), "WorkflowId = 'delivery:x' AND ExecutionStatus != 'Running'"},
	} {
		if c.got != c.want {
			t.Errorf("query\n got %s\nwant %s", c.got, c.want)
		}
	}
	// Building on a shared prefix never changes it.
	base := Workflows(DeliveryWorkflow)
	_ = base.Running()
	if a, b := base.Is(AttrEndpoint, "a").String(), base.Is(AttrEndpoint, "b").String(); strings.Contains(a, "'b'") || strings.Contains(b, "'a'") {
		t.Errorf("queries share conditions: %s / %s", a, b)
	}
}

// TestWireShapes checks that the contract's types encode as before they moved here: an
// embedded struct without a json tag adds its fields to its container's object.
func TestWireShapes(t *testing.T) {
	keys := func(v any) map[string]any {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	has := func(m map[string]any, ks ...string) {
		t.Helper()
		for _, k := range ks {
			if _, ok := m[k]; !ok {
				t.Errorf("%v has no %q", m, k)
			}
		}
	}
	lr := keys(LeaseRequest{LeaseRequest: policy.LeaseRequest{Holder: "w"}})
	has(lr, "holder", "in_use", "want")
	if _, ok := lr["report"]; ok {
		t.Errorf("%v has a report: counts go to the stats shards", lr)
	}
	has(keys(Waiting{Hold: Hold{Reason: "r"}, Since: time.Now()}), "reason", "since")
	st := EndpointState{LimiterView: policy.LimiterView{Leases: []policy.Lease{{Holder: "w", Permits: 2, Expires: time.Now()}}}}
	st.Circuit.State = policy.CircuitOpen
	m := keys(st)
	has(m, "circuit", "in_flight", "cap", "max_in_flight", "leases", "queue", "p50", "p99", "counters", "overrides")
	if c := m["circuit"].(map[string]any); c["state"] != "open" {
		t.Errorf("circuit = %v, want state open", c)
	}
	has(m["leases"].([]any)[0].(map[string]any), "holder", "permits", "expires")

	// The API's body embeds EndpointChange: its fields sit beside the body's own.
	var body struct {
		URL string `json:"url"`
		EndpointChange
	}
	dec := json.NewDecoder(strings.NewReader(`{"url":"u","max_in_flight":7,"breaker":{"probe_delay":"2m"}}`))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.URL != "u" || body.MaxInFlight == nil || *body.MaxInFlight != 7 || body.Breaker == nil || body.Breaker.ProbeDelay == nil {
		t.Errorf("decoded %+v", body)
	}
}

// TestEventJSON checks the event's payload form, and that the raw form of earlier
// histories still decodes.
func TestEventJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := Event{ID: "evt_1", EndpointID: "acme", Type: "t", Data: json.RawMessage(`{"x":"<&>"}`), CreatedAt: at}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"evt_1","endpoint_id":"acme","type":"t","data_text":"{\"x\":\"\u003c\u0026\u003e\"}","created_at":"2026-01-02T03:04:05Z"}`
	if string(b) != want {
		t.Errorf("event JSON\n got %s\nwant %s", b, want)
	}
	for _, in := range []string{string(b), `{"id":"evt_1","endpoint_id":"acme","type":"t","data":{"x":"<&>"},"created_at":"2026-01-02T03:04:05Z"}`} {
		var got Event
		if err := json.Unmarshal([]byte(in), &got); err != nil {
			t.Fatal(err)
		}
		if string(got.Data) != `{"x":"<&>"}` || got.ID != "evt_1" || !got.CreatedAt.Equal(at) {
			t.Errorf("decoded %s as %+v", in, got)
		}
	}
}

// TestEndpointChange covers the one translation of endpoint settings the CLI and the API
// share: zeros refused, ranges checked once, breaker changes per field.
func TestEndpointChange(t *testing.T) {
	i := func(n int) *int { return &n }
	d := func(v time.Duration) *Duration { x := Duration(v); return &x }
	tests := []struct {
		name string
		c    EndpointChange
		want string // substring of the error; empty for valid
	}{
		{"nothing", EndpointChange{}, ""},
		{"cap", EndpointChange{MaxInFlight: i(7)}, ""},
		{"cap 0", EndpointChange{MaxInFlight: i(0)}, "max_in_flight 0: give a count"},
		{"cap 900", EndpointChange{MaxInFlight: i(900)}, "1..500"},
		{"attempts 0", EndpointChange{Attempts: i(0)}, "attempts 0"},
		{"timeout 0", EndpointChange{Timeout: d(0)}, "timeout 0s"},
		{"timeout 3m", EndpointChange{Timeout: d(3 * time.Minute)}, "outside 1s..2m0s"},
		{"retention 10m", EndpointChange{Retention: d(10 * time.Minute)}, "under 1h"},
		{"breaker 0", EndpointChange{Breaker: &BreakerChange{ConsecutiveFailures: i(0)}}, "consecutive failures 0"},
		{"probe under 1s", EndpointChange{Breaker: &BreakerChange{ProbeDelay: d(500 * time.Millisecond)}}, "under 1s"},
		{"probe over the default longest", EndpointChange{Breaker: &BreakerChange{ProbeDelay: d(2 * time.Hour)}}, ""},
		{"longest under the default probe", EndpointChange{Breaker: &BreakerChange{MaxProbeDelay: d(time.Minute)}}, ""},
		{"longest under 1s", EndpointChange{Breaker: &BreakerChange{MaxProbeDelay: d(time.Millisecond)}}, "below the probe delay"},
		{"half-open 0", EndpointChange{Breaker: &BreakerChange{HalfOpenSuccesses: i(0)}}, ""},
		{"rate limit", EndpointChange{RateLimit: i(5)}, ""},
		{"rate limit 0 (none)", EndpointChange{RateLimit: i(0)}, ""},
		{"rate limit -1", EndpointChange{RateLimit: i(-1)}, "rate_limit: rate limit -1 is outside 1..10000"},
		{"rate limit 10001", EndpointChange{RateLimit: i(10001)}, "rate limit 10001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := tt.c.Overrides()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			case tt.want == "" && (o == nil) != (tt.name == "nothing"):
				t.Fatalf("overrides %+v for %+v", o, tt.c)
			}
		})
	}
	// A breaker change names only what it changes: merged, the rest stays as stored.
	stored := Overrides{Breaker: &policy.BreakerOverride{ConsecutiveFailures: 2, ProbeDelay: duration.Duration(time.Hour), MaxProbeDelay: duration.Duration(2 * time.Hour)}}
	o, err := EndpointChange{Breaker: &BreakerChange{VolumeFailures: i(50)}}.Overrides()
	if err != nil {
		t.Fatal(err)
	}
	stored.Merge(*o)
	if b := stored.Breaker; b.ConsecutiveFailures != 2 || b.VolumeFailures != 50 || b.ProbeDelay.Std() != time.Hour || b.MaxProbeDelay.Std() != 2*time.Hour {
		t.Errorf("merged breaker %+v, want the stored settings with volume failures 50", *b)
	}
	if err := stored.Validate(); err != nil {
		t.Errorf("merged overrides: %v", err)
	}
}

// TestRateLimitOverride: a rate limit set, kept by a change that does not name it,
// removed by 0, and in the limiter's configuration.
func TestRateLimitOverride(t *testing.T) {
	i := func(n int) *int { return &n }
	var stored Overrides
	for _, step := range []struct {
		change EndpointChange
		want   int // 0: no rate limit stored
	}{
		{EndpointChange{RateLimit: i(5)}, 5},
		{EndpointChange{MaxInFlight: i(3)}, 5},
		{EndpointChange{RateLimit: i(0)}, 0},
		{EndpointChange{RateLimit: i(10000)}, 10000},
	} {
		o, err := step.change.Overrides()
		if err != nil {
			t.Fatal(err)
		}
		stored.Merge(*o)
		got := 0
		if stored.RateLimit != nil {
			got = *stored.RateLimit
			if got == 0 {
				t.Fatalf("a rate limit of 0 stored; want none")
			}
		}
		if got != step.want || stored.Limiter().RateLimit != step.want {
			t.Fatalf("after %+v: stored %d, limiter %d; want %d", step.change, got, stored.Limiter().RateLimit, step.want)
		}
		if err := stored.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	// The change is its own copy: changing it later changes nothing stored.
	n := 7
	stored.Merge(Overrides{RateLimit: &n})
	n = 9
	if *stored.RateLimit != 7 {
		t.Errorf("stored rate limit follows the change's variable: %d", *stored.RateLimit)
	}
}
