package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d", rec.Code)
	}
	b, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRecordAndScrape(t *testing.T) {
	r, err := NewWithOptions(Options{NoProcessMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Attempt("acme", "delivered", 20*time.Millisecond)
	r.Attempt("acme", "delivered", 30*time.Millisecond)
	r.Attempt("acme", "timeout", 5*time.Second)
	r.RetryAfter("acme", "honoured")
	r.RetryAfter("acme", "")     // nothing recorded
	r.RetryAfter("acme", "none") // no header: nothing recorded

	text := scrape(t, r.Handler())
	for _, want := range []string{
		`herald_attempts_total{endpoint="acme",outcome="delivered"} 2`,
		`herald_attempts_total{endpoint="acme",outcome="timeout"} 1`,
		`herald_attempt_duration_seconds_count{endpoint="acme"} 3`,
		`herald_attempt_duration_seconds_bucket{endpoint="acme",le="0.025"} 1`,
		`herald_attempt_duration_seconds_bucket{endpoint="acme",le="0.05"} 2`,
		`herald_attempt_duration_seconds_bucket{endpoint="acme",le="5"} 3`,
		`herald_retry_after_total{action="honoured",endpoint="acme"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("scrape lacks %q; got:\n%s", want, text)
		}
	}
	if strings.Contains(text, `action=""`) || strings.Contains(text, `action="none"`) {
		t.Errorf("an empty Retry-After action was recorded:\n%s", text)
	}

}

func TestSDKMetricsInSameRegistry(t *testing.T) {
	r, err := NewWithOptions(Options{NoProcessMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	h := r.SDKHandler().WithTags(map[string]string{"task_queue": "herald"})
	h.Counter("temporal_request").Inc(3)
	h.Gauge("temporal_num_pollers").Update(2)
	h.Timer("temporal_workflow_task_execution_latency").Record(15 * time.Millisecond)
	// Close copies the SDK's counters and gauges into the registry.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	text := scrape(t, r.Handler())
	for _, want := range []string{
		`temporal_request_total{task_queue="herald"} 3`,
		`temporal_num_pollers{task_queue="herald"} 2`,
		`temporal_workflow_task_execution_latency_seconds_count{task_queue="herald"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("scrape lacks %q; got:\n%s", want, text)
		}
	}
}

// Herald's metrics recorded through the SDK's handler (as the workflows do) keep their label
// values as they are; the SDK's own are written the SDK's way.
func TestHeraldMetricsThroughSDKHandler(t *testing.T) {
	r, err := NewWithOptions(Options{NoProcessMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	h := r.SDKHandler().WithTags(map[string]string{"task_queue": "herald-endpoints"})
	ep := h.WithTags(map[string]string{"endpoint": "acme-prod.eu"})
	ep.Counter("herald_dead_letters_total").Inc(1)
	ep.Counter("herald_replays_total").Inc(2)
	ep.WithTags(map[string]string{"state": "half_open"}).Gauge("herald_endpoint_circuit").Update(1)
	ep.Gauge("herald_endpoint_cap").Update(50)
	h.Counter("temporal_request").Inc(1)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	text := scrape(t, r.Handler())
	for _, want := range []string{
		`herald_dead_letters_total{endpoint="acme-prod.eu",task_queue="herald-endpoints"} 1`,
		`herald_replays_total{endpoint="acme-prod.eu",task_queue="herald-endpoints"} 2`,
		`herald_endpoint_circuit{endpoint="acme-prod.eu",state="half_open",task_queue="herald-endpoints"} 1`,
		`herald_endpoint_cap{endpoint="acme-prod.eu",task_queue="herald-endpoints"} 50`,
		`temporal_request_total{task_queue="herald_endpoints"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("scrape lacks %q; got:\n%s", want, text)
		}
	}
}

func TestProcessMetricsByDefault(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if text := scrape(t, r.Handler()); !strings.Contains(text, "go_goroutines ") {
		t.Errorf("default recorder has no Go runtime metrics")
	}
}

func TestNilRecorderIsNoOp(t *testing.T) {
	var r *Recorder
	r.Attempt("acme", "delivered", time.Second)
	r.RetryAfter("acme", "honoured")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r.SDKHandler() == nil {
		t.Fatal("nil recorder's SDK handler is nil; want a no-op handler")
	}
	r.SDKHandler().Counter("x").Inc(1)
	if r.Registry() != nil {
		t.Fatal("nil recorder has a registry")
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("nil recorder's handler answered %d, want 404", rec.Code)
	}
}

func TestTwoRecordersAreIndependent(t *testing.T) {
	a, err := NewWithOptions(Options{NoProcessMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewWithOptions(Options{NoProcessMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.Attempt("x", "delivered", time.Second)
	if strings.Contains(scrape(t, b.Handler()), `herald_attempts_total{endpoint="x"`) {
		t.Fatal("a metric recorded on one recorder shows on another")
	}
}
