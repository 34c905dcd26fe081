package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

// sendAll sends n events to endpoint through s, senders at a time, and returns their ids.
func sendAll(t *testing.T, s *starter.Client, endpoint string, n, senders int) []string {
	t.Helper()
	targets := make([]string, n)
	for i := range targets {
		targets[i] = endpoint
	}
	return sendTo(t, s, targets, senders)
}

// sendTo sends one event to each of targets (endpoint ids) through s, senders at a time,
// and returns their ids in the same order.
func sendTo(t *testing.T, s *starter.Client, targets []string, senders int) []string {
	t.Helper()
	ids := make([]string, len(targets))
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(targets); i = int(next.Add(1)) - 1 {
				res, err := s.Send(context.Background(), starter.Event{Type: "test.event", EndpointID: targets[i], Data: json.RawMessage(`{}`)})
				if err != nil {
					failed.Store(fmt.Errorf("send to %s: %w", targets[i], err))
					return
				}
				ids[i] = res.EventID
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		t.Fatal(err)
	}
	return ids
}

// TestBacklogLargerThanSlots: hundreds of deliveries wait behind one open circuit on a
// worker with 20 workflow-task and 20 local-activity slots. None of them holds a slot
// while it waits, so the endpoint workflow still answers at once, a healthy endpoint's
// events still go out, none of the waiting deliveries uses an attempt, and once the
// circuit closes they drain through the cap, never above it.
func TestBacklogLargerThanSlots(t *testing.T) {
	t.Parallel()
	const slots, backlog, capN = 20, 400, 5
	ctx := context.Background()
	s, err := testkit.Start(ctx, testkit.Options{Worker: worker.Options{DeliverySlots: slots}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	put := func(id, url string, o *herald.Overrides) {
		t.Helper()
		if _, err := s.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, URL: url, Overrides: o}); err != nil {
			t.Fatal(err)
		}
	}

	var healthy atomic.Bool
	var conc concurrency
	bq := newReceiver(t, func(n int, w http.ResponseWriter) {
		if healthy.Load() {
			conc.handler(20*time.Millisecond)(n, w)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	o := fast(3, time.Second)
	o.MaxInFlight = capN
	o.Breaker = &policy.BreakerOverride{ConsecutiveFailures: 1, ProbeDelay: duration.Duration(time.Hour), MaxProbeDelay: duration.Duration(time.Hour)}
	put("bq", bq.URL, o)
	ok := newReceiver(t, status(http.StatusOK))
	put("ok", ok.URL, fast(3, time.Second))

	// One failure opens bq's circuit.
	first := sendAll(t, s.Starter, "bq", 1, 1)
	waitFor(t, s.Starter, first[0], herald.StateWaitingRetry)
	eventually(t, "bq's circuit to open", func() bool {
		st, err := s.Starter.GetEndpoint(ctx, "bq")
		return err == nil && st.Circuit.State == policy.CircuitOpen
	})

	ids := sendAll(t, s.Starter, "bq", backlog, 16)
	eventually(t, "the backlog to queue at bq", func() bool {
		st, err := s.Starter.GetEndpoint(ctx, "bq")
		return err == nil && st.Queue >= backlog
	})

	// The endpoint workflow answers, and takes a change, while the backlog waits. Starved
	// of slots it would never answer; a loaded machine only makes it slower (the put alone
	// waits 1.1 s for read-your-writes): 30 s tells the two apart.
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	began := time.Now()
	_, err = s.Starter.GetEndpoint(qctx, "bq")
	cancel()
	if err != nil {
		t.Fatalf("endpoint get with %d waiting: %v", backlog, err)
	}
	t.Logf("endpoint get with %d waiting: %s", backlog, time.Since(began))
	uctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	began = time.Now()
	_, err = s.Starter.PutEndpoint(uctx, herald.PutEndpointRequest{ID: "bq", Overrides: &herald.Overrides{Timeout: herald.Duration(4 * time.Second)}})
	cancel()
	if err != nil {
		t.Fatalf("endpoint put with %d waiting: %v", backlog, err)
	}
	t.Logf("endpoint put with %d waiting: %s", backlog, time.Since(began))

	// A healthy endpoint's events go out meanwhile.
	for _, id := range sendAll(t, s.Starter, "ok", 20, 4) {
		waitFor(t, s.Starter, id, herald.StateDelivered)
	}

	// Nobody waiting used an attempt; bq saw the one request that opened the circuit.
	for _, id := range ids[:50] {
		st, err := s.Starter.Status(ctx, starter.Ref{EventID: id})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Attempts) != 0 || st.State != herald.StateWaitingEndpoint {
			t.Fatalf("waiting delivery %s: state %s, %d attempts; want waiting_endpoint and none", id, st.State, len(st.Attempts))
		}
	}
	if n := len(bq.requests()); n != 1 {
		t.Errorf("bq saw %d requests while its circuit was open, want 1", n)
	}

	// Recovered and closed by hand: the backlog drains through the cap.
	healthy.Store(true)
	if _, err := s.Starter.ResetCircuit(ctx, "bq"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		waitFor(t, s.Starter, id, herald.StateDelivered)
	}
	if p := conc.peak.Load(); p > capN {
		t.Errorf("the drain reached %d concurrent requests, cap is %d", p, capN)
	}
	// First come, first served, give or take: the backlog's first quarter (in the order it
	// was sent) reached the receiver ahead of its last quarter, on the whole.
	inBacklog := map[string]bool{}
	for _, id := range ids {
		inBacklog[id] = true
	}
	rank := map[string]int{}
	for _, r := range bq.requests() {
		if id := r.Header.Get("webhook-id"); inBacklog[id] {
			if _, ok := rank[id]; !ok {
				rank[id] = len(rank)
			}
		}
	}
	if len(rank) != backlog {
		t.Errorf("the receiver saw %d distinct backlog events, want %d", len(rank), backlog)
	}
	mean := func(ids []string) float64 {
		sum := 0
		for _, id := range ids {
			sum += rank[id]
		}
		return float64(sum) / float64(len(ids))
	}
	early, late := mean(ids[:backlog/4]), mean(ids[backlog*3/4:])
	if early >= late {
		t.Errorf("drain order: the first quarter sent came at mean rank %.0f, the last at %.0f: want the first ahead", early, late)
	}
	t.Logf("drained %d deliveries, peak concurrency %d (cap %d); mean rank of the first quarter %.0f, the last %.0f",
		backlog, conc.peak.Load(), capN, early, late)

	// The drain hands out passes from the worker, by update: no signal, and no task of the
	// endpoint workflow's, per woken delivery. A sample of the backlog says how each was woken.
	var byUpdate, bySignal int
	for _, id := range ids[backlog/2 : backlog/2+50] {
		w := wokenBy(t, s.Client, herald.DeliveryID(herald.DefaultTenant, id))
		byUpdate += w.updates
		bySignal += w.signals
	}
	t.Logf("of 50 drained deliveries: %d passes taken by update, %d permits by signal", byUpdate, bySignal)
	if byUpdate < 45 {
		t.Errorf("of 50 drained deliveries, %d took a pass by update (%d a permit signal): want nearly all by update", byUpdate, bySignal)
	}
}

// TestColdEndpointsTwoWorkers: many endpoints with a few events each, two workers, no
// eager start (so both workers take deliveries). Healthy endpoints stay within the cap
// plus each worker's spare permits (policy.SparePermits); failing ones open their circuit
// and get no more requests than each worker's own trigger allows.
func TestColdEndpointsTwoWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	secondWorker(t, 200*time.Millisecond)
	lazy := starter.New(shared.client, starter.Options{}) // no eager start: matching spreads the work

	const healthyN, failingN, each, capN, threshold = 60, 20, 6, 4, 3
	type ep struct {
		id   string
		conc *concurrency
		rcv  *receiver
	}
	var eps []ep
	for i := range healthyN {
		c := &concurrency{}
		r := newReceiver(t, c.handler(400*time.Millisecond))
		o := fast(3, time.Second)
		o.MaxInFlight = capN
		id := fmt.Sprintf("cold-%d", i)
		putEndpoint(t, id, r.URL, o)
		eps = append(eps, ep{id, c, r})
	}
	var bad []ep
	for i := range failingN {
		r := newReceiver(t, status(http.StatusInternalServerError))
		o := fast(3, time.Second)
		o.MaxInFlight = capN
		o.Breaker = &policy.BreakerOverride{ConsecutiveFailures: threshold, ProbeDelay: duration.Duration(time.Hour), MaxProbeDelay: duration.Duration(time.Hour)}
		id := fmt.Sprintf("cold-bad-%d", i)
		putEndpoint(t, id, r.URL, o)
		bad = append(bad, ep{id: id, rcv: r})
	}

	// Each endpoint's events go out together, from 16 senders over every endpoint.
	var targets []string
	for _, e := range append(append([]ep{}, eps...), bad...) {
		for range each {
			targets = append(targets, e.id)
		}
	}
	sent := sendTo(t, lazy, targets, 16)
	for _, id := range sent[:healthyN*each] {
		waitState(t, id, herald.StateDelivered)
	}
	bound := capN + 2*policy.SparePermits(capN)
	peak := int64(0)
	ours := map[string]bool{}
	for _, id := range sent {
		ours[id] = true
	}
	for _, e := range eps {
		peak = max(peak, e.conc.peak.Load())
		if p := e.conc.peak.Load(); p > int64(bound) {
			t.Errorf("%s saw %d concurrent requests: cap %d plus one spare permit per worker is %d", e.id, p, capN, bound)
		}
		// Delivery is at least once: an attempt that outran its timeout on a starved
		// machine is made again with the same webhook-id. Every event arrives, none twice
		// more than the ladder allows.
		// Only this test's events count: a port freed by another test's receiver may be
		// reused here while that test's deliveries still retry to it.
		mine := map[string]bool{}
		for i, target := range targets {
			if target == e.id {
				mine[sent[i]] = true
			}
		}
		var reqs []request
		ids := map[string]int{}
		for _, r := range e.rcv.requests() {
			switch id := r.Header.Get("webhook-id"); {
			case mine[id]:
				ids[id]++
				reqs = append(reqs, r)
			case ours[id]:
				t.Errorf("%s received event %s, which was sent to another endpoint", e.id, id)
			}
		}
		if len(ids) != each || len(reqs) > each*3 {
			t.Errorf("%s saw %d requests for %d distinct events; want %d events, at most 3 attempts each", e.id, len(reqs), len(ids), each)
		} else if len(reqs) > each {
			t.Logf("%s: %d requests for %d events (attempts made again after a timeout)", e.id, len(reqs), each)
		}
	}
	// Each worker stops at its own trigger; attempts already running at either still land.
	most := 2 * (threshold + capN - 1)
	for _, e := range bad {
		eventually(t, e.id+"'s circuit to open", func() bool {
			st, err := shared.starter.GetEndpoint(ctx, e.id)
			return err == nil && st.Circuit.State == policy.CircuitOpen
		})
		if n := len(e.rcv.requests()); n > most {
			t.Errorf("%s saw %d requests before its circuit held them: at most %d expected", e.id, n, most)
		}
	}
	t.Logf("%d cold endpoints × %d events on two workers: peak concurrency %d (cap %d, bound %d)", healthyN, each, peak, capN, bound)
}

// TestSmallCapColdEndpoint: an endpoint with a cap under 4 has no spare permits, so its
// first attempt waits for a lease; the lease is kept for it, and its events go out one at
// a time (cap 1), never more.
func TestSmallCapColdEndpoint(t *testing.T) {
	t.Parallel()
	var conc concurrency
	rcv := newReceiver(t, conc.handler(50*time.Millisecond))
	o := fast(3, time.Second)
	o.MaxInFlight = 1
	putEndpoint(t, "cap-one", rcv.URL, o)
	for _, id := range sendN(t, "cap-one", 5) {
		waitState(t, id, herald.StateDelivered)
	}
	if p := conc.peak.Load(); p != 1 {
		t.Errorf("peak concurrency %d at cap 1", p)
	}
}

// TestHotEndpointMoreThanSlots: 600 events at once to one endpoint whose cap (40) is more
// than the worker's 16 slots, so that attempts find no room under the lease while the
// endpoint has some, and wait for it at the gate (at most half the slots,
// policy.MaxHoldingAll) or on a brief durable timer. Every event is delivered, never above
// the cap, and a healthy endpoint's events go out meanwhile.
func TestHotEndpointMoreThanSlots(t *testing.T) {
	t.Parallel()
	const slots, events, capN = 16, 600, 40
	ctx := context.Background()
	s, err := testkit.Start(ctx, testkit.Options{Worker: worker.Options{DeliverySlots: slots}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	var conc concurrency
	hot := newReceiver(t, conc.handler(50*time.Millisecond))
	o := fast(3, time.Second)
	o.MaxInFlight = capN
	ok := newReceiver(t, status(http.StatusOK))
	for id, url := range map[string]string{"hot": hot.URL, "ok": ok.URL} {
		ov := fast(3, time.Second)
		if id == "hot" {
			ov = o
		}
		if _, err := s.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, URL: url, Overrides: ov}); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	done := make(chan []string)
	go func() { done <- sendAll(t, s.Starter, "hot", events, 32) }()
	for _, id := range sendAll(t, s.Starter, "ok", 20, 4) {
		waitFor(t, s.Starter, id, herald.StateDelivered)
	}
	healthy := time.Since(began)
	ids := <-done
	for _, id := range ids {
		waitFor(t, s.Starter, id, herald.StateDelivered)
	}
	if p := conc.peak.Load(); p > capN {
		t.Errorf("the hot endpoint saw %d concurrent requests, cap %d", p, capN)
	}
	if n := len(hot.requests()); n != events {
		t.Errorf("the hot endpoint saw %d requests for %d events", n, events)
	}
	t.Logf("%d events to one endpoint (cap %d) on %d slots delivered in %s, most concurrent %d; 20 to a healthy endpoint meanwhile in %s",
		events, capN, slots, time.Since(began).Round(time.Millisecond), conc.peak.Load(), healthy.Round(time.Millisecond))
}

// TestRateLimitedMoreThanSlots: 4 endpoints limited to 25 requests per second take 150
// events each, at once, on a worker with 8 slots. Attempts that come in a second's last
// 100 ms are admitted on the next second's share and wait for it inside their activities;
// those waits count against the gate's bound (half the slots, policy.MaxHoldingAll), the
// rest are booked on durable timers. Every event is delivered once, no endpoint gets more
// than its limit in any second (by webhook-timestamp), and a healthy endpoint's events go
// out meanwhile.
func TestRateLimitedMoreThanSlots(t *testing.T) {
	t.Parallel()
	const slots, endpoints, each, limit = 8, 4, 150, 25
	ctx := context.Background()
	s, err := testkit.Start(ctx, testkit.Options{Worker: worker.Options{DeliverySlots: slots}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	var rcvs []*receiver
	var targets []string
	for i := range endpoints {
		id := fmt.Sprintf("rated-%d", i)
		rcv := newReceiver(t, status(http.StatusOK))
		rcvs = append(rcvs, rcv)
		o := fast(3, time.Second)
		rate := limit
		o.RateLimit = &rate
		if _, err := s.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, URL: rcv.URL, Overrides: o}); err != nil {
			t.Fatal(err)
		}
		for range each {
			targets = append(targets, id)
		}
	}
	ok := newReceiver(t, status(http.StatusOK))
	if _, err := s.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "ok", URL: ok.URL, Overrides: fast(3, time.Second)}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	done := make(chan []string)
	go func() { done <- sendTo(t, s.Starter, targets, 32) }()
	for _, id := range sendAll(t, s.Starter, "ok", 20, 4) {
		waitFor(t, s.Starter, id, herald.StateDelivered)
	}
	healthy := time.Since(began)
	for _, id := range <-done {
		waitFor(t, s.Starter, id, herald.StateDelivered)
	}
	most := 0
	for i, rcv := range rcvs {
		reqs := rcv.requests()
		seen := map[string]bool{}
		for _, r := range reqs {
			id := r.Header.Get(signature.HeaderID)
			if seen[id] {
				t.Errorf("rated-%d: event %s received twice", i, id)
			}
			seen[id] = true
		}
		if len(seen) != each {
			t.Errorf("rated-%d saw %d events, want %d", i, len(seen), each)
		}
		worst, _ := checkSignedPerSecond(t, reqs, limit)
		most = max(most, worst)
	}
	bound := int64(policy.MaxHoldingAll(slots))
	if p := s.Worker.HoldingPeak(); p > bound {
		t.Errorf("%d attempts waited in their activities at once, bound %d", p, bound)
	}
	t.Logf("%d events to %d endpoints at %d/s each on %d slots delivered in %s, most in one second %d, most waiting in activities at once %d (bound %d); 20 to a healthy endpoint meanwhile in %s",
		endpoints*each, endpoints, limit, slots, time.Since(began).Round(time.Millisecond), most, s.Worker.HoldingPeak(), bound, healthy.Round(time.Millisecond))
}
