package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// Sizes of the scale scenario that are not settings.
const (
	// scaleMatching endpoints of each tenant subscribe to a type of the run no other
	// endpoint of the run has (scale.rare.TAG): the fan-out send's matches.
	scaleMatching = 10
	// scaleSmall is the endpoints of the small tenant the fan-out send is compared with.
	scaleSmall = 100
	// scaleSingletons bounds the executions the singleton census describes.
	scaleSingletons = 5000
)

// ScaleResult is what the scale scenario measured: registration at size, against the
// engine's own start rate, sends and searches at size against a small tenant, and the
// largest singleton workflow.
type ScaleResult struct {
	// Endpoints were registered through the bulk path (starter.PutEndpoints, in calls of
	// starter.MaxPutEndpoints): TenantEndpoints in Tenant, DefaultEndpoints in the default
	// tenant.
	Endpoints        int    `json:"endpoints"`
	Tenant           string `json:"tenant"`
	TenantEndpoints  int    `json:"tenant_endpoints"`
	DefaultEndpoints int    `json:"default_endpoints"`
	// Concurrency is the puts in flight (starter.DefaultBulkParallelism), and the
	// engine-limit starts in flight.
	Concurrency int `json:"concurrency"`
	// Registration: every endpoint put and found by its tenant's sends.
	Registration Phase  `json:"registration"`
	Failed       int    `json:"failed"`
	FirstError   string `json:"first_error,omitempty"`
	// Engine is EngineStarts engine-limit workflows (eager start, one local activity)
	// started at Concurrency, until each ran; VsEngine is registration ÷ engine.
	EngineStarts int     `json:"engine_starts"`
	Engine       Phase   `json:"engine"`
	VsEngine     float64 `json:"vs_engine"`
	// CPUVsEngine is the engine's CPU per start ÷ registration's CPU per put (Phase.CPUms):
	// the same comparison, hardly moved by the rest of the machine's load.
	CPUVsEngine float64 `json:"cpu_vs_engine,omitempty"`
	// Sends to scaleMatching endpoints among each tenant's (starter.Publish, one at a time):
	// the call's latency in the large tenant, the default tenant and a tenant of
	// scaleSmall; FanoutRatio is large ÷ small, p50.
	Sends         int     `json:"sends"`
	FanoutTenant  Latency `json:"fanout_tenant"`
	FanoutDefault Latency `json:"fanout_default"`
	FanoutSmall   Latency `json:"fanout_small"`
	FanoutRatio   float64 `json:"fanout_ratio"`
	FanoutError   string  `json:"fanout_error,omitempty"`
	// Tenant event searches (starter.ListEvents, first page of 50, as the API's), in the
	// large tenant and the default tenant.
	SearchTenant  Latency `json:"search_tenant"`
	SearchDefault Latency `json:"search_default"`
	SearchError   string  `json:"search_error,omitempty"`
	// Singletons: every execution (open or closed) of a workflow type other than Delivery
	// and Endpoint (and the bench's baselines), up to scaleSingletons, and the largest.
	Singletons SingletonCensus `json:"singletons"`
}

// scaleHalf is one of the scale scenario's two tenants: the puts planned in it and those
// done so far.
type scaleHalf struct {
	prefix, tenant string
	planned, done  int
}

// SingletonCensus is the largest input, state and history among the executions of the
// workflows that are not one per delivery or per endpoint.
type SingletonCensus struct {
	Executions int `json:"executions"`
	// Types counts the executions by workflow type.
	Types map[string]int `json:"types"`
	// Input is the largest first event's input (a continued run's carries its state).
	Input Largest `json:"input"`
	// Memo is the largest memo (the state a workflow publishes).
	Memo Largest `json:"memo"`
	// HistoryEvents and HistoryBytes are the longest and largest histories.
	HistoryEvents Largest `json:"history_events"`
	HistoryBytes  Largest `json:"history_bytes"`
	Error         string  `json:"error,omitempty"`
}

// Largest is the largest value seen and the execution that had it.
type Largest struct {
	Value    int64  `json:"value"`
	Workflow string `json:"workflow,omitempty"`
}

func (l *Largest) see(v int64, wf string) {
	if v > l.Value {
		l.Value, l.Workflow = v, wf
	}
}

