package tests

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// startShortRuns starts a stack of its own whose server suggests continue-as-new after
// events history events, so that an endpoint workflow continues as new within seconds.
func startShortRuns(t *testing.T, events int) *testkit.Stack {
	t.Helper()
	stk, err := testkit.Start(context.Background(), testkit.Options{Server: devserver.Options{
		DynamicConfig: map[string]any{"limit.historyCount.suggestContinueAsNew": events},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stk.Stop)
	return stk
}

// TestRecordContinuedRateLimitHistory records the first run of a rate-limited endpoint
// that continued as new while deliveries waited for their grants (the server suggests
// continue-as-new after 60 events here), for TestReplayHistories. It runs only with
// -record (endpoint_rate_limited_continued_before_drain.json is one recorded before
// versionDrainBeforeContinue):
//
//	go test ./tests -run TestRecordContinuedRateLimitHistory -record
func TestRecordContinuedRateLimitHistory(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	ctx := context.Background()
	stk := startShortRuns(t, 60)
	rcv := newReceiver(t, status(http.StatusNoContent))
	sec, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	o := fast(3, time.Second)
	two := 2
	o.RateLimit = &two
	id := "rec-rated-continued"
	if _, err := stk.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, URL: rcv.URL, Secret: sec, Overrides: o}); err != nil {
		t.Fatal(err)
	}
	ids := sendAll(t, stk.Starter, id, 16, 8)
	for _, ev := range ids {
		waitFor(t, stk.Starter, ev, herald.StateDelivered)
	}
	d, err := stk.Client.DescribeWorkflowExecution(ctx, herald.EndpointWorkflowID(id), "")
	if err != nil {
		t.Fatal(err)
	}
	first := d.GetWorkflowExecutionInfo().GetFirstRunId()
	evs := historyOf(t, stk.Client, herald.EndpointWorkflowID(id), first)
	if last := evs[len(evs)-1]; last.GetEventType() != enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		t.Fatalf("the endpoint's first run ended with %s, want continued as new", last.GetEventType())
	}
	const name = "endpoint_rate_limited_continued.json"
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&historypb.History{Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(historyDir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s (%d events)", name, len(evs))
}

// TestRateLimitNoLostWakeups: a few hundred events sent at once by several goroutines to an
// endpoint limited to 6 requests per second, with a receiver that is sometimes slow (its
// attempts hold worker slots and the endpoint's cap, so grants reach their deliveries
// late and are handed back) and sometimes fails (the delivery retries and asks again), on
// a server that makes the endpoint workflow continue as new every few hundred events:
// every event is delivered at the pace of the limit, none waits for a long recheck, no
// aligned second (by webhook-timestamp) has more requests than the limit, and the
// endpoint's queue ends empty.
func TestRateLimitNoLostWakeups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stk := startShortRuns(t, 80)
	const limit, events = 6, 180
	ok := func(n int) bool { return n%11 != 0 }
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n%7 == 0 {
			time.Sleep(1500 * time.Millisecond)
		}
		if !ok(n) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	sec, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	o := fast(5, time.Second)
	rate := limit
	o.RateLimit = &rate
	const id = "wakeups-rated"
	if _, err := stk.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, URL: rcv.URL, Secret: sec, Overrides: o}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	ids := sendAll(t, stk.Starter, id, events, 8)
	// At the limit the events take events/limit seconds; a delivery that lost its wake-up
	// would wait for its 10-minute recheck.
	deadline := t0.Add(events/limit*time.Second + 30*time.Second)
	delivered := map[string]bool{}
	for time.Now().Before(deadline) && len(delivered) < events {
		time.Sleep(500 * time.Millisecond)
		for n, r := range rcv.requests() {
			if ok(n + 1) {
				delivered[r.Header.Get(signature.HeaderID)] = true
			}
		}
	}
	took := time.Since(t0)
	if len(delivered) < events {
		var stuck []string
		for _, ev := range ids {
			if st, err := stk.Starter.Status(ctx, starter.Ref{EventID: ev}); err == nil && st.State != herald.StateDelivered && len(stuck) < 5 {
				w := ""
				if st.Waiting != nil {
					w = fmt.Sprintf(": %s (recheck %s)", st.Waiting.Reason, st.Waiting.Recheck)
				}
				stuck = append(stuck, fmt.Sprintf("%s %s%s", ev, st.State, w))
			}
		}
		ep, _ := stk.Starter.GetEndpoint(ctx, id)
		t.Fatalf("%d of %d events delivered after %s; endpoint queue %d, in flight %d; some not delivered: %v",
			len(delivered), events, took.Round(time.Second), ep.Queue, ep.InFlight, stuck)
	}
	worst, _ := checkSignedPerSecond(t, rcv.requests(), limit)
	ep, err := stk.Starter.GetEndpoint(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Queue != 0 {
		t.Errorf("endpoint queue %d after every event was delivered, want 0", ep.Queue)
	}
	d, err := stk.Client.DescribeWorkflowExecution(ctx, herald.EndpointWorkflowID(id), "")
	if err != nil {
		t.Fatal(err)
	}
	runs := d.GetWorkflowExecutionInfo().GetFirstRunId() != d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	t.Logf("%d events delivered in %s (%.1f/s, limit %d), %d requests, most in one second %d; endpoint continued as new: %v",
		events, took.Round(time.Millisecond), float64(events)/took.Seconds(), limit, len(rcv.requests()), worst, runs)
	if !runs {
		t.Error("the endpoint workflow never continued as new: the test does not cover it")
	}
}

