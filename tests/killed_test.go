package tests

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// TestWorkerKilledMidBurst: a worker process is killed (SIGKILL, no goodbye) while it has
// attempts in flight. Every event is still delivered, each with one attempt on its record:
// what the dead worker was doing runs again on the other worker, with the same attempt
// number (the receiver may see that request twice, with the same webhook-id), and nothing
// waits on the dead worker's permits.
func TestWorkerKilledMidBurst(t *testing.T) {
	t.Parallel()
	proc := startWorkerProcess(t)
	var conc concurrency
	var seen atomic.Int64
	hold := conc.handler(300 * time.Millisecond)
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		seen.Add(1)
		hold(n, w)
	})
	o := fast(3, time.Second)
	o.MaxInFlight = 50
	putEndpoint(t, "killed", rcv.URL, o)
	lazy := starter.New(shared.client, starter.Options{}) // no eager start: both workers take events

	const n = 200
	ids := sendAll(t, lazy, "killed", n, 16)
	eventually(t, "attempts in flight", func() bool { return seen.Load() >= 40 })
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	for _, id := range ids {
		st := waitState(t, id, herald.StateDelivered)
		if len(st.Attempts) != 1 || st.Attempts[0].Number != 1 {
			t.Errorf("event %s: %d attempts on record, want one (attempt 1)", id, len(st.Attempts))
		}
	}
	got := len(rcv.requests())
	if got < n {
		t.Fatalf("receiver saw %d requests for %d events", got, n)
	}
	if p := conc.peak.Load(); p > 50+2*4 {
		t.Errorf("peak concurrency %d: cap 50 plus one worker's spare permits each is 58", p)
	}
	st, err := shared.starter.GetEndpoint(context.Background(), "killed")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("all %d delivered %s after the kill; %d requests (%d made again), peak concurrency %d, in flight now %d",
		n, time.Since(killedAt).Round(time.Second), got, got-n, conc.peak.Load(), st.InFlight)
}