func (e *env) scale(ctx context.Context) (*ScaleResult, error) {
	cfg := e.cfg
	res := &ScaleResult{
		Endpoints: cfg.ScaleEndpoints, Tenant: e.endpointID("scale"), Concurrency: starter.DefaultBulkParallelism,
		EngineStarts: cfg.ScaleEngineStarts, Sends: cfg.ScaleSends,
	}
	res.TenantEndpoints = (cfg.ScaleEndpoints + 1) / 2
	res.DefaultEndpoints = cfg.ScaleEndpoints - res.TenantEndpoints
	small := e.endpointID("scale-small")
	rare := "scale.rare." + e.tag
	secret, err := signature.GenerateSecret()
	if err != nil {
		return nil, err
	}
	// A put of endpoint i of n in tenant (empty: the default tenant): scaleMatching of
	// them, spread over the n, subscribe to scaleRare.
	put := func(prefix, tenant string, n, i int) herald.PutEndpointRequest {
		id := e.endpointID(fmt.Sprintf("%s-%07d", prefix, i))
		types := []string{"scale.noise"}
		if i%max(1, n/scaleMatching) == 0 && i/max(1, n/scaleMatching) < scaleMatching {
			types = []string{rare}
		}
		return herald.PutEndpointRequest{ID: id, Tenant: tenant, URL: e.rcv.url(id, noContent), Secret: secret, Types: types}
	}

	e.progress("scale: a tenant of %d endpoints (%s)", scaleSmall, small)
	if _, _, err := e.bulkPut(ctx, scaleSmall, func(i int) herald.PutEndpointRequest { return put("scs", small, scaleSmall, i) }, nil); err != nil {
		return nil, err
	}
	e.progress("scale: registering %d endpoints in tenant %s and %d in the default tenant, %d puts at once",
		res.TenantEndpoints, res.Tenant, res.DefaultEndpoints, res.Concurrency)
	if cfg.ScaleFor > 0 {
		e.progress("scale: registration ends after %s (the call in flight finishes)", cfg.ScaleFor.Std())
	}
	// The two tenants take calls of starter.MaxPutEndpoints in turn, so that a run cut
	// short by ScaleFor leaves both about as large.
	halves := []*scaleHalf{{prefix: "sct", tenant: res.Tenant, planned: res.TenantEndpoints}, {prefix: "scd", planned: res.DefaultEndpoints}}
	began, cpu := time.Now(), processCPU()
	last := began
	registered := 0
	report := func(done int) {
		if time.Since(last) >= 10*time.Second {
			last = time.Now()
			e.progress("scale: %d of %d registered, %.0f/s", registered+done, cfg.ScaleEndpoints, float64(registered+done)/time.Since(began).Seconds())
		}
	}
	var failed int
	var firstErr error
	for k := 0; halves[0].done < halves[0].planned || halves[1].done < halves[1].planned; k++ {
		h := halves[k%2]
		if h.done == h.planned {
			continue
		}
		if cfg.ScaleFor > 0 && time.Since(began) >= cfg.ScaleFor.Std() {
			break
		}
		n := min(starter.MaxPutEndpoints, h.planned-h.done)
		f, fe, err := e.bulkPut(ctx, n, func(i int) herald.PutEndpointRequest { return put(h.prefix, h.tenant, h.planned, h.done+i) }, report)
		if err != nil {
			return nil, err
		}
		h.done += n
		registered += n
		failed += f
		firstErr = cmpErr(firstErr, fe)
	}
	took := time.Since(began)
	used := processCPU() - cpu
	res.Failed = failed
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	res.Registration = Phase{Events: registered, Arrived: registered - failed, Seconds: secs(took),
		PerSecond: float64(registered-failed) / took.Seconds()}
	if cpu > 0 && registered > 0 {
		res.Registration.CPUms = float64(used) / float64(time.Millisecond) / float64(registered)
	}
	e.progress("scale: %d registered in %.1fs (%.1f/s), %d failed", registered-failed, took.Seconds(), res.Registration.PerSecond, failed)
	// A run cut short still needs the endpoints the sends match: those not reached are
	// put now, outside the timed phase.
	for _, h := range halves {
		var rest []herald.PutEndpointRequest
		for i := h.done; i < h.planned; i++ {
			if r := put(h.prefix, h.tenant, h.planned, i); slices.Equal(r.Types, []string{rare}) {
				rest = append(rest, r)
			}
		}
		if len(rest) > 0 {
			if _, _, err := e.bulkPut(ctx, len(rest), func(i int) herald.PutEndpointRequest { return rest[i] }, nil); err != nil {
				return nil, err
			}
		}
		h.done += len(rest)
	}
	res.TenantEndpoints, res.DefaultEndpoints = halves[0].done, halves[1].done
	res.Endpoints = res.TenantEndpoints + res.DefaultEndpoints

	e.progress("scale: engine limit, %d workflow starts, %d at once", cfg.ScaleEngineStarts, res.Concurrency)
	if res.Engine, err = e.baseline(ctx, engineQueue, engineFlow, engine, true, cfg.ScaleEngineStarts, res.Concurrency); err != nil {
		return nil, err
	}
	res.VsEngine = ratio(res.Registration.PerSecond, res.Engine.PerSecond)
	res.CPUVsEngine = ratio(res.Engine.CPUms, res.Registration.CPUms)

	e.progress("scale: %d fan-out sends to %d matching endpoints in each tenant", cfg.ScaleSends, scaleMatching)
	var large, def, smallTook []time.Duration
	tenants := []struct {
		name string
		into *[]time.Duration
	}{{res.Tenant, &large}, {herald.DefaultTenant, &def}, {small, &smallTook}}
	for i := range cfg.ScaleSends {
		for k := range tenants {
			t := tenants[(i+k)%len(tenants)] // each tenant first in turn
			t0 := time.Now()
			pub, err := e.starter.Publish(ctx, t.name, starter.Event{Type: rare, Data: benchData})
			// The default tenant may hold endpoints of other runs subscribed to every type.
			if err == nil && (len(pub.Deliveries) < scaleMatching || t.name != herald.DefaultTenant && len(pub.Deliveries) != scaleMatching) {
				err = fmt.Errorf("a send to tenant %s reached %d endpoints, want %d", t.name, len(pub.Deliveries), scaleMatching)
			}
			if err != nil {
				if res.FanoutError == "" {
					res.FanoutError = err.Error()
				}
				continue
			}
			*t.into = append(*t.into, time.Since(t0))
		}
	}
	res.FanoutTenant, res.FanoutDefault, res.FanoutSmall = summarize(large), summarize(def), summarize(smallTook)
	res.FanoutRatio = ratio(float64(res.FanoutTenant.P50), float64(res.FanoutSmall.P50))

	e.progress("scale: tenant event searches")
	var searchT, searchD []time.Duration
	for range max(1, cfg.ScaleSends/5) {
		for _, t := range []struct {
			name string
			into *[]time.Duration
		}{{res.Tenant, &searchT}, {herald.DefaultTenant, &searchD}} {
			t0 := time.Now()
			if _, err := e.starter.ListEvents(ctx, herald.EventFilter{Tenant: t.name}, nil, 50); err != nil {
				if res.SearchError == "" {
					res.SearchError = err.Error()
				}
				continue
			}
			*t.into = append(*t.into, time.Since(t0))
		}
	}
	res.SearchTenant, res.SearchDefault = summarize(searchT), summarize(searchD)

	e.progress("scale: singleton census")
	res.Singletons = e.singletons(ctx)
	return res, nil
}