// TestRecordRateWindowHistory records a delivery to a rate-limited endpoint whose permit
// came before the second it is for began (delivery_rate_window.json: its attempt waits for
// that second), for TestReplayHistories. It runs only with -record:
//
//	go test ./tests -run TestRecordRateWindowHistory -record
func TestRecordRateWindowHistory(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	rcv := newReceiver(t, status(http.StatusNoContent))
	o := fast(3, time.Second)
	four := 4
	o.RateLimit = &four
	putEndpoint(t, "rec-rate-window", rcv.URL, o)
	ids := sendN(t, "rec-rate-window", 24)
	for _, id := range ids {
		waitState(t, id, herald.StateDelivered)
	}
	for _, id := range ids {
		wf := herald.DeliveryID(herald.DefaultTenant, id)
		for _, ev := range workflowHistory(t, wf) {
			a := ev.GetWorkflowExecutionSignaledEventAttributes()
			if a.GetSignalName() != herald.SignalPermit {
				continue
			}
			var p policy.Grant
			if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &p); err != nil {
				t.Fatal(err)
			}
			if p.Window.After(ev.GetEventTime().AsTime()) {
				save(t, "delivery_rate_window.json", wf)
				return
			}
		}
	}
	t.Fatal("no delivery's permit came before its second: run again")
}

// TestRecordQueueFullHistory records a rate-limited endpoint whose queue is full (one
// signal queues policy's MaxQueue waiters, for deliveries that do not exist) when one more
// waiter comes (endpoint_queue_full.json), for TestReplayHistories;
// endpoint_queue_full_before_overflow.json is one recorded before versionQueueOverflow.
// It runs only with -record:
//
//	go test ./tests -run TestRecordQueueFullHistory -record
func TestRecordQueueFullHistory(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusNoContent))
	o := fast(3, time.Second)
	one := 1
	o.RateLimit = &one
	const id = "rec-queue-full"
	putEndpoint(t, id, rcv.URL, o)
	full := policy.DefaultLimiterConfig().MaxQueue
	ws := make([]string, full+1) // the first is granted at once, the others fill the queue
	for i := range ws {
		ws[i] = herald.DeliveryID(herald.DefaultTenant, fmt.Sprintf("evt_rec_full_%05d", i))
	}
	wf := herald.EndpointWorkflowID(id)
	if err := shared.client.SignalWorkflow(ctx, wf, "", herald.SignalWait, herald.WaitRequest{Waiters: ws}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the queue to fill", func() bool {
		st, err := shared.starter.GetEndpoint(ctx, id)
		return err == nil && st.Queue >= full-1
	})
	last := herald.DeliveryID(herald.DefaultTenant, "evt_rec_full_last")
	if err := shared.client.SignalWorkflow(ctx, wf, "", herald.SignalWait, herald.WaitRequest{Waiters: []string{last}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	save(t, "endpoint_queue_full.json", wf)
}
