package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// TestWaitingDeliverySurvivesRestart stops the whole stack (server and worker) while a
// delivery waits for its retry, starts it again on the same SQLite file, and the delivery
// carries on.
func TestWaitingDeliverySurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "temporal.db")
	rcv := newReceiver(t, status(http.StatusServiceUnavailable))
	opts := testkit.Options{Server: devserver.Options{DBFile: db}}

	first, err := testkit.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := signature.GenerateSecret()
	if _, err := first.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "restart", URL: rcv.URL, Secret: sec, Overrides: fast(3, 3*time.Second)}); err != nil {
		first.Stop()
		t.Fatal(err)
	}
	res, err := first.Starter.Send(ctx, starter.Event{Type: "test.event", EndpointID: "restart", Data: json.RawMessage(`{"n":1}`)})
	if err != nil {
		first.Stop()
		t.Fatal(err)
	}
	waitFor(t, first.Starter, res.EventID, herald.StateWaitingRetry)
	first.Stop()

	rcv.setAnswer(status(http.StatusOK))
	second, err := testkit.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	st := waitFor(t, second.Starter, res.EventID, herald.StateDelivered)
	if len(st.Attempts) != 2 || len(rcv.requests()) != 2 {
		t.Errorf("after the restart: %d attempts recorded, %d requests seen; want 2 and 2", len(st.Attempts), len(rcv.requests()))
	}
}

// waitFor polls s's status query until the delivery reaches state.
func waitFor(t *testing.T, s interface {
	Status(context.Context, starter.Ref) (starter.Report, error)
}, eventID string, state herald.State) herald.Status {
	t.Helper()
	var st starter.Report
	var err error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st, err = s.Status(context.Background(), starter.Ref{EventID: eventID}); err == nil && st.State == state {
			return st.Status
		}
	}
	t.Fatalf("event %s never reached %s (last: %s, %v)", eventID, state, st.State, err)
	return st.Status
}
