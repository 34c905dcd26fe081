// Package worker assembles a Herald worker: it registers the workflows and activities on a
// task queue and runs the gate that leases permits from the endpoint workflows.
package worker

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/tracing"
	"github.com/heraldhq/herald/worker/gate"
	"github.com/heraldhq/herald/workflows"
)

// Options configure a worker. Zero values take the defaults.
type Options struct {
	// TaskQueue to poll; default herald.DefaultTaskQueue.
	TaskQueue string
	// Defaults is the delivery policy endpoints use unless they override it.
	Defaults herald.Settings
	// Net is the SSRF policy: which addresses attempts may dial.
	Net netguard.Policy
	// RenewInterval is how often the gate renews its leases of permits, carrying the
	// outcomes seen since; default 1s.
	RenewInterval time.Duration
	// Logger receives the worker's logs; default slog.Default().
	Logger *slog.Logger
	// Metrics, if set, receives the attempts' metrics. The workflows' metrics (dead letters,
	// replays, endpoint gauges) go to the client's MetricsHandler: give the client
	// Metrics.SDKHandler() to have them in the same registry.
	Metrics *metrics.Recorder
	// DeliverySlots, if set, bounds the delivery worker's concurrent workflow tasks and
	// local activities (attempts); default the SDK's (1,000 each). The endpoint workflows
	// run on a worker of their own with its own slots, whatever this is.
	DeliverySlots int
	// Tracing, if set, gives each attempt a span (tracing.AttemptSpan) with its HTTP
	// client span inside, and sends the receiver a traceparent header. The Temporal spans
	// come from the client's interceptor (tracing.Tracing.Interceptor in
	// client.Options.Interceptors), which the worker takes from its client.
	Tracing *tracing.Tracing
	// RootCAs, if set, are the certificate authorities receivers' (and OAuth2 token
	// servers') certificates must chain to; nil means the system's.
	RootCAs *x509.CertPool
	// StatsCapacity, if set, is how many endpoints a stats shard that this worker's gate
	// starts holds before it spills (herald.StatsInput.Capacity); by default a shard
	// counts bytes only (StatsBudget). StatsBudget, if set, is how many bytes its entries
	// take before it spills (herald.StatsInput.Budget); default herald.StatsBudget. A
	// shard keeps the capacity and budget it started with. For tests, which scale them
	// down to cross spills with few endpoints.
	StatsCapacity, StatsBudget int
	// StatsInterval is how often the gate sends the attempt counts it added up to the
	// stats shards; default gate.StatsInterval. Each send to a shard costs that shard a
	// signal and a workflow task, whatever the rate: a longer interval writes less, and
	// the counts shown lag more (a worker killed loses up to one interval of them).
	StatsInterval time.Duration
	// Recovery, if set, is the ladder on which endpoints disabled for failing are probed;
	// default policy.DefaultRecoveryLadder (1h, 3h, 6h, 12h, then every 24h for 30 days).
	// An endpoint keeps the ladder it started probing with. For tests, which scale it down.
	Recovery policy.RecoveryLadder
	// StickyTimeout is how long a delivery's next workflow task waits for the worker that
	// holds the delivery in its cache before any worker may take it (the SDK's
	// StickyScheduleToStartTimeout); default DefaultStickyTimeout.
	StickyTimeout time.Duration
}

// DefaultStickyTimeout is how long a delivery's next workflow task waits for the worker
// that holds the delivery in its cache, when Options.StickyTimeout is not set. The SDK's
// 5 s was too short under bursts of returning deliveries: at a rate limit of 100 with 3,000
// events sent at once (herald bench --scenario ratelimit), about one workflow task per late
// delivery waited longer than that to be dispatched (the machine's CPU not saturated),
// timed out, and was dispatched anew to the shared queue, seconds later still, past the
// second the delivery was booked for; 30 s took the rate from 0.57–0.68× the limit to
// 0.68–0.80× (alternating runs, quiet and with both cores busy). A worker that dies stops polling, and the server then sends its deliveries'
// tasks to the shared queue at once (after 10 s without a poll); only the tasks queued to
// it in those 10 s wait out the timeout. A worker that stops cleanly hands them over.
const DefaultStickyTimeout = 30 * time.Second

