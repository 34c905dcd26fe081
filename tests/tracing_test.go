package tests

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/tracing"
	"github.com/heraldhq/herald/worker"
)

// tracedStack is a stack of its own whose client, worker and HTTP API trace into an
// in-memory recorder; its worker trusts roots (nil: the system's) besides.
type tracedStack struct {
	*testkit.Stack
	spans    *tracetest.SpanRecorder
	tracing  *tracing.Tracing
	api      *httptest.Server
	operator string
}

func startTracedStack(t *testing.T, roots *x509.CertPool) *tracedStack {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tr := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	icpt, err := tr.Interceptor()
	if err != nil {
		t.Fatal(err)
	}
	stk, err := testkit.Start(context.Background(), testkit.Options{
		Client: func(o *client.Options) { o.Interceptors = append(o.Interceptors, icpt) },
		Worker: worker.Options{Tracing: tr, RootCAs: roots},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stk.Stop)
	tokens, err := server.OpenTokenStore(filepath.Join(t.TempDir(), "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	op, _, err := tokens.Create(true, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(server.Options{Starter: stk.Starter, Client: stk.Client, Tokens: tokens, Namespace: stk.Server.Namespace(), Logger: quiet, Tracing: tr})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(h)
	t.Cleanup(api.Close)
	return &tracedStack{Stack: stk, spans: rec, tracing: tr, api: api, operator: op}
}

// call sends an API request as the operator, with header h, and decodes the answer.
func (s *tracedStack) call(t *testing.T, method, path string, body any, h http.Header) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.api.URL+path, bytes.NewReader(b))
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+s.operator)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// One trace follows an event from the producer's request to the receiver: the API's server
// span continues the producer's traceparent, the Temporal spans follow, the attempt's span
// holds the HTTP client span, and the receiver gets that span's traceparent.
func TestTracingFollowsAnEvent(t *testing.T) {
	s := startTracedStack(t, nil)
	var mu sync.Mutex
	var got []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Traceparent"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	if code, out := s.call(t, "PUT", "/v1/endpoints/traced", map[string]any{"url": rcv.URL}, nil); code != http.StatusCreated {
		t.Fatalf("put: %d %v", code, out)
	}

	// The producer's own span, sent along as a traceparent.
	ctx, producer := s.tracing.Provider.Tracer("producer").Start(context.Background(), "producer.send")
	h := http.Header{}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	code, out := s.call(t, "POST", "/v1/events", map[string]any{"endpoint_id": "traced", "id": "evt_traced", "type": "order.paid", "data": map[string]any{"n": 1}}, h)
	producer.End()
	if code != http.StatusAccepted {
		t.Fatalf("send: %d %v", code, out)
	}
	waitFor(t, s.Starter, "evt_traced", herald.StateDelivered)

	traceID := producer.SpanContext().TraceID()
	var spans []sdktrace.ReadOnlySpan
	find := func(name string) sdktrace.ReadOnlySpan {
		for _, sp := range spans {
			if sp.Name() == name && sp.SpanContext().TraceID() == traceID {
				return sp
			}
		}
		return nil
	}
	// The delivery workflow's span ends when it completes: wait for the spans to be there.
	eventually(t, "the trace's spans", func() bool {
		spans = s.spans.Ended()
		return find("RunWorkflow:"+herald.DeliveryWorkflow) != nil && find(tracing.AttemptSpan) != nil && find("HTTP POST") != nil
	})
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var names []string
	for _, sp := range spans {
		if sp.SpanContext().TraceID() == traceID {
			byID[sp.SpanContext().SpanID()] = sp
			names = append(names, sp.Name())
		}
	}
	parentOf := func(sp sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan { return byID[sp.Parent().SpanID()] }

	api := find("POST /v1/events")
	if api == nil || api.SpanKind() != trace.SpanKindServer || api.Parent().SpanID() != producer.SpanContext().SpanID() {
		t.Fatalf("no server span POST /v1/events under the producer's span; the trace has %q", names)
	}
	start := find("StartWorkflow:" + herald.DeliveryWorkflow)
	if start == nil || parentOf(start) != api {
		t.Fatalf("StartWorkflow:%s is not under the API's span; the trace has %q", herald.DeliveryWorkflow, names)
	}
	attempt := find(tracing.AttemptSpan)
	if p := parentOf(attempt); p == nil || !strings.HasPrefix(p.Name(), "RunActivity:") {
		t.Fatalf("the attempt's span is not under a RunActivity span; the trace has %q", names)
	}
	attrs := map[string]string{}
	for _, kv := range attempt.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range map[string]string{
		string(activities.AttrEventID): "evt_traced", string(activities.AttrEndpointID): "traced", string(activities.AttrEventType): "order.paid",
		string(activities.AttrAttemptNumber): "1", string(activities.AttrOutcome): string(herald.OutcomeDelivered), string(activities.AttrStatusCode): "204",
	} {
		if attrs[k] != v {
			t.Errorf("attempt span attribute %s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
	httpSpan := find("HTTP POST")
	if httpSpan.SpanKind() != trace.SpanKindClient || parentOf(httpSpan) != attempt {
		t.Fatalf("the HTTP client span is not under the attempt's span; the trace has %q", names)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "00-" + traceID.String() + "-" + httpSpan.SpanContext().SpanID().String() + "-01"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("the receiver got traceparent %q, want [%s]", got, want)
	}
	t.Logf("trace %s: %d spans: %s", traceID, len(names), strings.Join(names, ", "))
}

// Tracing off (no Tracing, no interceptor): the receiver gets no traceparent.
func TestNoTracingNoTraceparent(t *testing.T) {
	var got atomicString
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.set(r.Header.Get("Traceparent") + "|")
	}))
	defer rcv.Close()
	putEndpoint(t, "untraced", rcv.URL, nil)
	if _, err := shared.starter.Send(context.Background(), herald.Event{ID: "evt_untraced", EndpointID: "untraced", Type: "t", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	waitState(t, "evt_untraced", herald.StateDelivered)
	if v := got.get(); v != "|" {
		t.Fatalf("traceparent %q with tracing off", strings.TrimSuffix(v, "|"))
	}
}

type atomicString struct {
	mu sync.Mutex
	s  string
}

func (a *atomicString) set(s string) { a.mu.Lock(); a.s = s; a.mu.Unlock() }
func (a *atomicString) get() string  { a.mu.Lock(); defer a.mu.Unlock(); return a.s }
