// Package metrics exposes Herald's Prometheus metrics: whatever goes through the
// client.MetricsHandler it gives for client.Options — the Temporal SDK's own metrics and
// those the workflows record (workflow.GetMetricsHandler) — and the attempts' metrics,
// recorded through a Recorder. A nil *Recorder is valid and records nothing, so code that
// runs without metrics needs no branches.
package metrics

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"strings"
	"unicode"

	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// latencyBuckets are the attempt latency histogram's upper bounds, in seconds: from a
// loopback answer to the longest attempt timeout (2m).
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// Options configure a Recorder. Zero values take the defaults.
type Options struct {
	// SDKReportInterval is how often the Temporal SDK's counters and gauges are copied to
	// the registry; default 1s. (Its timers are copied at once.)
	SDKReportInterval time.Duration
	// NoProcessMetrics leaves out the Go runtime and process collectors.
	NoProcessMetrics bool
}

// Recorder holds a Prometheus registry with the Temporal SDK's metrics and Herald's own.
// Its methods are safe for concurrent use and safe to call on a nil *Recorder.
type Recorder struct {
	registry *prometheus.Registry
	sdk      client.MetricsHandler
	closers  []io.Closer

	attempts   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	retryAfter *prometheus.CounterVec
}

// New returns a Recorder with the default options.
func New() (*Recorder, error) { return NewWithOptions(Options{}) }

// NewWithOptions returns a Recorder configured by o. Call Close when done.
func NewWithOptions(o Options) (*Recorder, error) {
	if o.SDKReportInterval <= 0 {
		o.SDKReportInterval = time.Second
	}
	reg := prometheus.NewRegistry()
	r := &Recorder{
		registry: reg,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_attempts_total",
			Help: "HTTP attempts made, by endpoint and outcome class (delivered, http_status, timeout, network, tls, refused, no_endpoint).",
		}, []string{"endpoint", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_attempt_duration_seconds",
			Help:    "Duration of HTTP attempts, from the request to the end of the (capped) response body, by endpoint.",
			Buckets: latencyBuckets,
		}, []string{"endpoint"}),
		retryAfter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_retry_after_total",
			Help: "Retry-After headers on failed attempts, by endpoint and decision (honoured, capped, ignored).",
		}, []string{"endpoint", "action"}),
	}
	cs := []prometheus.Collector{r.attempts, r.latency, r.retryAfter}
	if !o.NoProcessMetrics {
		cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}

	registerErrors := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "herald_metrics_register_errors_total",
		Help: "Temporal SDK metrics dropped because their name was already registered with other labels.",
	})
	if err := reg.Register(registerErrors); err != nil {
		return nil, fmt.Errorf("metrics: register: %w", err)
	}
	scope := func(sanitize tally.SanitizeOptions) tally.Scope {
		reporter := tallyprom.NewReporter(tallyprom.Options{
			Registerer:              reg,
			DefaultTimerType:        tallyprom.HistogramTimerType,
			DefaultHistogramBuckets: latencyBuckets,
			// The SDK may emit one name with different label sets, which Prometheus refuses:
			// count it and keep serving the others rather than crash the worker.
			OnRegisterError: func(error) { registerErrors.Inc() },
		})
		s, closer := tally.NewRootScope(tally.ScopeOptions{
			CachedReporter:  reporter,
			Separator:       tallyprom.DefaultSeparator,
			SanitizeOptions: &sanitize,
		}, o.SDKReportInterval)
		r.closers = append(r.closers, closer)
		return sdktally.NewPrometheusNamingScope(s)
	}
	// Herald's metrics keep their label values as they are (an endpoint "acme-prod" stays
	// acme-prod, as in herald_attempts_total); the SDK's are written its way ('-' as '_').
	keepValues := sdktally.PrometheusSanitizeOptions
	keepValues.ValueCharacters = tally.ValidCharacters{Ranges: []tally.SanitizeRange{{0, unicode.MaxRune}}}
	r.sdk = split{
		sdk:    sdktally.NewMetricsHandler(scope(sdktally.PrometheusSanitizeOptions)),
		herald: sdktally.NewMetricsHandler(scope(keepValues)),
	}
	return r, nil
}

// Handler serves the registry in the Prometheus text format (mount it on /metrics).
// On a nil Recorder it answers 404.
func (r *Recorder) Handler() http.Handler {
	if r == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(r.registry, promhttp.HandlerOpts{})
}

// Registry returns the Prometheus registry, to add collectors of one's own; nil on a nil
// Recorder.
func (r *Recorder) Registry() *prometheus.Registry {
	if r == nil {
		return nil
	}
	return r.registry
}

// SDKHandler returns the handler to put in client.Options.MetricsHandler, so the Temporal
// SDK's metrics (workflow and activity task latencies, poller counts, sticky cache, ...) and
// those the workflows record (dead letters, replays, endpoint gauges) land in the same
// registry. On a nil Recorder it returns client.MetricsNopHandler.
func (r *Recorder) SDKHandler() client.MetricsHandler {
	if r == nil {
		return client.MetricsNopHandler
	}
	return r.sdk
}

// Close flushes the SDK metrics into the registry one last time and stops copying them.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	var first error
	for _, c := range r.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Attempt records one HTTP attempt to endpoint: its outcome class (herald.Outcome as a
// string, e.g. "delivered" or "timeout") and how long it took.
func (r *Recorder) Attempt(endpoint, outcomeClass string, latency time.Duration) {
	if r == nil {
		return
	}
	r.attempts.WithLabelValues(endpoint, outcomeClass).Inc()
	r.latency.WithLabelValues(endpoint).Observe(latency.Seconds())
}

// RetryAfter records a Retry-After decision on a failed attempt to endpoint; action is
// policy.RetryAfterAction as a string (honoured, capped or ignored). "none" (no header)
// and "" record nothing, so every failed attempt's decision can be passed as is.
func (r *Recorder) RetryAfter(endpoint, action string) {
	if r == nil || action == "" || action == "none" {
		return
	}
	r.retryAfter.WithLabelValues(endpoint, action).Inc()
}

// heraldPrefix starts the names of Herald's own metrics.
const heraldPrefix = "herald_"

// split sends Herald's metrics (named herald_*) to one handler and the SDK's to another.
type split struct{ sdk, herald client.MetricsHandler }

func (s split) pick(name string) client.MetricsHandler {
	if strings.HasPrefix(name, heraldPrefix) {
		return s.herald
	}
	return s.sdk
}

// WithTags returns the handler with tags added to every metric.
func (s split) WithTags(tags map[string]string) client.MetricsHandler {
	return split{sdk: s.sdk.WithTags(tags), herald: s.herald.WithTags(tags)}
}

// Counter returns the counter name.
func (s split) Counter(name string) client.MetricsCounter { return s.pick(name).Counter(name) }

// Gauge returns the gauge name.
func (s split) Gauge(name string) client.MetricsGauge { return s.pick(name).Gauge(name) }

// Timer returns the timer name.
func (s split) Timer(name string) client.MetricsTimer { return s.pick(name).Timer(name) }
