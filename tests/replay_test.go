package tests

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
	heraldworker "github.com/heraldhq/herald/worker"
)

// record re-records the histories the replay test checks, with the tests that record them
// (TestRecordHistories, TestRecordRateLimitHistories, TestRecordLifecycleHistories,
// TestReplaySignalInEveryState and TestRecordOrderedHistories), one at a time:
//
//	go test ./tests -run TestRecordHistories -record
var record = flag.Bool("record", false, "re-record tests/testdata/histories from real runs")

const historyDir = "testdata/histories"

// TestReplayHistories replays every recorded history against today's workflow code. A
// change that would break a running workflow (a new command without workflow.GetVersion)
// fails here.
func TestReplayHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(historyDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no histories in %s: record them with go test ./tests -run TestRecordHistories -record", historyDir)
	}
	r := worker.NewWorkflowReplayer()
	heraldworker.Register(r)
	heraldworker.RegisterEndpoints(r, loopback)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}

// TestRecordHistories runs one scenario per workflow path on the real server and saves
// their histories. It runs only with -record.
func TestRecordHistories(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	ctx := context.Background()
	if err := os.MkdirAll(historyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ok := newReceiver(t, status(http.StatusNoContent))
	flaky := newReceiver(t, firstThenOK(retryAfter(http.StatusTooManyRequests, "1")))
	down := newReceiver(t, status(http.StatusServiceUnavailable))
	tripping := newReceiver(t, firstThenOK(func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) }))
	putEndpoint(t, "rec-ok", ok.URL, fast(3, time.Second))
	brk := fast(3, time.Second)
	full := policy.BreakerConfig{ConsecutiveFailures: 1, ConsecutiveWindow: duration.Duration(time.Minute), VolumeFailures: 20,
		VolumeWindow: duration.Duration(5 * time.Minute), ProbeDelay: duration.Duration(time.Second), MaxProbeDelay: duration.Duration(time.Minute), HalfOpenSuccesses: 0, ProbeTimeout: duration.Duration(time.Minute)}.Override()
	brk.Breaker = &full
	putEndpoint(t, "rec-breaker", tripping.URL, brk)
	putEndpoint(t, "rec-flaky", flaky.URL, fast(3, 30*time.Second))
	putEndpoint(t, "rec-down", down.URL, fast(2, time.Second))

	send := func(id, endpoint string) {
		if _, err := shared.starter.Send(ctx, starter.Event{ID: id, EndpointID: endpoint, Type: "test.recorded", Data: json.RawMessage(`{"n":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	send("evt_rec_first_try", "rec-ok")
	send("evt_rec_retry_after", "rec-flaky")
	send("evt_rec_dead_replayed", "rec-down")
	send("evt_rec_held_by_breaker", "rec-breaker")
	waitState(t, "evt_rec_first_try", herald.StateDelivered)
	waitState(t, "evt_rec_retry_after", herald.StateDelivered)
	waitState(t, "evt_rec_dead_replayed", herald.StateDeadLetter)
	waitState(t, "evt_rec_held_by_breaker", herald.StateDelivered)
	down.setAnswer(status(http.StatusOK))
	if _, err := shared.starter.Replay(ctx, starter.Ref{EventID: "evt_rec_dead_replayed"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, "evt_rec_dead_replayed", herald.StateDelivered)
	// A change to a registered endpoint: it settles before it returns (read-your-writes).
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "rec-down",
		Overrides: &herald.Overrides{Timeout: herald.Duration(4 * time.Second)}}); err != nil {
		t.Fatal(err)
	}

	wfID, err := shared.starter.BulkReplay(ctx, herald.BulkReplayInput{
		Filter: herald.DeadLetterFilter{EndpointID: "rec-none"}, At: time.Now().Add(200 * time.Millisecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := shared.client.GetWorkflow(ctx, wfID, "").Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the endpoint to count its attempts", func() bool {
		ep, err := shared.starter.GetEndpoint(ctx, "rec-down")
		return err == nil && ep.Counters.Attempts == 3
	})

	// Fan-out: an event published to a tenant goes to each endpoint subscribed to its type.
	putSubscribed(t, "rec-fan-paid", "rec-fan", ok.URL, []string{"test.recorded"}, 3)
	putSubscribed(t, "rec-fan-all", "rec-fan", ok.URL, nil, 3)
	if _, err := shared.starter.Publish(ctx, "rec-fan", starter.Event{ID: "evt_rec_fanout", Type: "test.recorded", Data: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	waitEventSettled(t, "rec-fan", "evt_rec_fanout", 2, herald.StateDelivered)
	// A changed subscription is published in the endpoint's search attributes.
	putSubscribed(t, "rec-fan-all", "rec-fan", ok.URL, []string{"test.*"}, 3)

	// The catalog of event types: a type put with a schema, changed, and strict types on and off.
	desc := "A type recorded for the replay test."
	for _, req := range []herald.PutEventTypeRequest{
		{Name: "rec.type", Description: &desc, Schema: json.RawMessage(`{"type":"object"}`)},
		{Name: "rec.type", ClearSchema: true},
	} {
		if _, err := shared.starter.PutEventType(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, strict := range []bool{true, false} {
		if _, err := shared.starter.SetStrictTypes(ctx, strict); err != nil {
			t.Fatal(err)
		}
	}

	save(t, "event_types.json", herald.EventTypesID)
	save(t, "delivery_first_try.json", herald.DeliveryID(herald.DefaultTenant, "evt_rec_first_try"))
	save(t, "delivery_retry_after.json", herald.DeliveryID(herald.DefaultTenant, "evt_rec_retry_after"))
	save(t, "delivery_dead_letter_replayed.json", herald.DeliveryID(herald.DefaultTenant, "evt_rec_dead_replayed"))
	save(t, "endpoint_put_and_leases.json", herald.EndpointWorkflowID("rec-down"))
	save(t, "delivery_held_by_breaker.json", herald.DeliveryID(herald.DefaultTenant, "evt_rec_held_by_breaker"))
	save(t, "endpoint_breaker_probe.json", herald.EndpointWorkflowID("rec-breaker"))
	save(t, "bulk_replay_at.json", wfID)
	save(t, "delivery_fanout.json", herald.FanoutDeliveryID("rec-fan", "rec-fan-paid", "evt_rec_fanout"))
	save(t, "endpoint_subscription_changed.json", herald.EndpointWorkflowID("rec-fan-all"))
	save(t, "endpoint_stats.json", herald.StatsWorkflowID("rec-down"))
}

func save(t *testing.T, name, workflowID string) {
	t.Helper()
	saveFrom(t, shared.client, name, workflowID)
}

// saveFrom records the current run of workflowID, read through c, under name.
func saveFrom(t *testing.T, c client.Client, name, workflowID string) {
	t.Helper()
	h := &historypb.History{Events: historyOf(t, c, workflowID, "")}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(historyDir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s (%d events)", name, len(h.Events))
}

// workflowHistory returns the events of workflowID's current run.
func workflowHistory(t *testing.T, workflowID string) []*historypb.HistoryEvent {
	t.Helper()
	return historyOf(t, shared.client, workflowID, "")
}
