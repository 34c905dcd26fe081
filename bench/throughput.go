package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
)

// Phase is one load run: how many were sent and arrived, the rate and the latency from
// just before the send to the first request (or, for the baselines, the activity's start).
type Phase struct {
	Events    int     `json:"events"`
	Arrived   int     `json:"arrived"`
	Seconds   Seconds `json:"seconds"`
	PerSecond float64 `json:"per_second"`
	Latency   Latency `json:"latency"`
	// CPUms is the process's CPU time (server, worker and receivers) per workflow of the
	// phase, until its workflows are all closed in the visibility store (full-load phases
	// only): a figure the rest of the machine's load hardly moves.
	CPUms float64 `json:"cpu_ms_per_workflow,omitempty"`
}

// ThroughputResult compares Herald with a naive workflow and with the engine's limit.
type ThroughputResult struct {
	Events    int `json:"events"`
	Endpoints int `json:"endpoints"`
	Senders   int `json:"senders"`
	// Fanout is how many subscribed endpoints each event went to (0: sent to one endpoint
	// each); then Events are deliveries, made by FanoutEvents events per phase.
	Fanout       int `json:"fanout,omitempty"`
	FanoutEvents int `json:"fanout_events,omitempty"`
	// Herald at full load, the baselines at full load, and Herald at a steady rate.
	Herald Phase   `json:"herald"`
	Naive  Phase   `json:"naive"`
	Engine Phase   `json:"engine"`
	Steady Phase   `json:"steady"`
	Rate   float64 `json:"steady_rate"`
	// VsNaive and VsEngine are Herald's full-load rate over each baseline's.
	VsNaive  float64 `json:"vs_naive"`
	VsEngine float64 `json:"vs_engine"`
	// CPUVsEngine is the engine's CPU per workflow over Herald's per delivery: the ratio a
	// run bound by CPU alone would show.
	CPUVsEngine float64 `json:"cpu_vs_engine,omitempty"`
}

func phaseOf(sentAt, arrived []time.Time) Phase {
	p := Phase{Events: len(sentAt), Arrived: countSet(arrived), Latency: summarize(between(sentAt, arrived))}
	first, _ := span(sentAt)
	_, last := span(arrived)
	if !first.IsZero() && last.After(first) {
		d := last.Sub(first)
		p.Seconds = secs(d)
		p.PerSecond = float64(p.Arrived) / d.Seconds()
	}
	return p
}

// arrivalTimeout is how long a phase of n events may take before it is given up.
func arrivalTimeout(n int) time.Duration { return time.Minute + time.Duration(n)*50*time.Millisecond }

