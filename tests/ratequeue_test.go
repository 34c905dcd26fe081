package tests

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

// rateQueueHistory is the file TestRecordRateQueueHistory writes.
// endpoint_rate_queue_before_rate_queue_passes.json is one it recorded before
// versionRateQueuePasses (each queued delivery granted a request of the queue's own
// budget), kept under that name: do not re-record it.
const rateQueueHistory = "endpoint_rate_queue.json"

// queueBehindOpenCircuit puts endpoint id (limited to limit requests per second, its
// circuit tripped by one failure and probed only after an hour) in front of n deliveries
// waiting in its queue, and returns their event ids and the switch that makes the receiver
// answer 204 (it answers 503 until then). Close the circuit by hand to drain the queue.
func queueBehindOpenCircuit(t *testing.T, id string, limit, n int) ([]string, *atomic.Bool, *receiver) {
	t.Helper()
	o := fast(3, time.Second)
	o.RateLimit = &limit
	first, healthy, rcv := behindOpenCircuit(t, id, o)
	ids := append(first, sendAll(t, shared.starter, id, n, 8)...)
	eventually(t, "the deliveries to queue", func() bool { return endpointState(t, id).Queue >= n })
	return ids, healthy, rcv
}

// behindOpenCircuit registers endpoint id with overrides o and a breaker tripped by one
// failure and probed only after an hour, sends it one event, and returns once that event's
// failure has opened the circuit: the event's id, and the switch that makes the receiver
// answer 204 (it answers 503 until then).
func behindOpenCircuit(t *testing.T, id string, o *herald.Overrides) ([]string, *atomic.Bool, *receiver) {
	t.Helper()
	var healthy atomic.Bool
	rcv := newReceiver(t, func(_ int, w http.ResponseWriter) {
		if healthy.Load() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	o.Breaker = &policy.BreakerOverride{ConsecutiveFailures: 1, ProbeDelay: duration.Duration(time.Hour), MaxProbeDelay: duration.Duration(time.Hour)}
	putEndpoint(t, id, rcv.URL, o)
	first := sendAll(t, shared.starter, id, 1, 1)
	waitState(t, first[0], herald.StateWaitingRetry)
	eventually(t, "the circuit to open", func() bool {
		return endpointState(t, id).Circuit.State == policy.CircuitOpen
	})
	return first, &healthy, rcv
}

// wakesOf counts the wakes an endpoint workflow sent: passes (policy.Grant.Pass, signalled
// or handed to the worker: activities.Operator.WakeWaiters) and requests of the queue's own
// budget (a grant with a rate window).
func wakesOf(t *testing.T, id string) (passes, own int) {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	for _, ev := range workflowHistory(t, herald.EndpointWorkflowID(id)) {
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_MARKER_RECORDED:
			d := ev.GetMarkerRecordedEventAttributes().GetDetails()
			var m struct{ ActivityType string }
			if p := d["data"]; p == nil || dc.FromPayloads(p, &m) != nil || m.ActivityType != "WakeWaiters" {
				continue
			}
			var r herald.PassWoken
			if err := dc.FromPayloads(d["result"], &r); err != nil {
				t.Fatal(err)
			}
			passes += r.Sent
		case enums.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
			a := ev.GetSignalExternalWorkflowExecutionInitiatedEventAttributes()
			if a.GetSignalName() != herald.SignalPermit {
				continue
			}
			var g policy.Grant
			if err := dc.FromPayloads(a.GetInput(), &g); err != nil {
				t.Fatal(err)
			}
			switch {
			case g.Pass:
				passes++
			case !g.Window.IsZero():
				own++
			}
		}
	}
	return passes, own
}

// TestRateQueueTwoWorkers: with two workers, 60 deliveries queued behind an open circuit at
// an endpoint limited to 10 requests per second drain, once the circuit is closed by hand,
// through the rate shares the workers' gates lease: all are delivered, never more than 10
// requests signed in one aligned second (webhook-timestamp), the queue ends empty, and the
// endpoint workflow woke them with passes, not with a request of its own budget each.
func TestRateQueueTwoWorkers(t *testing.T) {
	t.Parallel()
	secondWorker(t, 200*time.Millisecond)
	const limit, queued = 10, 60
	const id = "rate-queue"
	ids, healthy, rcv := queueBehindOpenCircuit(t, id, limit, queued)
	healthy.Store(true)
	t0 := time.Now()
	if _, err := shared.starter.ResetCircuit(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for _, ev := range ids {
		waitState(t, ev, herald.StateDelivered)
	}
	took := time.Since(t0)
	worst, _ := checkSignedPerSecond(t, rcv.requests(), limit)
	eventually(t, "the queue to empty", func() bool { return endpointState(t, id).Queue == 0 })
	passes, own := wakesOf(t, id)
	if passes < queued || own > queued/10 {
		t.Errorf("the endpoint workflow woke %d passes and granted %d requests of its own for %d queued deliveries: the queue should drain through the gates' shares",
			passes, own, queued)
	}
	t.Logf("%d queued deliveries drained in %s (%.1f/s, limit %d), most in one second %d, %d passes, %d own grants",
		len(ids), took.Round(time.Millisecond), float64(len(ids))/took.Seconds(), limit, worst, passes, own)
}

// TestRecordRateQueueHistory records a rate-limited endpoint (2 requests per second) whose
// circuit opened with 6 deliveries queued behind it, closed by hand and drained, for
// TestReplayHistories. It runs only with -record:
//
//	go test ./tests -run TestRecordRateQueueHistory -record
func TestRecordRateQueueHistory(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	const id = "rec-rate-queue"
	ids, healthy, _ := queueBehindOpenCircuit(t, id, 2, 6)
	healthy.Store(true)
	if _, err := shared.starter.ResetCircuit(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for _, ev := range ids {
		waitState(t, ev, herald.StateDelivered)
	}
	eventually(t, "the queue to empty", func() bool { return endpointState(t, id).Queue == 0 })
	time.Sleep(3 * time.Second) // the gates' last renewals, until they drop their leases
	save(t, rateQueueHistory, herald.EndpointWorkflowID(id))
}
