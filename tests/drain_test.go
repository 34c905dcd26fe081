package tests

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

// drainName is the file TestRecordDrainHistory writes. endpoint_drain_before_passes.json
// is one it recorded before versionDrainPasses (each woken delivery granted a permit of its
// own), kept under that name: do not re-record it.
const drainName = "endpoint_drain.json"

// TestRecordDrainHistory records an endpoint whose circuit opened, with deliveries queued
// behind it, closed by hand and drained, for TestReplayHistories. It runs only with -record:
//
//	go test ./tests -run TestRecordDrainHistory -record
func TestRecordDrainHistory(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	ctx := context.Background()
	var healthy atomic.Bool
	rcv := newReceiver(t, func(_ int, w http.ResponseWriter) {
		if healthy.Load() {
			time.Sleep(20 * time.Millisecond)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	o := fast(3, time.Second)
	o.MaxInFlight = 2
	o.Breaker = &policy.BreakerOverride{ConsecutiveFailures: 1, ProbeDelay: duration.Duration(time.Hour), MaxProbeDelay: duration.Duration(time.Hour)}
	const id = "rec-drain"
	putEndpoint(t, id, rcv.URL, o)
	first := sendAll(t, shared.starter, id, 1, 1)
	waitState(t, first[0], herald.StateWaitingRetry)
	eventually(t, "the circuit to open", func() bool {
		return endpointState(t, id).Circuit.State == policy.CircuitOpen
	})
	ids := sendAll(t, shared.starter, id, 8, 4)
	eventually(t, "the deliveries to queue", func() bool { return endpointState(t, id).Queue >= len(ids) })
	healthy.Store(true)
	if _, err := shared.starter.ResetCircuit(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, ev := range ids {
		waitState(t, ev, herald.StateDelivered)
	}
	eventually(t, "the queue to empty", func() bool { return endpointState(t, id).Queue == 0 })
	time.Sleep(2 * time.Second) // the gates' last renewals
	save(t, drainName, herald.EndpointWorkflowID(id))
	for _, ev := range ids {
		wf := herald.DeliveryID(herald.DefaultTenant, ev)
		if w := wokenBy(t, shared.client, wf); w.updates > 0 {
			save(t, drainedName, wf)
			return
		}
	}
	t.Fatalf("none of the %d drained deliveries took its pass by update (%s)", len(ids), herald.UpdatePass)
}

// drainedName is the delivery TestRecordDrainHistory writes besides its endpoint: one
// that waited in the queue and was handed its pass by update (herald.UpdatePass).
const drainedName = "delivery_drained_by_pass.json"

// woken counts how a delivery was woken from its endpoint's queue: passes taken by update
// (herald.UpdatePass), and permit signals (herald.SignalPermit).
type woken struct{ updates, signals int }

// wokenBy reads workflowID's history through c and counts how it was woken.
func wokenBy(t *testing.T, c client.Client, workflowID string) woken {
	t.Helper()
	var w woken
	for _, ev := range historyOf(t, c, workflowID, "") {
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			if ev.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName() == herald.UpdatePass {
				w.updates++
			}
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			if ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == herald.SignalPermit {
				w.signals++
			}
		}
	}
	return w
}