func (o *Options) setDefaults() {
	if o.TaskQueue == "" {
		o.TaskQueue = herald.DefaultTaskQueue
	}
	if o.Defaults.Ladder.Attempts == 0 {
		o.Defaults = herald.DefaultSettings()
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StickyTimeout <= 0 {
		o.StickyTimeout = DefaultStickyTimeout
	}
}

// Worker is a Herald worker bound to one Temporal client: a worker for the deliveries on
// the task queue, one for the endpoint workflows on their own queue
// (herald.EndpointTaskQueue), and the gate between them.
type Worker struct {
	w      sdkworker.Worker
	ew     sdkworker.Worker
	gate   *gate.Gate
	cancel context.CancelFunc
	done   chan struct{}
}

// sdkLocalActivitySlots is the SDK's default number of concurrent local activities, the
// delivery worker's attempts when DeliverySlots is not set.
const sdkLocalActivitySlots = 1000

// endpointPollers is how many pollers a worker runs on the endpoints' task queue.
const endpointPollers = 8

// New registers Herald's workflows and activities on a new worker for c. It validates the
// defaults and returns a clear error for bad ones.
func New(c client.Client, o Options) (*Worker, error) {
	o.setDefaults()
	if err := o.Defaults.Validate(); err != nil {
		return nil, err
	}
	if r := o.Recovery; len(r.Steps) > 0 || r.Every != 0 || r.For != 0 {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("worker recovery ladder: %w", err)
		}
	}
	wo := sdkworker.Options{StickyScheduleToStartTimeout: o.StickyTimeout}
	if o.DeliverySlots > 0 {
		wo.MaxConcurrentWorkflowTaskExecutionSize = o.DeliverySlots
		wo.MaxConcurrentLocalActivityExecutionSize = o.DeliverySlots
		wo.MaxConcurrentActivityExecutionSize = o.DeliverySlots
	}
	w := sdkworker.New(c, o.TaskQueue, wo)
	// Eight pollers, not the SDK's two: registering endpoints in bulk runs one workflow
	// task per endpoint, and two pollers' round trips held it to a third of the rate
	// (herald bench --scenario scale, docs/sizing.md).
	ew := sdkworker.New(c, herald.EndpointTaskQueue(o.TaskQueue), sdkworker.Options{MaxConcurrentWorkflowTaskPollers: endpointPollers})
	hopts := activities.HTTPOptions{RootCAs: o.RootCAs}
	if o.Tracing.Enabled() {
		hopts.Wrap = o.Tracing.Transport
	}
	registerEndpoints(ew, o.Net, o.Recovery)
	ew.RegisterActivity(&activities.Prober{Destination: activities.NewHTTP(o.Net, hopts), Defaults: o.Defaults})
	defaults := o.Defaults
	g := gate.New(gate.Temporal(c, herald.EndpointTaskQueue(o.TaskQueue), herald.StatsInput{Capacity: o.StatsCapacity, Budget: o.StatsBudget}), o.RenewInterval, func(ep herald.Endpoint) time.Duration {
		return time.Duration(defaults.Apply(ep.Overrides).Timeout)
	}, o.Logger)
	slots := o.DeliverySlots
	if slots <= 0 {
		slots = sdkLocalActivitySlots
	}
	g.BoundHolding(slots)
	g.FlushCountsEvery(o.StatsInterval)
	Register(w)
	w.RegisterActivity(&activities.Activities{
		Gate:        g,
		Destination: activities.NewHTTP(o.Net, hopts),
		Defaults:    o.Defaults,
		Metrics:     o.Metrics,
		Tracer:      o.Tracing.Tracer(),
	})
	op := &activities.Operator{Client: c}
	w.RegisterActivity(op)
	ew.RegisterActivity(op) // the endpoints' nudges (NudgeWaiting) and passes (WakeWaiters)
	ops := &activities.Ops{Client: c, TaskQueue: o.TaskQueue}
	w.RegisterActivity(ops)
	ew.RegisterActivity(ops)
	return &Worker{w: w, ew: ew, gate: g}, nil
}

