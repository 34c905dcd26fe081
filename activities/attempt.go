// Package activities holds Herald's activities: the attempt, bulk replay and the
// operational events. An attempt goes in three steps, each in a file of its own: admission
// at the worker's gate (attempt.go), the request built and signed (request.go), and its
// destination (destination.go; http.go is the HTTP one: SSRF-safe dialing, timeouts,
// capped body read, classification of the outcome). Activities make no retry decisions:
// the delivery workflow asks package policy what follows an attempt.
package activities

import (
	"context"
	"errors"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/worker/gate"
)

// AttemptInput is one attempt to deliver an event: the delivery's event itself, and which
// attempt this is. It is a local activity's input, handed over in process and never
// recorded in history.
type AttemptInput struct {
	Event  herald.Event `json:"event"`
	Round  int          `json:"round"`
	Number int          `json:"number"`
	// Waiter is the delivery's workflow id: where the endpoint workflow sends a Permit
	// when the attempt has to wait.
	Waiter string `json:"waiter,omitempty"`
	// Permit is a permit of its own the endpoint workflow handed the delivery.
	Permit *policy.Grant `json:"permit,omitempty"`
	// WaitKey names the wait this attempt sends if it must wait (policy.WaitKey); 0: none.
	WaitKey uint32 `json:"wait_key,omitempty"`
}

// Activities are Herald's activities. One value is shared by all attempts of a worker.
type Activities struct {
	// Gate admits attempts per endpoint and knows each endpoint's configuration.
	Gate *gate.Gate
	// Destination takes each attempt's signed request to the receiver (NewHTTP: an HTTP
	// POST to the endpoint's URL).
	Destination Destination
	// Defaults are the settings an endpoint uses unless it overrides them.
	Defaults herald.Settings
	// Metrics, if set, counts attempts, their latency and Retry-After decisions.
	Metrics *metrics.Recorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Tracer, if set, gives each attempt that sends a request a span (trace.go).
	Tracer trace.Tracer

	answered answered // attempts answered lately (answered.go)
}

// Attempt makes one attempt to deliver an event to its endpoint's current URL. It
// returns an error only when the worker itself is shutting down; every failure of the
// receiver is reported in the herald.Result.
func (a *Activities) Attempt(ctx context.Context, in AttemptInput) (herald.Result, error) {
	key := answeredKey(ctx, in)
	if res, ok := a.answered.recall(key, a.now()); ok {
		// This local activity ran before in a workflow task that was not completed: its
		// request was answered, and is not sent again.
		activity.GetLogger(ctx).Info("attempt answered before its workflow task was lost: its result again, no request",
			"event", in.Event.ID, "endpoint", in.Event.EndpointID, "attempt", in.Number, "outcome", res.Outcome)
		return res, nil
	}
	res := herald.Result{Number: in.Number, StartedAt: a.now(), Policy: a.Defaults.Apply(herald.Overrides{})}
	adm, hold, err := a.Gate.Acquire(gate.WithWaitKey(ctx, in.WaitKey), in.Event.EndpointID, in.Waiter, in.Permit)
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case errors.Is(err, herald.ErrNoEndpoint):
		res.Outcome, res.Error = herald.OutcomeNoEndpoint, err.Error()
		return res, nil
	case err != nil:
		// The endpoint workflow could not be reached: wait, this is not the receiver's fault.
		activity.GetLogger(ctx).Warn("endpoint workflow unreachable", "event", in.Event.ID, "endpoint", in.Event.EndpointID, "error", err)
		res.Held = &herald.Hold{Reason: "endpoint workflow unreachable: " + err.Error(), Recheck: herald.Duration(policy.UnreachableRecheck)}
		return res, nil
	case hold != nil:
		res.Held = hold
		activity.GetLogger(ctx).Debug("attempt held", "event", in.Event.ID, "endpoint", in.Event.EndpointID, "reason", hold.Reason, "queued", hold.Queued)
		return res, nil
	}
	start := a.now()
	if h := a.Gate.Late(ctx, adm, start); h != nil {
		// A rate-limited attempt whose second is over: no request, no attempt used.
		res.Held = h
		return res, nil
	}
	res = a.send(ctx, in, adm.Endpoint, start)
	if res.Outcome == herald.OutcomeTransformCancelled {
		// No request: nothing for the breaker to hear.
		a.Gate.Release(context.WithoutCancel(ctx), adm)
		activity.GetLogger(ctx).Info("delivery cancelled by the endpoint's transformation", "event", in.Event.ID, "endpoint", in.Event.EndpointID, "reason", res.Error)
		return res, ctx.Err()
	}
	if ctx.Err() != nil {
		// The worker is stopping: the request was cut short, not answered.
		a.Gate.Release(context.WithoutCancel(ctx), adm)
		return res, ctx.Err()
	}
	if spread, ok := a.Gate.Finish(ctx, adm, res); ok {
		res.Spread = &spread
	}
	a.Metrics.Attempt(in.Event.EndpointID, string(res.Outcome), res.Duration.Std())
	log := activity.GetLogger(ctx)
	if res.Delivered() {
		log.Debug("attempt delivered", "event", in.Event.ID, "endpoint", in.Event.EndpointID, "attempt", in.Number, "status", res.HTTPExchange.StatusCode, "duration", res.Duration)
		res.Policy = herald.Settings{}
	} else {
		log.Info("attempt failed", "event", in.Event.ID, "endpoint", in.Event.EndpointID, "attempt", in.Number, "round", in.Round,
			"outcome", res.Outcome, "status", res.HTTPExchange.StatusCode, "error", res.Error, "duration", res.Duration)
		a.Metrics.RetryAfter(in.Event.EndpointID, string(res.RetryAfter().Action))
	}
	a.answered.store(key, res, a.now())
	return res, nil
}

// send makes the request of one admitted attempt, started (and signed) at now: it runs the
// endpoint's transformation if it has one (transform: a cancellation ends here, an error
// is a refused attempt), builds the request (newRequest) and hands it to the destination.
func (a *Activities) send(ctx context.Context, in AttemptInput, ep herald.Endpoint, now time.Time) (res herald.Result) {
	if a.Tracer != nil {
		var span trace.Span
		ctx, span = startAttemptSpan(ctx, a.Tracer, in, ep)
		defer func() { endAttemptSpan(span, res) }()
	}
	settings := a.Defaults.Apply(ep.Overrides)
	tr, err := transform(ctx, in.Event, ep)
	var req *Request
	if err == nil && (tr == nil || tr.Cancel == "") {
		req, err = newRequest(in.Event, ep, tr, now, settings.Timeout.Std())
	}
	switch {
	case err != nil:
		res.Outcome, res.Error = herald.OutcomeRefused, err.Error()
	case req == nil:
		res.Outcome, res.Error = herald.OutcomeTransformCancelled, tr.Cancel
	default:
		res = a.Destination.Deliver(ctx, req)
		res.Duration = herald.Duration(a.now().Sub(now))
	}
	if tr != nil {
		res.Transformed = tr.record()
	}
	res.Number, res.StartedAt, res.Policy, res.URL = in.Number, now, settings, displayURL(ep.URL)
	return res
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// displayURL is the URL without query string or fragment, which may carry credentials.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}
