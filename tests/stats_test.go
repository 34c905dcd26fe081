package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

// statsTestBudget is the scaled-down budget of the stats shards in these tests: about 20
// of their entries (some 80 bytes each).
const statsTestBudget = 1600

// startStatsStack starts a stack of its own (its own server: the stats shards of the shared
// one hold the default budget) whose worker starts shards of budget budget.
func startStatsStack(t *testing.T, budget int) *testkit.Stack {
	t.Helper()
	stk, err := testkit.Start(context.Background(), testkit.Options{Worker: worker.Options{StatsBudget: budget}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stk.Stop)
	return stk
}

// signalCounts adds counts to a stats shard as a worker's gate does (gate.Temporal).
func signalCounts(t *testing.T, c client.Client, shard string, budget int, counts []herald.EndpointCounts) {
	t.Helper()
	_, err := c.SignalWithStartWorkflow(context.Background(), shard, herald.SignalStats, counts,
		client.StartWorkflowOptions{ID: shard, TaskQueue: herald.EndpointTaskQueue(herald.DefaultTaskQueue)},
		herald.StatsWorkflow, herald.StatsInput{Budget: budget})
	if err != nil {
		t.Fatalf("counts to %s: %v", shard, err)
	}
}

// roundCounts is what round r counts for endpoint i: attempts, a success every other
// round, the rest failures.
func roundCounts(r, i int) herald.Report {
	rep := herald.Report{Attempts: 1 + (i+r)%3, LastAttemptAt: time.Unix(1_800_000_000+int64(r), 0).UTC(), LastOutcome: fmt.Sprintf("round %d", r)}
	if r%2 == 0 {
		rep.Successes = rep.Attempts
	} else {
		rep.Failures = rep.Attempts
	}
	return rep
}

// Counts for 2,000 endpoints pass through stats shards of a budget of 1,600 bytes (about 20
// entries), in several rounds: the shards spill many times, in batches of at most 25
// signals per workflow task, and continue as new several times, each with entries within
// the budget.
// Afterwards every registered endpoint's counters (GetEndpoint: the endpoint's own plus its
// shard's) are exact, including the attempts real deliveries made through the gate, and
// nothing is lost: every attempt counted is in an endpoint's counters, in a shard, or in a
// spill to an endpoint that does not exist (dropped, the shard going on).
func TestStatsShardsSpillToEndpoints(t *testing.T) {
	ctx := context.Background()
	stk := startStatsStack(t, statsTestBudget)
	const (
		endpoints  = 2000
		registered = 12
		rounds     = 4
		perSignal  = 30
		events     = 3
	)
	ok := newReceiver(t, status(http.StatusNoContent))
	id := func(i int) string { return fmt.Sprintf("stat-%04d", i) }
	for i := range registered {
		sec, err := signature.GenerateSecret()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stk.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id(i), URL: ok.URL, Secret: sec}); err != nil {
			t.Fatalf("put %s: %v", id(i), err)
		}
	}
	// Real deliveries first: the gate starts the shards, with the worker's capacity.
	for i := range registered {
		for n := range events {
			if _, err := stk.Starter.Send(ctx, starter.Event{ID: fmt.Sprintf("evt_stat_%d_%d", i, n), EndpointID: id(i), Type: "test.stats", Data: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, "the deliveries to be counted", func() bool {
		st, err := stk.Starter.GetEndpoint(ctx, id(registered-1))
		return err == nil && st.Counters.Attempts == events
	})

	// The signals to each shard, in order: each round in another order of the endpoints, so
	// that spills cut them differently.
	signals := map[string][][]herald.EndpointCounts{}
	for r := range rounds {
		batch := map[string][]herald.EndpointCounts{}
		for k := range endpoints {
			i := (k*7 + r*331) % endpoints
			sid := herald.StatsWorkflowID(id(i))
			batch[sid] = append(batch[sid], herald.EndpointCounts{Endpoint: id(i), Counts: roundCounts(r, i)})
			if len(batch[sid]) == perSignal {
				signals[sid] = append(signals[sid], batch[sid])
				batch[sid] = nil
			}
		}
		for sid, b := range batch {
			if len(b) > 0 {
				signals[sid] = append(signals[sid], b)
			}
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for sid, bs := range signals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range bs {
				if _, err := stk.Client.SignalWithStartWorkflow(ctx, sid, herald.SignalStats, b,
					client.StartWorkflowOptions{ID: sid, TaskQueue: herald.EndpointTaskQueue(herald.DefaultTaskQueue)},
					herald.StatsWorkflow, herald.StatsInput{Budget: statsTestBudget}); err != nil {
					t.Errorf("counts to %s: %v", sid, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	want := func(i int) herald.Report {
		var w herald.Report
		for r := range rounds {
			w.Merge(roundCounts(r, i))
		}
		return w
	}
	for i := range registered {
		eventually(t, "exact counters of "+id(i), func() bool {
			st, err := stk.Starter.GetEndpoint(ctx, id(i))
			w := want(i)
			return err == nil && st.Error == "" && st.Counters.Attempts == w.Attempts+events &&
				st.Counters.Successes == w.Successes+events && st.Counters.Failures == w.Failures &&
				st.Counters.LastOutcome == w.LastOutcome && st.CountsSpill == 0
		})
	}
	t.Logf("%d rounds of counts for %d endpoints through shards of %d bytes: exact after %s", rounds, endpoints, statsTestBudget, time.Since(start).Round(time.Millisecond))

	// Nothing is lost: once the shards have taken every signal and no spill is in flight,
	// every attempt counted is in a shard, handed to an endpoint, or dropped.
	total := registered * events
	for i := range endpoints {
		total += want(i).Attempts
	}
	var tl statsTally
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		tl = tallyStats(t, stk.Client, endpoints, id)
		for i := range registered {
			tl.inEndpoints += endpointCounters(t, stk.Client, id(i)).Attempts
		}
		if tl.inShards+tl.delivered+tl.dropped == total && tl.inEndpoints == tl.delivered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempts: %d in shards + %d handed over (%d in endpoints) + %d dropped, want %d in all",
				tl.inShards, tl.delivered, tl.inEndpoints, tl.dropped, total)
		}
	}
	t.Logf("%d spills, %d continues-as-new, at most %d spill signals in a workflow task; of %d attempts counted: %d in the shards, %d handed to endpoints, %d dropped (no such endpoint)",
		tl.spills, tl.cans, tl.maxPerTask, total, tl.inShards, tl.delivered, tl.dropped)
	if tl.cans < 4 || tl.spills < endpoints {
		t.Errorf("%d continues-as-new and %d spills: want several and more than one per endpoint", tl.cans, tl.spills)
	}
	// A signal of 30 makes a spill of 30 or more: more than one batch of 25.
	if tl.maxPerTask != 25 {
		t.Errorf("at most %d spill signals in one workflow task: want 25, the batch", tl.maxPerTask)
	}
	for _, bad := range tl.inputs {
		t.Error(bad)
	}
}

// statsTally is what the histories and answers of the stats shards say.
type statsTally struct {
	// inShards are the attempts the shards hold; delivered and dropped those their spills
	// handed to an endpoint or could not (no such endpoint); inEndpoints those the
	// registered endpoints hold (filled in by the caller).
	inShards, delivered, dropped, inEndpoints int
	spills, cans, maxPerTask                  int
	// inputs lists the runs that started with entries over the budget, unsorted, or 64 KB or more.
	inputs []string
}

// tallyStats reads every run of every stats shard, and the shards' answers for the
// endpoints id(0..n).
func tallyStats(t *testing.T, c client.Client, n int, id func(int) string) statsTally {
	t.Helper()
	ctx := context.Background()
	dc := converter.GetDefaultDataConverter()
	var tl statsTally
	for s := range herald.StatsShards {
		sid := fmt.Sprintf("endpoint-stats:%d", s)
		runs := shardRuns(t, c, sid)
		tl.cans += len(runs) - 1
		for r, run := range runs {
			evs := historyOf(t, c, sid, run)
			start := evs[0].GetWorkflowExecutionStartedEventAttributes()
			var in herald.StatsInput
			if err := dc.FromPayloads(start.GetInput(), &in); err != nil {
				t.Fatal(err)
			}
			size := 0
			for _, p := range start.GetInput().GetPayloads() {
				size += len(p.GetData())
			}
			entries := 0
			for _, e := range in.Entries {
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				entries += len(b) + 1
			}
			if r > 0 && (entries > statsTestBudget || in.Budget != statsTestBudget || in.Capacity != 0 || size >= 64<<10 ||
				!slices.IsSortedFunc(in.Entries, func(a, b herald.StatsEntry) int { return strings.Compare(a.Endpoint, b.Endpoint) })) {
				tl.inputs = append(tl.inputs, fmt.Sprintf("%s run %d starts with %d entries of %d bytes (budget %d, capacity %d, input %d bytes): want at most %d bytes, sorted",
					sid, r, len(in.Entries), entries, in.Budget, in.Capacity, size, statsTestBudget))
			}
			perTask, initiated := 0, map[int64]herald.SpilledCounts{}
			for _, ev := range evs {
				switch ev.GetEventType() {
				case enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
					perTask = 0
				case enums.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
					perTask++
					tl.maxPerTask = max(tl.maxPerTask, perTask)
					var sc herald.SpilledCounts
					if err := dc.FromPayloads(ev.GetSignalExternalWorkflowExecutionInitiatedEventAttributes().GetInput(), &sc); err != nil {
						t.Fatal(err)
					}
					initiated[ev.GetEventId()] = sc
					tl.spills++
				case enums.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED:
					tl.delivered += initiated[ev.GetExternalWorkflowExecutionSignaledEventAttributes().GetInitiatedEventId()].Counts.Attempts
				case enums.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED:
					tl.dropped += initiated[ev.GetSignalExternalWorkflowExecutionFailedEventAttributes().GetInitiatedEventId()].Counts.Attempts
				}
			}
		}
		v, err := c.QueryWorkflow(ctx, sid, "", herald.QueryStats, shardIDs(sid, n, id))
		if err != nil {
			t.Fatal(err)
		}
		var held []herald.EndpointCounts
		if err := v.Get(&held); err != nil {
			t.Fatal(err)
		}
		for _, h := range held {
			tl.inShards += h.Counts.Attempts
		}
	}
	return tl
}

// endpointCounters are the counters endpoint id's workflow holds itself.
func endpointCounters(t *testing.T, c client.Client, id string) herald.Report {
	t.Helper()
	v, err := c.QueryWorkflow(context.Background(), herald.EndpointWorkflowID(id), "", herald.QueryEndpointState)
	if err != nil {
		t.Fatal(err)
	}
	var st herald.EndpointState
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	return st.Counters
}

// shardIDs are the endpoints of ids(0..n) that shard sid counts.
func shardIDs(sid string, n int, id func(int) string) []string {
	var out []string
	for i := range n {
		if herald.StatsWorkflowID(id(i)) == sid {
			out = append(out, id(i))
		}
	}
	return out
}

// shardRuns are the run ids of workflowID, first to current (each continued as new into
// the next).
func shardRuns(t *testing.T, c client.Client, workflowID string) []string {
	t.Helper()
	d, err := c.DescribeWorkflowExecution(context.Background(), workflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	runs := []string{d.GetWorkflowExecutionInfo().GetExecution().GetRunId()}
	for {
		evs := historyOf(t, c, workflowID, runs[0])
		prev := evs[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if prev == "" {
			return runs
		}
		runs = append([]string{prev}, runs...)
	}
}

// historyOf is the history of one run.
func historyOf(t *testing.T, c client.Client, workflowID, runID string) []*historypb.HistoryEvent {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), workflowID, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var evs []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestRecordStatsHistories records, on a stack of its own with shards of a budget of 330
// bytes (four entries), a stats shard that spills to a registered endpoint and to one that
// does not exist, and the endpoint workflow that receives the spill
// (endpoint_stats_budget.json, endpoint_spilled_counts_budget.json; the shard's
// endpoint_stats_spill.json was recorded before the budget, with a capacity of 4). It runs
// only with -record.
func TestRecordStatsHistories(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	ctx := context.Background()
	const budget = 330
	stk := startStatsStack(t, budget)
	ok := newReceiver(t, status(http.StatusNoContent))
	// Six endpoints of one shard: the first registered.
	var ids []string
	shard := herald.StatsWorkflowID("rec-stats-0")
	for i := 0; len(ids) < 6; i++ {
		if id := fmt.Sprintf("rec-stats-%d", i); herald.StatsWorkflowID(id) == shard {
			ids = append(ids, id)
		}
	}
	sec, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stk.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: ids[0], URL: ok.URL, Secret: sec}); err != nil {
		t.Fatal(err)
	}
	if _, err := stk.Starter.Send(ctx, starter.Event{ID: "evt_rec_stats", EndpointID: ids[0], Type: "test.recorded", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delivery to be counted", func() bool {
		st, err := stk.Starter.GetEndpoint(ctx, ids[0])
		return err == nil && st.Counters.Attempts == 1
	})
	for _, id := range ids[1:] {
		signalCounts(t, stk.Client, shard, budget, []herald.EndpointCounts{{Endpoint: id, Counts: roundCounts(0, 0)}})
	}
	eventually(t, "the registered endpoint to hold its spilled count", func() bool {
		v, err := stk.Client.QueryWorkflow(ctx, herald.EndpointWorkflowID(ids[0]), "", herald.QueryEndpointState)
		var st herald.EndpointState
		return err == nil && v.Get(&st) == nil && st.Counters.Attempts == 1 && st.CountsSpill != 0
	})
	eventually(t, "the spill to end", func() bool {
		evs := historyOf(t, stk.Client, shard, "")
		return countWhere(evs, func(e *historypb.HistoryEvent) bool {
			return e.GetEventType() == enums.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED
		}) == 1
	})
	saveFrom(t, stk.Client, "endpoint_stats_budget.json", shard)
	saveFrom(t, stk.Client, "endpoint_spilled_counts_budget.json", herald.EndpointWorkflowID(ids[0]))
}
