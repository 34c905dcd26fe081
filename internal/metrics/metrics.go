// Package metrics exposes Herald's Prometheus metrics: the Temporal SDK's own metrics
// (through a client.MetricsHandler for client.Options) and Herald's delivery metrics,
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
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"

	"github.com/heraldhq/herald/policy"
)

// Circuit states as the herald_endpoint_circuit gauge labels them.
var circuitStates = []string{string(policy.CircuitClosed), string(policy.CircuitOpen), string(policy.CircuitHalfOpen)}

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
	closer   io.Closer

	attempts    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	retryAfter  *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	replays     *prometheus.CounterVec
	circuit     *prometheus.GaugeVec
	inFlight    *prometheus.GaugeVec
	capacity    *prometheus.GaugeVec
	leases      *prometheus.GaugeVec
	queue       *prometheus.GaugeVec
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
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_dead_letters_total",
			Help: "Deliveries that exhausted their ladder and parked as dead letters, by endpoint.",
		}, []string{"endpoint"}),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_replays_total",
			Help: "Dead letters replayed, by endpoint.",
		}, []string{"endpoint"}),
		circuit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_endpoint_circuit",
			Help: "Circuit breaker state per endpoint: 1 for the current state (closed, open, half_open), 0 for the others.",
		}, []string{"endpoint", "state"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_endpoint_in_flight",
			Help: "Permits out per endpoint: attempts running or leased to workers.",
		}, []string{"endpoint"}),
		capacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_endpoint_cap",
			Help: "Current concurrency cap per endpoint (lower than the configured one while the endpoint is slow).",
		}, []string{"endpoint"}),
		leases: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_endpoint_leases",
			Help: "Leases of permits held by workers and waiting deliveries, per endpoint.",
		}, []string{"endpoint"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_endpoint_queue",
			Help: "Deliveries waiting for a permit or for the circuit to close, per endpoint.",
		}, []string{"endpoint"}),
	}
	cs := []prometheus.Collector{r.attempts, r.latency, r.retryAfter, r.deadLetters, r.replays,
		r.circuit, r.inFlight, r.capacity, r.leases, r.queue}
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
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:              reg,
		DefaultTimerType:        tallyprom.HistogramTimerType,
		DefaultHistogramBuckets: latencyBuckets,
		// The SDK may emit one name with different label sets, which Prometheus refuses:
		// count it and keep serving the others rather than crash the worker.
		OnRegisterError: func(error) { registerErrors.Inc() },
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, o.SDKReportInterval)
	r.sdk = sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope))
	r.closer = closer
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
// SDK's metrics (workflow and activity task latencies, poller counts, sticky cache, ...) land
// in the same registry. On a nil Recorder it returns client.MetricsNopHandler.
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
	return r.closer.Close()
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

// DeadLetter records a delivery to endpoint that parked as a dead letter.
func (r *Recorder) DeadLetter(endpoint string) {
	if r == nil {
		return
	}
	r.deadLetters.WithLabelValues(endpoint).Inc()
}

// Replay records a replayed dead letter of endpoint.
func (r *Recorder) Replay(endpoint string) {
	if r == nil {
		return
	}
	r.replays.WithLabelValues(endpoint).Inc()
}

// Endpoint sets endpoint's gauges: its circuit state (closed, open or half_open; "" counts
// as closed), the permits in flight, the current cap, the leases out and the queue length.
func (r *Recorder) Endpoint(endpoint, circuit string, inFlight, cap, leases, queue int) {
	if r == nil {
		return
	}
	if circuit == "" {
		circuit = string(policy.CircuitClosed)
	}
	for _, s := range circuitStates {
		v := 0.0
		if s == circuit {
			v = 1
		}
		r.circuit.WithLabelValues(endpoint, s).Set(v)
	}
	r.inFlight.WithLabelValues(endpoint).Set(float64(inFlight))
	r.capacity.WithLabelValues(endpoint).Set(float64(cap))
	r.leases.WithLabelValues(endpoint).Set(float64(leases))
	r.queue.WithLabelValues(endpoint).Set(float64(queue))
}

// ForgetEndpoint drops endpoint's gauges (when the endpoint is removed, or when this worker
// stops hosting its workflow). Its counters stay, as Prometheus counters should.
func (r *Recorder) ForgetEndpoint(endpoint string) {
	if r == nil {
		return
	}
	for _, g := range []*prometheus.GaugeVec{r.circuit, r.inFlight, r.capacity, r.leases, r.queue} {
		g.DeletePartialMatch(prometheus.Labels{"endpoint": endpoint})
	}
}
