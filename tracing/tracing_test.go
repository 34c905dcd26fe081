package tracing

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// otelVars are the variables the tests set: each test clears all of them first.
var otelVars = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"}

func setEnv(t *testing.T, m map[string]string) {
	for _, k := range otelVars {
		t.Setenv(k, m[k])
	}
}

func TestFromEnvOnlyWhenConfigured(t *testing.T) {
	for _, c := range []struct {
		env map[string]string
		on  bool
		err string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false, ""},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		setEnv(t, c.env)
		tr, err := FromEnv(context.Background(), "herald")
		if (err != nil) != (c.err != "") || (err != nil && !strings.Contains(err.Error(), c.err)) || tr.Enabled() != c.on {
			t.Errorf("%v: enabled %v, error %v; want enabled %v, error %q", c.env, tr.Enabled(), err, c.on, c.err)
		}
		if tr.Enabled() {
			_ = tr.Shutdown(context.Background())
		}
	}
	var off *Tracing
	if off.Tracer() != nil || off.Transport(http.DefaultTransport) != http.DefaultTransport {
		t.Fatal("a nil Tracing must trace nothing")
	}
	if i, err := off.Interceptor(); i != nil || err != nil {
		t.Fatal("a nil Tracing has no interceptor")
	}
}

// The spans reach an OTLP/HTTP endpoint (a receiver on loopback that decodes the protocol's
// protobuf) with the service name from the environment.
func TestFromEnvExportsOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var got []*collectortrace.ExportTraceServiceRequest
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_SERVICE_NAME": "herald-test"})
	tr, err := FromEnv(context.Background(), "herald")
	if err != nil || !tr.Enabled() {
		t.Fatalf("FromEnv: %v, %v", tr, err)
	}
	_, span := tr.Tracer().Start(context.Background(), AttemptSpan)
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown (flush): %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var names, services []string
	for _, req := range got {
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.Resource.Attributes {
				if kv.Key == "service.name" {
					services = append(services, kv.Value.GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					names = append(names, sp.Name)
				}
			}
		}
	}
	if len(names) != 1 || names[0] != AttemptSpan || len(services) != 1 || services[0] != "herald-test" {
		t.Fatalf("the collector got spans %q from services %q", names, services)
	}
}

// grpcCollector is an OTLP/gRPC trace service that keeps the span names it gets.
type grpcCollector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (c *grpcCollector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				c.names = append(c.names, sp.Name)
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// With OTEL_EXPORTER_OTLP_PROTOCOL=grpc the spans go over OTLP/gRPC.
func TestFromEnvExportsOverOTLPgRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &grpcCollector{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, col)
	go srv.Serve(ln)
	defer srv.Stop()
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + ln.Addr().String(), "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
	tr, err := FromEnv(context.Background(), "herald")
	if err != nil || !tr.Enabled() {
		t.Fatalf("FromEnv: %v, %v", tr, err)
	}
	_, span := tr.Tracer().Start(context.Background(), AttemptSpan)
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown (flush): %v", err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.names) != 1 || col.names[0] != AttemptSpan {
		t.Fatalf("the gRPC collector got %q", col.names)
	}
}