// bulkPut registers n endpoints, put(i) each, through starter.PutEndpoints in calls of
// starter.MaxPutEndpoints, reporting the puts done to progress (if set). It returns the
// puts that failed and the first one's error; err only when a call as a whole failed.
func (e *env) bulkPut(ctx context.Context, n int, put func(i int) herald.PutEndpointRequest, progress func(done int)) (failed int, first, err error) {
	for from := 0; from < n; from += starter.MaxPutEndpoints {
		reqs := make([]herald.PutEndpointRequest, min(starter.MaxPutEndpoints, n-from))
		for i := range reqs {
			reqs[i] = put(from + i)
		}
		results, err := e.starter.PutEndpoints(ctx, reqs, func(done int) {
			if progress != nil {
				progress(from + done)
			}
		})
		if err != nil {
			return failed, first, err
		}
		for _, r := range results {
			if r.Err != nil {
				failed++
				first = cmpErr(first, r.Err)
			}
		}
		if ctx.Err() != nil {
			return failed, first, ctx.Err()
		}
	}
	return failed, first, nil
}

// cmpErr is a if set, else b.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// singletons describes every execution of the workflow types that are neither one per
// delivery nor one per endpoint, open or closed (every run of a workflow that continued as
// new), up to scaleSingletons, and keeps the largest input, memo and history.
func (e *env) singletons(ctx context.Context) SingletonCensus {
	c := SingletonCensus{Types: map[string]int{}}
	q := herald.Where().TypeNotIn(herald.DeliveryWorkflow, herald.EndpointWorkflow, engineFlow, naiveWorkflow).String()
	var errs []error
	for ex, err := range herald.Executions(ctx, e.client, q, 1000) {
		if err != nil {
			errs = append(errs, fmt.Errorf("list: %w", err))
			break
		}
		if c.Executions == scaleSingletons {
			errs = append(errs, fmt.Errorf("more than %d executions: the first %d were described", scaleSingletons, scaleSingletons))
			break
		}
		c.Executions++
		c.Types[ex.GetType().GetName()]++
		id, run := ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()
		name := id + " (run " + run + ")"
		d, err := e.client.DescribeWorkflowExecution(ctx, id, run)
		if err != nil {
			errs = append(errs, fmt.Errorf("describe %s: %w", name, err))
			continue
		}
		info := d.GetWorkflowExecutionInfo()
		c.Memo.see(int64(proto.Size(info.GetMemo())), name)
		c.HistoryEvents.see(info.GetHistoryLength(), name)
		c.HistoryBytes.see(info.GetHistorySizeBytes(), name)
		it := e.client.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		if !it.HasNext() {
			continue
		}
		ev, err := it.Next()
		if err != nil {
			errs = append(errs, fmt.Errorf("first event of %s: %w", name, err))
			continue
		}
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			c.Input.see(int64(proto.Size(a.GetInput())), name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.Error = clipText(err.Error(), 2000)
	}
	return c
}

// clipText bounds s to n bytes.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