func (e *env) throughput(ctx context.Context) (*ThroughputResult, error) {
	cfg := e.cfg
	res := &ThroughputResult{Events: cfg.Events, Endpoints: cfg.Endpoints, Senders: cfg.Senders, Rate: cfg.Rate}
	fanout := cfg.Fanout > 1
	n := cfg.Endpoints
	if fanout {
		n = cfg.Fanout
		res.Endpoints, res.Fanout, res.FanoutEvents = cfg.Fanout, cfg.Fanout, (cfg.Events+cfg.Fanout-1)/cfg.Fanout
	}
	eps := make([]string, n)
	for i := range eps {
		eps[i] = e.endpointID(fmt.Sprintf("tp-%d", i))
	}
	tenant := e.endpointID("tp-tenant")
	registered := herald.Workflows(herald.EndpointWorkflow).Running().Has(herald.AttrCircuit).String()
	before := max(e.countVisible(ctx, registered), 0)
	var err error
	if fanout {
		err = e.putSubscribed(ctx, tenant, eps, noContent)
	} else {
		err = e.putEndpoints(ctx, eps, noContent)
	}
	if err != nil {
		return nil, err
	}
	// The registrations' own work (their visibility records above all) is done before the
	// deliveries are timed, so that the first phase does not pay for it.
	began := time.Now()
	settled := e.awaitVisible(ctx, registered, before+int64(len(eps)), time.Minute+time.Duration(len(eps))*10*time.Millisecond)
	e.progress("throughput: %d endpoints registered; visible %.1fs later: %v", len(eps), time.Since(began).Seconds(), settled)
	endpoint := func(i int) string { return eps[i%len(eps)] }
	closed := herald.Workflows(herald.DeliveryWorkflow).Closed().String()
	herald := func(rate float64) (Phase, error) {
		base := max(e.countVisible(ctx, closed), 0)
		cpu := startCPU()
		var sentAt, arrived []time.Time // per delivery
		if fanout {
			ids := newIDs(res.FanoutEvents)
			at, err := e.publishEvents(ctx, tenant, ids, cfg.Senders, rate/float64(cfg.Fanout))
			if err != nil {
				return Phase{}, err
			}
			var ds []delivery
			ds, sentAt = fannedOut(ids, at, eps)
			if !waitUntil(ctx, arrivalTimeout(len(ds)), func() bool { return e.rcv.allSeen(ids, cfg.Fanout) }) {
				e.progress("throughput: not every delivery arrived in time")
			}
			arrived = e.rcv.firstSeenAt(ds)
		} else {
			ids := newIDs(cfg.Events)
			var err error
			if sentAt, err = e.sendEvents(ctx, ids, endpoint, cfg.Senders, rate); err != nil {
				return Phase{}, err
			}
			if !waitUntil(ctx, arrivalTimeout(len(ids)), func() bool { return e.rcv.allSeen(ids, 1) }) {
				e.progress("throughput: not every event arrived in time")
			}
			arrived = e.rcv.firstSeen(ids)
		}
		p := phaseOf(sentAt, arrived)
		if rate == 0 {
			var settled bool
			if p.CPUms, settled = cpu.perWorkflow(ctx, e, closed, base+int64(len(sentAt)), len(sentAt)); !settled {
				e.progress("throughput: not every delivery was closed in the visibility store in time; its CPU figure is low")
			}
		}
		return p, nil
	}

	// Warm up: connections, caches, the endpoints' first reports.
	warm := newIDs(min(100, cfg.Events))
	warmBase := max(e.countVisible(ctx, closed), 0)
	if fanout {
		warm = warm[:max(1, len(warm)/cfg.Fanout)]
		if _, err := e.publishEvents(ctx, tenant, warm, cfg.Senders, 0); err != nil {
			return nil, err
		}
		waitUntil(ctx, time.Minute, func() bool { return e.rcv.allSeen(warm, cfg.Fanout) })
		e.awaitVisible(ctx, closed, warmBase+int64(len(warm)*cfg.Fanout), time.Minute)
		e.progress("throughput: Herald, %d events to tenant %s fanned out to %d endpoints each (%d deliveries), %d senders", res.FanoutEvents, tenant, cfg.Fanout, res.FanoutEvents*cfg.Fanout, cfg.Senders)
	} else {
		if _, err := e.sendEvents(ctx, warm, endpoint, cfg.Senders, 0); err != nil {
			return nil, err
		}
		waitUntil(ctx, time.Minute, func() bool { return e.rcv.allSeen(warm, 1) })
		e.awaitVisible(ctx, closed, warmBase+int64(len(warm)), time.Minute)
		e.progress("throughput: Herald, %d events over %d endpoints, %d senders", cfg.Events, cfg.Endpoints, cfg.Senders)
	}
	if res.Herald, err = herald(0); err != nil {
		return nil, err
	}
	if !cfg.SkipNaive {
		e.progress("throughput: naive workflow (one regular activity), %d events", cfg.Events)
		if res.Naive, err = e.baseline(ctx, naiveQueue, naiveWorkflow, naive, false, cfg.Events, cfg.Senders); err != nil {
			return nil, err
		}
	}
	e.progress("throughput: engine limit (eager start, one local activity), %d events", cfg.Events)
	if res.Engine, err = e.baseline(ctx, engineQueue, engineFlow, engine, true, cfg.Events, cfg.Senders); err != nil {
		return nil, err
	}
	e.progress("throughput: Herald at a steady %.0f/s, %d events", cfg.Rate, cfg.Events)
	if res.Steady, err = herald(cfg.Rate); err != nil {
		return nil, err
	}
	res.VsNaive = ratio(res.Herald.PerSecond, res.Naive.PerSecond)
	res.VsEngine = ratio(res.Herald.PerSecond, res.Engine.PerSecond)
	res.CPUVsEngine = ratio(res.Engine.CPUms, res.Herald.CPUms)
	return res, nil
}

// baseline runs n workflows of a baseline on its own task queue, started by senders
// concurrent senders at once (after a warm-up of up to 100).
func (e *env) baseline(ctx context.Context, queue, name string, wf any, eager bool, n, senders int) (Phase, error) {
	f := &effects{at: map[string]time.Time{}}
	w, err := startBaseline(e.client, queue, name, wf, f)
	if err != nil {
		return Phase{}, fmt.Errorf("start %s worker: %w", name, err)
	}
	defer w.Stop()
	data := benchData
	start := func(ctx context.Context, id string) error {
		_, err := e.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: "bench:" + id, TaskQueue: queue, EnableEagerStart: eager,
		}, name, baselineInput{ID: id, Data: data})
		return err
	}
	closed := herald.Workflows(name).Closed().String()
	warm := newIDs(min(100, n))
	warmBase := max(e.countVisible(ctx, closed), 0)
	drive(ctx, len(warm), senders, 0, func(ctx context.Context, i int) error { return start(ctx, warm[i]) })
	waitUntil(ctx, time.Minute, func() bool { return countSet(f.seen(warm)) == len(warm) })
	e.awaitVisible(ctx, closed, warmBase+int64(len(warm)), time.Minute)

	warmRan := f.count() // a poll of the phase's count walks no ids
	ids := newIDs(n)
	base := max(e.countVisible(ctx, closed), 0)
	cpu := startCPU()
	sentAt, failed, ferr := drive(ctx, len(ids), senders, 0, func(ctx context.Context, i int) error { return start(ctx, ids[i]) })
	if failed > 0 {
		return Phase{}, fmt.Errorf("%s: %d starts failed, first: %w", name, failed, ferr)
	}
	if !waitUntil(ctx, arrivalTimeout(len(ids)), func() bool { return f.count() >= warmRan+len(ids) }) {
		e.progress("throughput: not every %s workflow ran in time", name)
	}
	p := phaseOf(sentAt, f.seen(ids))
	var settled bool
	if p.CPUms, settled = cpu.perWorkflow(ctx, e, closed, base+int64(len(ids)), len(ids)); !settled {
		e.progress("throughput: not every %s workflow was closed in the visibility store in time; its CPU figure is low", name)
	}
	return p, nil
}

// noContent answers 204 at once.
func noContent(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusNoContent) }