// OfferAdmission hands the worker's gate a read of an endpoint's admission view that the
// process made (give it to starter.Options.OnEndpointRead when an API runs in the worker's
// process): the first attempt to that endpoint then reads it no second time.
func (w *Worker) OfferAdmission(id, run string, v herald.AdmissionView, asked time.Time) {
	w.gate.Offer(id, run, v, asked)
}

// Identity is the Temporal client identity of a Herald process, which the Web UI shows for
// each poller of a task queue: base (the SDK's usual "pid@host" when empty), then
// "herald/" and the release (herald.Version), then the payload keys it holds
// (codec.Identity), which producers read to check that the workers can decrypt what they
// send. Give it to client.Options.Identity; the workers poll with the client's identity.
func Identity(base string, keys *codec.Keyring) string {
	if base == "" {
		host, _ := os.Hostname()
		base = fmt.Sprintf("%d@%s", os.Getpid(), host)
	}
	return codec.Identity(base+" herald/"+herald.Version, keys)
}

// Register registers the workflows of Herald's task queue on r (a worker or a replayer):
// the delivery, the bulk replay, and the record of an event no endpoint subscribed to
// (workflows.NoDestination). The workflows record their metrics through the client's
// MetricsHandler.
func Register(r interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
}) {
	dw := &workflows.DeliveryWorkflow{}
	r.RegisterWorkflowWithOptions(dw.Run, workflow.RegisterOptions{Name: herald.DeliveryWorkflow})
	r.RegisterWorkflowWithOptions(workflows.BulkReplay, workflow.RegisterOptions{Name: herald.BulkReplayWorkflow})
	r.RegisterWorkflowWithOptions(workflows.NoDestination, workflow.RegisterOptions{Name: herald.NoDestinationWorkflow})
	r.RegisterWorkflowWithOptions(workflows.FanoutEvent, workflow.RegisterOptions{Name: herald.FanoutEventWorkflow})
}

// RegisterEndpoints registers the endpoint workflow, the stats shards, the catalog of
// event types and the tenants' subscription directories on r, the worker of the endpoints'
// own task queue.
func RegisterEndpoints(r interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
}, net netguard.Policy) {
	registerEndpoints(r, net, policy.RecoveryLadder{})
}

// registerEndpoints is RegisterEndpoints with the recovery ladder of endpoints disabled
// for failing (zero: the default).
func registerEndpoints(r interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
}, net netguard.Policy, recovery policy.RecoveryLadder) {
	ew := &workflows.EndpointWorkflow{Net: net, Recovery: recovery}
	r.RegisterWorkflowWithOptions(ew.Run, workflow.RegisterOptions{Name: herald.EndpointWorkflow})
	r.RegisterWorkflowWithOptions(workflows.StatsWorkflow, workflow.RegisterOptions{Name: herald.StatsWorkflow})
	r.RegisterWorkflowWithOptions(workflows.EventTypesWorkflow, workflow.RegisterOptions{Name: herald.EventTypesWorkflow})
	r.RegisterWorkflowWithOptions(workflows.SequencerWorkflow, workflow.RegisterOptions{Name: herald.SequencerWorkflow})
}

// HoldingPeak is the most delivery attempts that waited inside their local activities at
// once at this worker's gate (for room under an endpoint's lease, or for the second a
// rate-limited attempt was admitted to): at most policy.MaxHoldingAll of its slots.
func (w *Worker) HoldingPeak() int64 { return w.gate.HoldingPeak() }

// Start starts polling and the gate's lease renewals; it returns once the worker is running.
func (w *Worker) Start() error {
	if err := w.ew.Start(); err != nil {
		return err
	}
	if err := w.w.Start(); err != nil {
		w.ew.Stop()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		w.gate.Run(ctx)
	}()
	return nil
}

// Stop stops polling, waits for running attempts, and gives the leased permits back.
func (w *Worker) Stop() {
	w.w.Stop()
	if w.cancel != nil {
		w.cancel()
		<-w.done
		w.cancel = nil
	}
	w.ew.Stop()
}
