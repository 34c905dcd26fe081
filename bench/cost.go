package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker/gate"
)

// CostResult is the history cost of a first-try delivery.
type CostResult struct {
	Deliveries int `json:"deliveries"`
	// Endpoints is how many endpoints the deliveries were spread over.
	Endpoints int `json:"endpoints"`
	// DeliveryEvents are the history events of each delivery workflow (mean, min, max).
	DeliveryEvents    float64 `json:"delivery_events"`
	DeliveryEventsMin int     `json:"delivery_events_min"`
	DeliveryEventsMax int     `json:"delivery_events_max"`
	// DeliveryBytes is the mean encoded size of a delivery's history (payloads encrypted).
	DeliveryBytes float64 `json:"delivery_bytes"`
	// EngineEvents and EngineBytes are the same for the engine-limit baseline workflow
	// (eager start, one local activity), for comparison.
	EngineEvents int `json:"engine_events"`
	EngineBytes  int `json:"engine_bytes"`
	// EndpointEvents is how many events the endpoint workflows gained during the run,
	// StatsEvents how many the stats shards gained; EndpointShare is both over the deliveries.
	EndpointEvents int     `json:"endpoint_events"`
	StatsEvents    int     `json:"stats_events"`
	EndpointShare  float64 `json:"endpoint_share"`
	// PerDelivery is DeliveryEvents + EndpointShare.
	PerDelivery float64 `json:"per_delivery"`
	// EndpointContinuedAsNew is set when an endpoint or stats workflow continued as new
	// during the run (its closed runs are counted from visibility).
	EndpointContinuedAsNew bool `json:"endpoint_continued_as_new,omitempty"`
	// EndpointEventTypes counts the endpoint workflow's new events by type.
	EndpointEventTypes map[string]int `json:"endpoint_event_types,omitempty"`
	// Fanout are the same figures for events sent to a tenant (starter.Publish) with 1 and
	// with 10 subscribed endpoints.
	Fanout []FanoutCost `json:"fanout,omitempty"`
}

// FanoutCost is the history cost of first-try deliveries of events sent to a tenant with
// Fanout subscribed endpoints: every workflow's share counted (the deliveries', the
// endpoints', the stats shards' and the tenant's subscription directory's).
type FanoutCost struct {
	Fanout int `json:"fanout"`
	// Events were sent, making Deliveries deliveries.
	Events     int `json:"events"`
	Deliveries int `json:"deliveries"`
	// DeliveryEvents is the mean of the delivery workflows' events.
	DeliveryEvents float64 `json:"delivery_events"`
	// EndpointShare is the endpoint and stats workflows' new events over the deliveries.
	EndpointShare float64 `json:"endpoint_share"`
	// DirectoryEvents are the events the subscription directory gained during the sends
	// (the fan-out's own cost: reading it adds none); PerEvent is those over the events.
	DirectoryEvents int     `json:"directory_events"`
	PerEvent        float64 `json:"fanout_events_per_event"`
	// PerDelivery is DeliveryEvents + EndpointShare.
	PerDelivery float64 `json:"per_delivery"`
}

func (e *env) cost(ctx context.Context) (*CostResult, error) {
	n, m := e.cfg.CostEvents, e.cfg.CostEndpoints
	eps := make([]string, m)
	for i := range eps {
		eps[i] = e.endpointID("cost")
		if m > 1 {
			eps[i] = e.endpointID(fmt.Sprintf("cost-%d", i))
		}
	}
	if err := e.putEndpoints(ctx, eps, noContent); err != nil {
		return nil, err
	}
	mc, err := e.measureCost(ctx, eps, nil, func(ctx context.Context) ([]string, error) {
		ids := newIDs(n)
		if _, err := e.sendEvents(ctx, ids, func(i int) string { return eps[i%m] }, e.cfg.Senders, 0); err != nil {
			return nil, err
		}
		wf := make([]string, n)
		for i, id := range ids {
			wf[i] = herald.DeliveryID(herald.DefaultTenant, id)
		}
		return wf, nil
	})
	if err != nil {
		return nil, err
	}
	res := mc.CostResult
	if res.EngineEvents, res.EngineBytes, err = e.engineHistory(ctx); err != nil {
		return nil, err
	}
	for _, f := range []int{1, 10} {
		fc, err := e.fanoutCost(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("fan-out %d: %w", f, err)
		}
		res.Fanout = append(res.Fanout, fc)
	}
	return res, nil
}

