package activities

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/tracing"
)

// Attributes of an attempt's span (tracing.AttemptSpan).
const (
	AttrEventID       = attribute.Key("herald.event.id")
	AttrEventType     = attribute.Key("herald.event.type")
	AttrEndpointID    = attribute.Key("herald.endpoint.id")
	AttrAttemptNumber = attribute.Key("herald.attempt.number")
	AttrOutcome       = attribute.Key("herald.attempt.outcome")
	AttrStatusCode    = attribute.Key("http.response.status_code")
)

// startAttemptSpan opens the span of an attempt at ev to ep, a child of the activity's
// span; the HTTP client span of its request opens inside it.
func startAttemptSpan(ctx context.Context, t trace.Tracer, in AttemptInput, ep herald.Endpoint) (context.Context, trace.Span) {
	return t.Start(ctx, tracing.AttemptSpan, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		AttrEventID.String(in.Event.ID), AttrEventType.String(in.Event.Type),
		AttrEndpointID.String(ep.ID), AttrAttemptNumber.Int(in.Number),
	))
}

// endAttemptSpan records the attempt's outcome on its span and ends it; an attempt the
// receiver did not take is an error.
func endAttemptSpan(span trace.Span, res herald.Result) {
	span.SetAttributes(AttrOutcome.String(string(res.Outcome)))
	if c := res.HTTPExchange.StatusCode; c != 0 {
		span.SetAttributes(AttrStatusCode.Int(c))
	}
	if !res.Delivered() {
		span.SetStatus(codes.Error, res.Summary())
	}
	span.End()
}
