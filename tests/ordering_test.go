package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
)

// orderReceiver records, per ordering key, the sequence numbers of the events it answered
// 2xx to, first successful arrival per event only; fail decides each request's fate.
type orderReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	seen     map[string]bool  // event ids answered 2xx
	order    map[string][]int // key → seqs, in first successful arrival order
	requests int
}

// orderedData is the data of the events these tests send.
type orderedData struct {
	Key string `json:"key"`
	Seq int    `json:"seq"`
}

// answer says what the receiver does with a request: 0 for 200, else a status to answer,
// or -1 to hang past the attempt's timeout.
func newOrderReceiver(t *testing.T, answer func(d orderedData) int) *orderReceiver {
	t.Helper()
	r := &orderReceiver{seen: map[string]bool{}, order: map[string][]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var env struct {
			ID   string      `json:"id"`
			Data orderedData `json:"data"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.requests++
		r.mu.Unlock()
		switch code := answer(env.Data); {
		case code == -1:
			time.Sleep(1500 * time.Millisecond) // past the endpoint's 1 s timeout
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case code != 0:
			w.WriteHeader(code)
			return
		}
		r.mu.Lock()
		if !r.seen[env.ID] {
			r.seen[env.ID] = true
			r.order[env.Data.Key] = append(r.order[env.Data.Key], env.Data.Seq)
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *orderReceiver) delivered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// checkOrder fails t unless every key's events arrived in send order (0, 1, 2, ...), the
// first want of them at least.
func (r *orderReceiver) checkOrder(t *testing.T, keys []string, want int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		got := r.order[k]
		if len(got) < want {
			t.Errorf("key %s: %d events delivered, want %d", k, len(got), want)
		}
		for i, s := range got {
			if s != i {
				t.Errorf("key %s: arrival %d is event %d (order %v)", k, i, s, got)
				break
			}
		}
	}
}

// orderedOverrides is a scaled-down ladder (1 s waits, many attempts), a 1 s attempt
// timeout and a breaker that does not trip on random failures.
func orderedOverrides(attempts int, onDead string) *herald.Overrides {
	o := fast(attempts, time.Second)
	o.Timeout = herald.Duration(time.Second)
	o.MaxInFlight = 100
	o.OrderingOnDeadLetter = onDead
	b := policy.BreakerOverride{ConsecutiveFailures: 10_000, VolumeFailures: 10_000,
		ProbeDelay: duration.Duration(time.Second), MaxProbeDelay: duration.Duration(2 * time.Second)}
	o.Breaker = &b
	return o
}

// sendOrdered sends perKey events to each key of keys, in order within a key (seq 0, 1,
// ...) and keys in parallel, and returns their event ids by key.
func sendOrdered(t *testing.T, s *starter.Client, endpoint string, keys []string, perKey int) map[string][]string {
	t.Helper()
	ids := make(map[string][]string, len(keys))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	sem := make(chan struct{}, 16)
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []string
			for seq := range perKey {
				data, _ := json.Marshal(orderedData{Key: k, Seq: seq})
				sem <- struct{}{}
				res, err := s.Send(context.Background(), starter.Event{
					ID: fmt.Sprintf("evt_%s_%s_%d", endpoint, k, seq), EndpointID: endpoint, Type: "test.ordered", Data: data, OrderingKey: k,
				})
				<-sem
				if err != nil {
					errs <- fmt.Errorf("send %s/%d: %w", k, seq, err)
					return
				}
				mine = append(mine, res.EventID)
			}
			mu.Lock()
			ids[k] = mine
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids
}

func keyNames(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	return keys
}

// waitDelivered waits until r has answered n events 2xx, for at most d.
func waitDelivered(t *testing.T, r *orderReceiver, n int, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); r.delivered() < n; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered after %s", r.delivered(), n, d)
		}
	}
}

// TestOrderedUnderFailuresAndKill: events over many keys to one endpoint whose receiver
// fails at random (503, and hangs past the timeout), with a worker process killed
// (SIGKILL) mid-run and another started: per key, the receiver saw the events in send
// order.
func TestOrderedUnderFailuresAndKill(t *testing.T) {
	t.Parallel()
	events, nKeys := orderedSize()
	proc := startWorkerProcess(t)
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(26, 1))
	rcv := newOrderReceiver(t, func(orderedData) int {
		rmu.Lock()
		p := rng.Float64()
		rmu.Unlock()
		switch {
		case p < 0.03:
			return -1
		case p < 0.25:
			return http.StatusServiceUnavailable
		}
		return 0
	})
	putEndpoint(t, "ordered-kill", rcv.URL, orderedOverrides(50, ""))
	lazy := starter.New(shared.client, starter.Options{}) // no eager start: both workers take deliveries
	keys := keyNames(nKeys)
	start := time.Now()
	go func() {
		for rcv.delivered() < events/4 {
			time.Sleep(50 * time.Millisecond)
		}
		_ = proc.Process.Kill()
		startWorkerProcess(t)
	}()
	sendOrdered(t, lazy, "ordered-kill", keys, events/nKeys)
	waitDelivered(t, rcv, events, 4*time.Minute)
	rcv.checkOrder(t, keys, events/nKeys)
	rcv.mu.Lock()
	t.Logf("%d events over %d keys delivered in order in %s, %d requests", events, nKeys, time.Since(start).Round(time.Second), rcv.requests)
	rcv.mu.Unlock()
}

// TestOrderedBlockedHead: a dead letter at the head of one key (block, the default)
// holds that key only: the other keys are delivered, the key's next event waits for the
// head and says so, a resend changes nothing, and a replay of the head delivers the key
// in order.
func TestOrderedBlockedHead(t *testing.T) {
	t.Parallel()
	var broken sync.Map
	broken.Store("k0/0", true)
	rcv := newOrderReceiver(t, func(d orderedData) int {
		if _, ok := broken.Load(fmt.Sprintf("%s/%d", d.Key, d.Seq)); ok {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	putEndpoint(t, "ordered-block", rcv.URL, orderedOverrides(2, ""))
	keys := keyNames(50) // one blocked, the other 49 delivered (issue 26)
	const perKey = 4
	ids := sendOrdered(t, shared.starter, "ordered-block", keys, perKey)
	waitDelivered(t, rcv, (len(keys)-1)*perKey, time.Minute)
	rcv.checkOrder(t, keys[1:], perKey)

	head := waitState(t, ids["k0"][0], herald.StateDeadLetter)
	if head.Ordering == nil || !head.Ordering.Blocking || head.Ordering.Key != "k0" {
		t.Errorf("head: ordering %+v, want blocking key k0", head.Ordering)
	}
	eventually(t, "the dead letter to list the key it holds", func() bool {
		dls, err := shared.starter.ListDeadLetters(context.Background(), herald.DeadLetterFilter{EndpointID: "ordered-block", Tenant: herald.DefaultTenant})
		return err == nil && len(dls) == 1 && dls[0].HoldsKey == "k0"
	})
	next := waitState(t, ids["k0"][1], herald.StateWaitingTurn)
	if next.Ordering == nil || next.Ordering.WaitingFor != ids["k0"][0] || next.Ordering.Seq != 2 || len(next.Attempts) != 0 {
		t.Errorf("next: ordering %+v, %d attempts; want waiting for %s, none", next.Ordering, len(next.Attempts), ids["k0"][0])
	}
	// A resend of an event of the key: the same delivery, no new place.
	data, _ := json.Marshal(orderedData{Key: "k0", Seq: 2})
	res, err := shared.starter.Send(context.Background(), starter.Event{ID: ids["k0"][2], EndpointID: "ordered-block", Type: "test.ordered", Data: data, OrderingKey: "k0"})
	if err != nil || res.WorkflowID != herald.DeliveryID("", ids["k0"][2]) {
		t.Fatalf("resend: %+v, %v", res, err)
	}
	broken.Delete("k0/0")
	if _, err := shared.starter.Replay(context.Background(), starter.Ref{EventID: ids["k0"][0]}); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, rcv, len(keys)*perKey, time.Minute)
	rcv.checkOrder(t, keys, perKey)
}

// TestOrderedSendFailedAfterAppend: a send that fails after its append and before its
// delivery starts leaves a tail that never starts (injected here: the key's sequencer
// appends an id nobody starts). The next event of the key does not take the missing one
// for a closed predecessor and pass the blocked head: it waits for the head, and goes once
// the head is replayed and delivered.
func TestOrderedSendFailedAfterAppend(t *testing.T) {
	t.Parallel()
	var broken sync.Map
	broken.Store("gap/0", true)
	rcv := newOrderReceiver(t, func(d orderedData) int {
		if _, ok := broken.Load(fmt.Sprintf("%s/%d", d.Key, d.Seq)); ok {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	const ep = "ordered-gap"
	putEndpoint(t, ep, rcv.URL, orderedOverrides(2, ""))
	send := func(seq int, id string) {
		t.Helper()
		data, _ := json.Marshal(orderedData{Key: "gap", Seq: seq})
		if _, err := shared.starter.Send(context.Background(), starter.Event{ID: id, EndpointID: ep, Type: "test.ordered", Data: data, OrderingKey: "gap"}); err != nil {
			t.Fatal(err)
		}
	}
	send(0, "evt_gap_head")
	waitState(t, "evt_gap_head", herald.StateDeadLetter)

	// The failed send: appended, never started.
	h, err := shared.client.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{
		WorkflowID: herald.SequencerWorkflowID("", ep, "gap"), UpdateName: herald.UpdateOrderingAppend,
		Args: []any{herald.OrderingAppend{Delivery: herald.DeliveryID("", "evt_gap_lost")}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Get(context.Background(), nil); err != nil {
		t.Fatal(err)
	}

	send(1, "evt_gap_next")
	next := waitState(t, "evt_gap_next", herald.StateWaitingTurn)
	if next.Ordering == nil || next.Ordering.WaitingFor != "evt_gap_head" || len(next.Attempts) != 0 {
		t.Errorf("next: ordering %+v, %d attempts; want waiting for evt_gap_head (the missing one passed over), none", next.Ordering, len(next.Attempts))
	}
	broken.Delete("gap/0")
	if _, err := shared.starter.Replay(context.Background(), starter.Ref{EventID: "evt_gap_head"}); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, rcv, 2, time.Minute)
	rcv.checkOrder(t, []string{"gap"}, 2)
}

// TestOrderedSkip: under skip, a dead letter at the head lets the key go on, and its
// status says it was passed.
func TestOrderedSkip(t *testing.T) {
	t.Parallel()
	rcv := newOrderReceiver(t, func(d orderedData) int {
		if d.Key == "k0" && d.Seq == 1 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	putEndpoint(t, "ordered-skip", rcv.URL, orderedOverrides(2, herald.OrderingSkip))
	ids := sendOrdered(t, shared.starter, "ordered-skip", []string{"k0"}, 5)
	waitDelivered(t, rcv, 4, time.Minute)
	rcv.mu.Lock()
	got := slices.Clone(rcv.order["k0"])
	rcv.mu.Unlock()
	if !slices.Equal(got, []int{0, 2, 3, 4}) {
		t.Errorf("arrivals %v, want [0 2 3 4] (1 dead-lettered and passed)", got)
	}
	dead := waitState(t, ids["k0"][1], herald.StateDeadLetter)
	if dead.Ordering == nil || !dead.Ordering.Passed || dead.Ordering.Blocking {
		t.Errorf("dead letter: ordering %+v, want passed", dead.Ordering)
	}
}

// TestRecordOrderedHistories records the histories of ordered deliveries (run with
// -record): delivery_ordered_waited.json waits for its predecessor's turn, takes it and
// hands it on; delivery_ordered_blocked_replayed.json is a head dead letter that blocks
// its key, is replayed, delivered, and hands the turn on; ordering_sequencer.json is the
// key's sequencer.
func TestRecordOrderedHistories(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	fail := true
	var mu sync.Mutex
	rcv := newOrderReceiver(t, func(d orderedData) int {
		mu.Lock()
		defer mu.Unlock()
		if fail && d.Seq == 0 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	putEndpoint(t, "rec-ordered", rcv.URL, orderedOverrides(2, ""))
	ids := sendOrdered(t, shared.starter, "rec-ordered", []string{"rec"}, 3)
	waitState(t, ids["rec"][0], herald.StateDeadLetter)
	waitState(t, ids["rec"][1], herald.StateWaitingTurn)
	mu.Lock()
	fail = false
	mu.Unlock()
	if _, err := shared.starter.Replay(context.Background(), starter.Ref{EventID: ids["rec"][0]}); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, rcv, 3, time.Minute)
	for _, id := range ids["rec"] {
		waitState(t, id, herald.StateDelivered)
	}
	save(t, "delivery_ordered_blocked_replayed.json", herald.DeliveryID("", ids["rec"][0]))
	save(t, "delivery_ordered_waited.json", herald.DeliveryID("", ids["rec"][1]))
	save(t, "ordering_sequencer.json", herald.SequencerWorkflowID("", "rec-ordered", "rec"))
}

// sendBurst sends n events of key at once (n senders, one event each) to endpoint and
// returns their event ids by seq (the data's seq, not the order the sequencer took them).
func sendBurst(t *testing.T, s *starter.Client, endpoint, key string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	run := time.Now().UnixNano() % 1e9 // new events on each run of the test (-count)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, _ := json.Marshal(orderedData{Key: key, Seq: i})
			res, err := s.Send(context.Background(), starter.Event{
				ID: fmt.Sprintf("evt_%s_%s_%d_%d", endpoint, key, run, i), EndpointID: endpoint, Type: "test.ordered", Data: data, OrderingKey: key,
			})
			if err != nil {
				t.Errorf("send %s/%d: %v", key, i, err)
				return
			}
			ids[i] = res.EventID
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

// TestRecordOrderedBurstHistory records (with -record) the sequencer of a key that six
// sends reach at once (ordering_sequencer_burst.json): appends whose tail is not started
// yet, because its send is still waiting for its own answer; and a delivery placed after
// such a one, which looked for it itself (delivery_ordered_starting.json).
func TestRecordOrderedBurstHistory(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	rcv := newOrderReceiver(t, func(orderedData) int { return 0 })
	putEndpoint(t, "rec-burst", rcv.URL, orderedOverrides(2, ""))
	ids := sendBurst(t, shared.starter, "rec-burst", "burst", 6)
	waitDelivered(t, rcv, 6, time.Minute)
	save(t, "ordering_sequencer_burst.json", herald.SequencerWorkflowID("", "rec-burst", "burst"))
	// One delivery that looked for a predecessor its sequencer had not seen started.
	for _, id := range ids {
		wf := herald.DeliveryID("", id)
		waitState(t, id, herald.StateDelivered)
		var in herald.DeliveryInput
		start := workflowHistory(t, wf)[0].GetWorkflowExecutionStartedEventAttributes()
		if err := converter.GetDefaultDataConverter().FromPayloads(start.GetInput(), &in); err != nil {
			t.Fatal(err)
		}
		if in.Ordering != nil && len(in.Ordering.Starting) > 0 {
			save(t, "delivery_ordered_starting.json", wf)
			return
		}
	}
	t.Fatal("no delivery of the burst was placed after one not seen started: record again")
}

// TestOrderedBurst: sends of one key at once (more than the sequencer's workflow task
// answers at a time) are all accepted without one waiting for the one before it to start,
// and delivered in the order the sequencer placed them, though a fifth of the requests
// fail and are retried; the sequencer sets no timer but its
// idle one (before orderingChainVersion it waited a second for each tail not yet started,
// and every send of the key with it).
func TestOrderedBurst(t *testing.T) {
	t.Parallel()
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(26, 2))
	rcv := newOrderReceiver(t, func(orderedData) int {
		rmu.Lock()
		defer rmu.Unlock()
		if rng.Float64() < 0.2 {
			return http.StatusServiceUnavailable // a retry a second later: the key waits
		}
		return 0
	})
	const ep, key, n = "ordered-burst", "burst", 60
	putEndpoint(t, ep, rcv.URL, orderedOverrides(5, ""))
	start := time.Now()
	ids := sendBurst(t, shared.starter, ep, key, n)
	sent := time.Since(start)
	waitDelivered(t, rcv, n, 2*time.Minute)
	t.Logf("%d sends of one key at once: accepted in %s, delivered in %s", n, sent.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// The sequencer's numbers, by the data's seq: arrivals must follow them.
	place := make([]int64, n)
	for i, id := range ids {
		st := waitState(t, id, herald.StateDelivered)
		if st.Ordering == nil || st.Ordering.Seq == 0 {
			t.Fatalf("%s: ordering %+v, want a place", id, st.Ordering)
		}
		place[i] = st.Ordering.Seq
	}
	rcv.mu.Lock()
	arrived := slices.Clone(rcv.order[key])
	rcv.mu.Unlock()
	for j := 1; j < len(arrived); j++ {
		if a, b := place[arrived[j-1]], place[arrived[j]]; b < a {
			t.Errorf("arrival %d is #%d, after #%d: not in the sequencer's order", j, b, a)
		}
	}
	var waits []string
	for _, ev := range workflowHistory(t, herald.SequencerWorkflowID("", ep, key)) {
		if a := ev.GetTimerStartedEventAttributes(); a != nil && a.GetStartToFireTimeout().AsDuration() < time.Minute {
			waits = append(waits, a.GetStartToFireTimeout().AsDuration().String())
		}
	}
	if len(waits) > 0 {
		t.Errorf("the sequencer waited %v: an append waited for the tail before it to start", waits)
	}
}
