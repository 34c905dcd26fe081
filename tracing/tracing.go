// Package tracing sends Herald's OpenTelemetry traces: one trace follows an event from the
// producer's API request, through the Temporal workflows and activities, to the request
// the receiver gets.
//
// Tracing is off unless the standard OpenTelemetry environment asks for it (FromEnv):
//
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 herald dev
//
// Set, a process exports its spans over OTLP and:
//
//   - the HTTP API and dashboard (package server) open a server span per request, named
//     by its route ("POST /v1/events"), continuing a traceparent the caller sent;
//   - the Temporal client and workers carry the trace through Temporal's headers with the
//     SDK's tracing interceptor (Interceptor): StartWorkflow, RunWorkflow, StartActivity,
//     RunActivity, signals, queries and updates each have a span, and workflow code stays
//     deterministic (the interceptor's spans never enter a workflow's decisions);
//   - each attempt (package activities) opens a span named AttemptSpan with the event,
//     the endpoint, the attempt's number and its outcome, and inside it the HTTP client
//     span of the POST, whose W3C traceparent header goes to the receiver: a receiver that
//     traces joins the same trace.
//
// The variables read are those of the OpenTelemetry specification: see EnvHelp.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// ScopeName is the instrumentation scope of Herald's own spans.
const ScopeName = "github.com/heraldhq/herald"

// AttemptSpan is the name of the span of one delivery attempt.
const AttemptSpan = "herald.attempt"

// EnvHelp describes the environment that turns tracing on, for --help texts.
const EnvHelp = `Tracing (OpenTelemetry, off unless configured):
  OTEL_EXPORTER_OTLP_ENDPOINT          OTLP collector, e.g. http://127.0.0.1:4318 (turns tracing on)
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT   the same, for traces only
  OTEL_TRACES_EXPORTER                 otlp (turns tracing on, default endpoint) or none (off)
  OTEL_EXPORTER_OTLP_PROTOCOL          http/protobuf (default) or grpc
  OTEL_SERVICE_NAME                    service name on the spans (default herald)
  OTEL_SDK_DISABLED=true, OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS
  and the other OTEL_* variables of the OpenTelemetry specification apply as it says.
The receiver gets a W3C traceparent header with each attempt.`

// Tracing is a process's tracer provider and propagator. A nil *Tracing traces nothing:
// every method is safe on it.
type Tracing struct {
	// Provider makes the tracers.
	Provider trace.TracerProvider
	// Propagator reads and writes the trace context in headers (W3C traceparent and
	// baggage).
	Propagator propagation.TextMapPropagator
	shutdown   func(context.Context) error
}

// New is tracing through tp (a test's tracetest recorder, or a producer's own provider),
// with the W3C trace context and baggage propagators.
func New(tp trace.TracerProvider) *Tracing {
	return &Tracing{Provider: tp, Propagator: propagator()}
}

func propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// FromEnv sets tracing up from the process's OpenTelemetry environment (the exporters
// read their OTEL_EXPORTER_OTLP_* settings from it too): nil, and no error, when it is off. It is on when OTEL_TRACES_EXPORTER is
// otlp, or an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and OTEL_TRACES_EXPORTER is not none; OTEL_SDK_DISABLED=true
// turns it off whatever the rest says. service is the default service name
// (OTEL_SERVICE_NAME wins). Shut it down to flush the spans.
func FromEnv(ctx context.Context, service string) (*Tracing, error) {
	getenv := os.Getenv
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	switch {
	case exporter == "none":
		return nil, nil
	case exporter == "" && !endpoint:
		return nil, nil
	case exporter != "" && exporter != "otlp":
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: Herald exports traces with otlp (or none)", exporter)
	}
	protocol := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if protocol == "" {
		protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx) // reads OTEL_EXPORTER_OTLP_* itself
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: use http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err == nil {
		var env *resource.Resource
		env, err = resource.New(ctx, resource.WithFromEnv()) // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		if err == nil {
			res, err = resource.Merge(res, env)
		}
	}
	if err != nil && !errors.Is(err, resource.ErrPartialResource) && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER, the batching from OTEL_BSP_*.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := New(tp)
	t.shutdown = tp.Shutdown
	return t, nil
}

// Discard is tracing that records and batches every span as FromEnv's does, then drops
// it instead of exporting it: what tracing costs a process, without a collector (herald
// bench --trace).
func Discard() *Tracing {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	t := New(tp)
	t.shutdown = tp.Shutdown
	return t
}

// discard is a span exporter that drops the spans.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// Enabled reports whether t traces.
func (t *Tracing) Enabled() bool { return t != nil && t.Provider != nil }

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Tracer is Herald's tracer; nil when t is off.
func (t *Tracing) Tracer() trace.Tracer {
	if !t.Enabled() {
		return nil
	}
	return t.Provider.Tracer(ScopeName)
}

// Interceptor is the Temporal SDK's tracing interceptor on t, for client.Options.Interceptors:
// the client's calls and the workers made from that client then carry the trace. Nil
// when t is off.
func (t *Tracing) Interceptor() (interceptor.ClientInterceptor, error) {
	if !t.Enabled() {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:            t.Provider.Tracer("temporal-sdk-go"),
		TextMapPropagator: t.Propagator,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return i, nil
}

// Transport wraps rt so that each request has an HTTP client span and carries its
// traceparent; rt itself when t is off.
func (t *Tracing) Transport(rt http.RoundTripper) http.RoundTripper {
	if !t.Enabled() {
		return rt
	}
	return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(t.Provider), otelhttp.WithPropagators(t.Propagator))
}

// Handler wraps h so that each request has a server span, named after the route that
// served it ("POST /v1/events") and continuing the caller's traceparent; static files are
// not traced. h itself when t is off.
func (t *Tracing) Handler(h http.Handler) http.Handler {
	if !t.Enabled() {
		return h
	}
	return otelhttp.NewHandler(h, "herald",
		otelhttp.WithTracerProvider(t.Provider),
		otelhttp.WithPropagators(t.Propagator),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return !strings.HasPrefix(r.URL.Path, "/static/") && r.URL.Path != "/favicon.ico"
		}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if r.Pattern != "" {
				return r.Pattern
			}
			return r.Method
		}),
	)
}
