package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/workflows"
)

// CostResult is the history cost of a first-try delivery.
type CostResult struct {
	Deliveries int `json:"deliveries"`
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
	// EndpointEvents is how many events the endpoint workflow gained during the run;
	// EndpointShare is that over the deliveries.
	EndpointEvents int     `json:"endpoint_events"`
	EndpointShare  float64 `json:"endpoint_share"`
	// PerDelivery is DeliveryEvents + EndpointShare.
	PerDelivery float64 `json:"per_delivery"`
	// EndpointContinuedAsNew is set when the endpoint workflow continued as new during the
	// run (then EndpointEvents counts the new run only).
	EndpointContinuedAsNew bool `json:"endpoint_continued_as_new,omitempty"`
	// EndpointEventTypes counts the endpoint workflow's new events by type.
	EndpointEventTypes map[string]int `json:"endpoint_event_types,omitempty"`
}

func (e *env) cost(ctx context.Context) (*CostResult, error) {
	n := e.cfg.CostEvents
	ep := e.endpointID("cost")
	if err := e.putEndpoint(ctx, ep, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.WriteHeader(http.StatusNoContent)
	}, nil); err != nil {
		return nil, err
	}
	before, err := e.client.DescribeWorkflowExecution(ctx, workflows.EndpointWorkflowID(ep), "")
	if err != nil {
		return nil, err
	}
	ids := newIDs(n)
	if _, err := e.sendEvents(ctx, ids, func(int) string { return ep }, e.cfg.Senders, 0); err != nil {
		return nil, err
	}
	res := &CostResult{Deliveries: n, DeliveryEventsMin: -1}
	total, bytes := 0, 0
	for _, id := range ids {
		run := e.client.GetWorkflow(ctx, workflows.DeliveryID(id), "")
		var st workflows.Status
		wctx, cancel := context.WithTimeout(ctx, arrivalTimeout(n))
		err := run.Get(wctx, &st)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("delivery %s: %w", id, err)
		}
		if len(st.Attempts) != 1 {
			return nil, fmt.Errorf("delivery %s took %d attempts; the cost scenario needs first-try deliveries", id, len(st.Attempts))
		}
		k, size, err := e.history(ctx, workflows.DeliveryID(id))
		if err != nil {
			return nil, err
		}
		total += k
		bytes += size
		res.DeliveryEventsMin = pick(res.DeliveryEventsMin < 0 || k < res.DeliveryEventsMin, k, res.DeliveryEventsMin)
		res.DeliveryEventsMax = max(res.DeliveryEventsMax, k)
	}
	// Let the worker's last outcome report reach the endpoint workflow.
	time.Sleep(2500 * time.Millisecond)
	after, err := e.client.DescribeWorkflowExecution(ctx, workflows.EndpointWorkflowID(ep), "")
	if err != nil {
		return nil, err
	}
	b, a := before.GetWorkflowExecutionInfo(), after.GetWorkflowExecutionInfo()
	if b.GetExecution().GetRunId() != a.GetExecution().GetRunId() {
		res.EndpointContinuedAsNew = true
		res.EndpointEvents = int(a.GetHistoryLength())
	} else {
		res.EndpointEvents = int(a.GetHistoryLength() - b.GetHistoryLength())
	}
	if !res.EndpointContinuedAsNew {
		res.EndpointEventTypes = map[string]int{}
		it := e.client.GetWorkflowHistory(ctx, workflows.EndpointWorkflowID(ep), a.GetExecution().GetRunId(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return nil, fmt.Errorf("endpoint history: %w", err)
			}
			if ev.GetEventId() > b.GetHistoryLength() {
				res.EndpointEventTypes[strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")]++
			}
		}
	}
	res.DeliveryEvents = float64(total) / float64(n)
	res.DeliveryBytes = float64(bytes) / float64(n)
	if res.EngineEvents, res.EngineBytes, err = e.engineHistory(ctx); err != nil {
		return nil, err
	}
	res.EndpointShare = float64(res.EndpointEvents) / float64(n)
	res.PerDelivery = res.DeliveryEvents + res.EndpointShare
	return res, nil
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
