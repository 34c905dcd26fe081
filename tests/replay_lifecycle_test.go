package tests

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// TestRecordLifecycleHistories records the histories of an endpoint's lifecycle (disabled
// by hand, enabled again) and of the deliveries it changes (skipped; dead-lettered at the
// disabled endpoint, emitting an operational event, and recovered by a replay), for the
// replay test. It runs only with -record:
//
//	go test ./tests -run TestRecordLifecycleHistories -record
func TestRecordLifecycleHistories(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusServiceUnavailable))
	putEndpoint(t, "rec-lifecycle", rcv.URL, fast(3, 3*time.Second, 3*time.Second))
	pending := sendOne(t, "rec-lifecycle")
	waitState(t, pending, herald.StateWaitingRetry)
	if _, err := shared.starter.DisableEndpoint(ctx, "rec-lifecycle", "recorded"); err != nil {
		t.Fatal(err)
	}
	skipped := sendOne(t, "rec-lifecycle")
	waitState(t, skipped, herald.StateSkipped)
	waitState(t, pending, herald.StateDeadLetter)
	rcv.setAnswer(status(http.StatusOK))
	if _, err := shared.starter.EnableEndpoint(ctx, "rec-lifecycle"); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.starter.Replay(ctx, starter.Ref{Tenant: herald.DefaultTenant, EventID: pending}); err != nil {
		t.Fatal(err)
	}
	waitState(t, pending, herald.StateDelivered)
	save(t, "delivery_skipped_disabled.json", herald.DeliveryID(herald.DefaultTenant, skipped))
	save(t, "delivery_dead_letter_disabled_replayed.json", herald.DeliveryID(herald.DefaultTenant, pending))
	save(t, "endpoint_disabled_enabled.json", herald.EndpointWorkflowID("rec-lifecycle"))
}
