package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/interceptor"

	"github.com/heraldhq/herald/tracing"
)

// startTracing turns tracing on for a command that serves or works (dev, worker, serve)
// when the OpenTelemetry environment asks for it (tracing.FromEnv): the Temporal client,
// the worker and the HTTP server then trace. stop flushes the spans not yet exported.
func (g *globals) startTracing(ctx context.Context) (stop func(), err error) {
	t, err := tracing.FromEnv(ctx, "herald")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if !t.Enabled() {
		return func() {}, nil
	}
	i, err := t.Interceptor()
	if err != nil {
		return nil, err
	}
	g.tracing, g.interceptors = t, []interceptor.ClientInterceptor{i}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := t.Shutdown(ctx); err != nil {
			g.logger().Warn("flushing the traces", "error", err)
		}
	}, nil
}
