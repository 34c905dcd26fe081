package workflows

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald/policy"
)

// Names of the metrics the workflows record through the SDK's metrics handler
// (workflow.GetMetricsHandler), which records nothing while a history replays. The worker's
// client.MetricsHandler decides where they go. Each carries an endpoint label, besides the
// SDK's namespace, task_queue and workflow_type.
const (
	// MetricDeadLetters counts deliveries that parked as dead letters.
	MetricDeadLetters = "herald_dead_letters_total"
	// MetricReplays counts dead letters replayed.
	MetricReplays = "herald_replays_total"
	// MetricEndpointCircuit is 1 for the endpoint's circuit state (label state) and 0 for the others.
	MetricEndpointCircuit = "herald_endpoint_circuit"
	// MetricEndpointInFlight is the endpoint's permits out: attempts running or leased to workers.
	MetricEndpointInFlight = "herald_endpoint_in_flight"
	// MetricEndpointCap is the endpoint's current concurrency cap.
	MetricEndpointCap = "herald_endpoint_cap"
	// MetricEndpointLeases is the number of leases of permits the endpoint has out.
	MetricEndpointLeases = "herald_endpoint_leases"
	// MetricEndpointQueue is the number of deliveries waiting in the endpoint's queue.
	MetricEndpointQueue = "herald_endpoint_queue"
)

// endpointMetrics returns the workflow's metrics handler with the endpoint label set.
func endpointMetrics(ctx workflow.Context, endpoint string) client.MetricsHandler {
	return workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"endpoint": endpoint})
}

// circuitGaugeStates are the values of MetricEndpointCircuit's state label.
var circuitGaugeStates = []policy.CircuitState{policy.CircuitClosed, policy.CircuitOpen, policy.CircuitHalfOpen}

// endpointGauges are one endpoint run's gauges.
type endpointGauges struct {
	circuit                      []client.MetricsGauge // by circuitGaugeStates
	inFlight, cap, leases, queue client.MetricsGauge
}

func newEndpointGauges(ctx workflow.Context, endpoint string) *endpointGauges {
	h := endpointMetrics(ctx, endpoint)
	g := &endpointGauges{inFlight: h.Gauge(MetricEndpointInFlight), cap: h.Gauge(MetricEndpointCap),
		leases: h.Gauge(MetricEndpointLeases), queue: h.Gauge(MetricEndpointQueue)}
	for _, s := range circuitGaugeStates {
		g.circuit = append(g.circuit, h.WithTags(map[string]string{"state": string(s)}).Gauge(MetricEndpointCircuit))
	}
	return g
}

// set shows v in the gauges.
func (g *endpointGauges) set(v policy.LimiterView) {
	for i, s := range circuitGaugeStates {
		on := 0.0
		if s == v.Circuit.State {
			on = 1
		}
		g.circuit[i].Update(on)
	}
	g.inFlight.Update(float64(v.InFlight))
	g.cap.Update(float64(v.Cap))
	g.leases.Update(float64(len(v.Leases)))
	g.queue.Update(float64(v.Queue))
}