// fanoutCost measures first-try deliveries of events sent to a tenant of f endpoints: as
// many deliveries as the direct measure, CostEvents/f events.
func (e *env) fanoutCost(ctx context.Context, f int) (FanoutCost, error) {
	tenant := e.endpointID(fmt.Sprintf("cost-fan%d", f))
	eps := make([]string, f)
	for i := range eps {
		eps[i] = e.endpointID(fmt.Sprintf("cost-fan%d-%d", f, i))
	}
	if err := e.putSubscribed(ctx, tenant, eps, noContent); err != nil {
		return FanoutCost{}, err
	}
	events := max(1, e.cfg.CostEvents/f)
	// A send finds its endpoints in the visibility store: no workflow but the deliveries'
	// and the endpoints' has a share to count.
	r, err := e.measureCost(ctx, eps, nil, func(ctx context.Context) ([]string, error) {
		ids := newIDs(events)
		if _, err := e.publishEvents(ctx, tenant, ids, e.cfg.Senders, 0); err != nil {
			return nil, err
		}
		var wf []string
		for _, id := range ids {
			for _, ep := range eps {
				wf = append(wf, herald.FanoutDeliveryID(tenant, ep, id))
			}
		}
		return wf, nil
	})
	if err != nil {
		return FanoutCost{}, err
	}
	fc := FanoutCost{Fanout: f, Events: events, Deliveries: r.Deliveries, DeliveryEvents: r.DeliveryEvents,
		EndpointShare: r.EndpointShare, DirectoryEvents: r.extra}
	fc.PerEvent = float64(fc.DirectoryEvents) / float64(events)
	fc.PerDelivery = r.PerDelivery + float64(fc.DirectoryEvents)/float64(r.Deliveries)
	return fc, nil
}

// measuredCost is a CostResult and the events the extra workflows gained.
type measuredCost struct {
	*CostResult
	extra int
}

// measureCost sends first-try deliveries to eps with send, which returns their workflow
// ids, and measures their history cost: the deliveries' own, and what the endpoint and
// stats workflows (and the extra ones) gained meanwhile.
func (e *env) measureCost(ctx context.Context, eps, extra []string, send func(ctx context.Context) ([]string, error)) (measuredCost, error) {
	m := len(eps)
	// Every workflow a delivery may cost events to: the endpoints' and the stats shards'.
	side := make([]string, 0, m+herald.StatsShards+len(extra))
	for _, ep := range eps {
		side = append(side, herald.EndpointWorkflowID(ep))
	}
	for i := range herald.StatsShards {
		side = append(side, fmt.Sprintf("endpoint-stats:%d", i))
	}
	side = append(side, extra...)
	// Let earlier scenarios' counts settle first.
	time.Sleep(gate.StatsInterval + time.Second)
	before, err := e.footprint(ctx, side, nil)
	if err != nil {
		return measuredCost{}, err
	}
	wfs, err := send(ctx)
	if err != nil {
		return measuredCost{}, err
	}
	n := len(wfs)
	res := &CostResult{Deliveries: n, Endpoints: m, DeliveryEventsMin: -1}
	total, bytes := 0, 0
	for _, wf := range wfs {
		run := e.client.GetWorkflow(ctx, wf, "")
		var st herald.Status
		wctx, cancel := context.WithTimeout(ctx, arrivalTimeout(n))
		err := run.Get(wctx, &st)
		cancel()
		if err != nil {
			return measuredCost{}, fmt.Errorf("delivery %s: %w", wf, err)
		}
		if len(st.Attempts) != 1 {
			return measuredCost{}, fmt.Errorf("delivery %s took %d attempts; the cost scenario needs first-try deliveries", wf, len(st.Attempts))
		}
		k, size, err := e.history(ctx, wf)
		if err != nil {
			return measuredCost{}, err
		}
		total += k
		bytes += size
		res.DeliveryEventsMin = pick(res.DeliveryEventsMin < 0 || k < res.DeliveryEventsMin, k, res.DeliveryEventsMin)
		res.DeliveryEventsMax = max(res.DeliveryEventsMax, k)
	}
	// Let the workers' last outcome reports and counts reach the endpoint and stats workflows.
	time.Sleep(gate.StatsInterval + 2*time.Second)
	after, err := e.footprint(ctx, side, before)
	if err != nil {
		return measuredCost{}, err
	}
	extraEvents := 0
	for i, id := range side {
		d := after[id].events - before[id].events
		switch {
		case i < m:
			res.EndpointEvents += d
		case i < m+herald.StatsShards:
			res.StatsEvents += d
		default:
			extraEvents += d
		}
		if after[id].run != before[id].run {
			res.EndpointContinuedAsNew = true
		}
	}
	if m == 1 && !res.EndpointContinuedAsNew {
		res.EndpointEventTypes = map[string]int{}
		id := herald.EndpointWorkflowID(eps[0])
		it := e.client.GetWorkflowHistory(ctx, id, after[id].run, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return measuredCost{}, fmt.Errorf("endpoint history: %w", err)
			}
			if ev.GetEventId() > int64(before[id].current) {
				res.EndpointEventTypes[strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")]++
			}
		}
	}
	res.DeliveryEvents = float64(total) / float64(n)
	res.DeliveryBytes = float64(bytes) / float64(n)
	res.EndpointShare = float64(res.EndpointEvents+res.StatsEvents) / float64(n)
	res.PerDelivery = res.DeliveryEvents + res.EndpointShare
	return measuredCost{res, extraEvents}, nil
}

