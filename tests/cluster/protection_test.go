package cluster

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// sendMany sends n events to endpoint through the API, returning their ids.
func sendMany(t *testing.T, c *cluster, endpoint string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = send(t, c, endpoint, map[string]int{"n": i})
	}
	return ids
}

// waitAll waits until every event is delivered.
func waitAll(t *testing.T, c *cluster, ids []string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for _, id := range ids {
		waitState(t, c, id, "delivered", time.Until(deadline))
	}
}

// waitInFlight waits until the endpoint has no permits out: every lease is back.
func waitInFlight(t *testing.T, c *cluster, endpoint string) {
	t.Helper()
	if err := waitFor(endpoint+" leases back", 2*time.Minute, func() error {
		if e := getEndpoint(t, c, endpoint); e.InFlight != 0 {
			return fmt.Errorf("in flight %d", e.InFlight)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCapAcrossWorkers: three worker processes share an endpoint's cap of 2; the receiver
// never sees more than 2 requests at once, and every event is delivered.
func TestCapAcrossWorkers(t *testing.T) {
	c := need(t)
	rcv := newReceiver(t, 200*time.Millisecond, status(http.StatusOK))
	put(t, c, "capped", rcv.URL, "--max-in-flight", "2")
	ids := sendMany(t, c, "capped", 30)
	waitAll(t, c, ids, 3*time.Minute)
	if p := rcv.peak.Load(); p > 2 {
		t.Fatalf("receiver saw %d requests at once; the cap is 2", p)
	}
	if d := rcv.distinct(); d != len(ids) {
		t.Fatalf("receiver saw %d distinct events, want %d", d, len(ids))
	}
	waitInFlight(t, c, "capped")
}

// TestBreakerOnlyProbesWhileOpen: failures open the circuit; while it is open the receiver
// sees only probes, one at a time, and deliveries wait without spending attempts; once the
// receiver recovers every event is delivered and the circuit closes.
func TestBreakerOnlyProbesWhileOpen(t *testing.T) {
	c := need(t)
	var healthy atomic.Bool
	rcv := newReceiver(t, 0, func(_ int, w http.ResponseWriter) {
		if healthy.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	put(t, c, "breaker", rcv.URL, "--schedule", "8s", "--attempts", "3", "--breaker-consecutive", "5",
		"--probe-delay", "2s", "--max-probe-delay", "4s", "--half-open-attempts", "1")
	first := sendMany(t, c, "breaker", 5)
	if err := waitFor("circuit open", 2*time.Minute, func() error {
		if s := getEndpoint(t, c, "breaker").Circuit.State; s != "open" {
			return fmt.Errorf("circuit %s", s)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	atOpen := rcv.count()
	rcv.peak.Store(0)
	later := sendMany(t, c, "breaker", 10)
	for _, id := range later {
		st := waitState(t, c, id, "waiting_endpoint", time.Minute)
		if len(st.Attempts) != 0 {
			t.Errorf("held delivery %s has %d attempts: a delivery waiting on an open circuit spends none", id, len(st.Attempts))
		}
	}
	// Two probes, both failed: 10 waiting deliveries made only those two requests.
	if err := waitFor("two probes", time.Minute, func() error {
		if n := rcv.count() - atOpen; n < 2 {
			return fmt.Errorf("%d probes", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	probes := rcv.count() - atOpen
	if st := getEndpoint(t, c, "breaker").Circuit.State; st == "closed" {
		t.Fatalf("circuit closed while every probe failed")
	}
	if p := rcv.peak.Load(); p > 1 {
		t.Fatalf("%d requests at once while the circuit was open: only one probe at a time", p)
	}
	healthy.Store(true)
	waitAll(t, c, append(first, later...), 3*time.Minute)
	if s := getEndpoint(t, c, "breaker").Circuit.State; s != "closed" {
		t.Errorf("circuit %s after recovery, want closed", s)
	}
	t.Logf("%d requests before the circuit opened, %d failed probes while it was open, %d in all", atOpen, probes, rcv.count())
}

// TestWorkerKilledMidBurst: one of three worker processes is killed with SIGKILL while
// attempts are in flight. Every event is still delivered, and the dead worker's leases of
// the endpoint's permits come back.
func TestWorkerKilledMidBurst(t *testing.T) {
	c := need(t)
	rcv := newReceiver(t, 500*time.Millisecond, status(http.StatusOK))
	put(t, c, "killed", rcv.URL, "--max-in-flight", "10")
	// Sent while the worker dies: the burst is under way before and after the kill.
	sent := make(chan []string, 1)
	go func() {
		var ids []string
		for i := range 80 {
			var res struct {
				ID string `json:"id"`
			}
			if _, err := c.call("POST", "/v1/events", map[string]any{"type": "test.event", "endpoint_id": "killed", "data": i}, &res); err != nil {
				t.Error(err)
				break
			}
			ids = append(ids, res.ID)
		}
		sent <- ids
	}()
	if err := waitFor("attempts under way", time.Minute, func() error {
		if rcv.count() < 5 {
			return fmt.Errorf("%d requests", rcv.count())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.kill("herald-worker-1", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := rcv.count()
	ids := <-sent
	if len(ids) != 80 {
		t.Fatalf("sent %d events of 80", len(ids))
	}
	waitAll(t, c, ids, 4*time.Minute)
	if d := rcv.distinct(); d != len(ids) {
		t.Fatalf("receiver saw %d distinct events, want %d", d, len(ids))
	}
	waitInFlight(t, c, "killed")
	t.Logf("killed a worker after %d requests; %d requests for %d events", killedAt, rcv.count(), len(ids))
	// Back to three workers for the tests that follow.
	if err := c.startWorker("herald-worker-1"); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryRestartMidLadder: the history service is stopped and started again while a
// delivery waits between attempts; the delivery continues and is delivered, nothing lost.
func TestHistoryRestartMidLadder(t *testing.T) {
	c := need(t)
	rcv := newReceiver(t, 0, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	put(t, c, "history-restart", rcv.URL, "--schedule", "15s", "--attempts", "3", "--breaker-consecutive", "50")
	id := send(t, c, "history-restart", "survive")
	waitState(t, c, id, "waiting_retry", time.Minute)
	if err := c.kill("temporal-history", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := c.startTemporal("history"); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, c, id, "delivered", 3*time.Minute)
	if len(st.Attempts) != 2 || rcv.count() != 2 {
		t.Fatalf("%d attempts on record, %d requests: want the failed one and the delivery", len(st.Attempts), rcv.count())
	}
}
