package activities

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/tracing"
)

// BenchmarkAttemptSend is the cost of an attempt's request (build, sign, POST to a receiver
// on loopback, classify) with tracing off and on (spans batched to an exporter that drops
// them). For the figure, compare the two ns/op.
func BenchmarkAttemptSend(b *testing.B) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer rcv.Close()
	ep := herald.Endpoint{ID: "ep", URL: rcv.URL, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	in := AttemptInput{Event: herald.Event{ID: "evt_1", Type: "t", EndpointID: "ep", Data: json.RawMessage(`{"n":1}`)}, Number: 1}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	on := tracing.New(tp)
	for _, c := range []struct {
		name string
		t    *tracing.Tracing
	}{{"off", nil}, {"on", on}} {
		b.Run(c.name, func(b *testing.B) {
			o := HTTPOptions{}
			if c.t.Enabled() {
				o.Wrap = c.t.Transport
			}
			a := &Activities{Destination: NewHTTP(loopback, o), Defaults: herald.DefaultSettings(), Tracer: c.t.Tracer()}
			for b.Loop() {
				if res := a.send(context.Background(), in, ep, time.Now()); !res.Delivered() {
					b.Fatalf("%+v", res)
				}
			}
		})
	}
}