// runs is what a workflow id has cost so far: events in all its runs, and its current run.
type runs struct {
	events  int
	current int // events of the current run
	run     string
}

// footprint counts the history events of each workflow id in every run it has had. A run
// that closed is counted from visibility, but only for ids whose current run changed since
// before (nil: count every closed run).
func (e *env) footprint(ctx context.Context, ids []string, before map[string]runs) (map[string]runs, error) {
	out := make(map[string]runs, len(ids))
	var mu sync.Mutex
	_, _, err := drive(ctx, len(ids), 16, 0, func(ctx context.Context, i int) error {
		r, err := e.runsOf(ctx, ids[i], before)
		mu.Lock()
		defer mu.Unlock()
		out[ids[i]] = r
		return err
	})
	if err == nil {
		err = ctx.Err() // drive skips the ids it has not reached when ctx ends
	}
	return out, err
}

func (e *env) runsOf(ctx context.Context, id string, before map[string]runs) (runs, error) {
	var r runs
	d, err := e.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return r, nil
		}
		return r, fmt.Errorf("describe %s: %w", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	r.run, r.current = info.GetExecution().GetRunId(), int(info.GetHistoryLength())
	r.events = r.current
	if b, ok := before[id]; ok && b.run == r.run {
		return runs{events: b.events - b.current + r.current, current: r.current, run: r.run}, nil
	}
	for ex, err := range herald.Executions(ctx, e.client, herald.WorkflowID(id).Closed().String(), 1000) {
		if err != nil {
			return r, fmt.Errorf("list runs of %s: %w", id, err)
		}
		if ex.GetExecution().GetRunId() != r.run {
			r.events += int(ex.GetHistoryLength())
		}
	}
	return r, nil
}

func pick(c bool, a, b int) int {
	if c {
		return a
	}
	return b
}

// engineHistory runs one engine-limit baseline workflow and measures its history.
func (e *env) engineHistory(ctx context.Context) (int, int, error) {
	f := &effects{at: map[string]time.Time{}}
	w, err := startBaseline(e.client, engineQueue, engineFlow, engine, f)
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop()
	id := starter.NewEventID()
	run, err := e.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "bench:" + id, TaskQueue: engineQueue, EnableEagerStart: true},
		engineFlow, baselineInput{ID: id, Data: benchData})
	if err == nil {
		err = run.Get(ctx, nil)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("engine baseline: %w", err)
	}
	return e.history(ctx, "bench:"+id)
}

// history reads a workflow's history back and returns its events and their encoded size.
func (e *env) history(ctx context.Context, workflowID string) (events, bytes int, err error) {
	it := e.client.GetWorkflowHistory(ctx, workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return 0, 0, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		events++
		bytes += proto.Size(ev)
	}
	return events, bytes, nil
}
