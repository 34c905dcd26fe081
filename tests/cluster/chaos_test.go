package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The chaos run: mixed traffic through two `herald serve`s while processes of every kind are
// killed, then an audit of what the receivers saw (chaos_audit_test.go). Its verdict rests on
// the audit's invariants, never on timings: the durations below only shape the load.
var (
	chaosFor        = flag.Duration("chaos-for", 2*time.Minute, "how long TestChaos sends traffic and kills processes")
	chaosSettle     = flag.Duration("chaos-settle", 0, "upper bound on TestChaos's settle after the traffic (0: 4m, plus a tenth of -chaos-for)")
	chaosReportFile = flag.String("chaos-report", "", "file TestChaos writes its report to (markdown)")
	chaosSeed       = flag.Uint64("chaos-seed", 0, "seed of TestChaos's choices (0: from the clock; the test logs it)")
)

// chaosKinds are the kinds of process the chaos loop kills.
var chaosKinds = []string{"worker", "serve", "frontend", "history", "matching", "temporal-worker", "postgresql"}

// chaosEndpoint is one endpoint of the run: its receiver, its rule for the audit and how it
// is registered.
type chaosEndpoint struct {
	rule endpointRule
	rcv  *chaosReceiver
	args []string // endpoint put flags
}

// chaosRun is one chaos run's state.
type chaosRun struct {
	c     *cluster
	tag   string
	start time.Time
	http  *http.Client
	apis  []string

	mu        sync.Mutex
	rnd       *rand.Rand
	wants     []want
	faults    []fault
	replays   map[pair][]time.Time
	sentTo    map[pair]bool
	down      map[string]bool // processes the chaos loop killed and has not started again
	procLocks map[string]*sync.Mutex
	sent      int
	accepted  int
	givenUp   int
	rejected  map[int]int
	seq       atomic.Int64
	inflight  chan struct{} // bounds concurrent sends
	skipped   atomic.Int64  // ticks that found every send slot busy
	healFlaky atomic.Bool
}

// TestChaos runs traffic of every kind through the API of two `herald serve`s for -chaos-for
// (2 minutes by default) while a chaos loop kills, one or two at a time, herald workers and
// serves, the Temporal services and PostgreSQL, then audits the receivers' logs and Herald's
// status: nothing accepted lost, no cap or rate limit exceeded, nothing sent to an endpoint
// that did not subscribe or was disabled, every repeat explained by a fault.
func TestChaos(t *testing.T) {
	c := need(t)
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos seed %d (-chaos-seed to choose the same faults and traffic again), for %s", seed, *chaosFor)
	r := &chaosRun{
		c: c, tag: strconv.FormatInt(time.Now().Unix(), 36), http: &http.Client{Timeout: 30 * time.Second},
		rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), replays: map[pair][]time.Time{}, sentTo: map[pair]bool{}, down: map[string]bool{}, rejected: map[int]int{},
		inflight: make(chan struct{}, 64),
	}
	// A second herald serve: the clients spread their calls over both.
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.startServe("herald-serve-2", port); err != nil {
		t.Fatal(err)
	}
	r.apis = []string{c.api, "http://127.0.0.1:" + strconv.Itoa(port)}
	t.Cleanup(func() { c.ensureUp(t) })

	eps := r.endpoints(t)
	for _, e := range eps {
		args := append([]string{"endpoint", "put", e.rule.ID, "--url", e.rcv.URL, "--jitter", "0", "--timeout", "20s"}, e.args...)
		if _, err := c.herald(args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.herald("endpoint", "disable", "chaos-td", "--reason", "chaos run: a disabled endpoint of the tenant"); err != nil {
		t.Fatal(err)
	}
	rules := map[string]endpointRule{}
	for _, e := range eps {
		if e.rule.ID == "chaos-td" {
			e.rule.DisabledFrom = time.Now()
		}
		rules[e.rule.ID] = e.rule
	}
	if err := waitFor("second serve", time.Minute, func() error { return r.get(r.apis[1]+"/v1/endpoints/chaos-h1", nil) }); err != nil {
		t.Fatal(err)
	}

	superCtx, stopSuper := context.WithCancel(context.Background())
	superDone := make(chan struct{})
	go func() { r.supervise(superCtx, t); close(superDone) }()
	defer func() { stopSuper(); <-superDone }()

	r.start = time.Now()
	end := r.start.Add(*chaosFor)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	var wg sync.WaitGroup
	r.traffic(ctx, &wg)
	wg.Add(2)
	go func() { defer wg.Done(); r.sweepDeadLetters(ctx) }()
	chaosDone := make(chan struct{})
	go func() { defer wg.Done(); r.chaos(ctx, t); close(chaosDone) }()
	<-ctx.Done()
	<-chaosDone
	wg.Wait() // every send has an answer or was given up
	r.mu.Lock()
	kills := len(r.faults) - countExits(r.faults)
	r.mu.Unlock()
	t.Logf("traffic and faults over after %s: %d events sent, %d accepted, %d given up (%d sends skipped: 64 under way); %d faults",
		time.Since(r.start).Round(time.Second), r.sent, r.accepted, r.givenUp, r.skipped.Load(), kills)

	// Settle: the flaky receiver heals; wait until every delivery owed is delivered or in an
	// outcome the audit allows, and nothing is in flight, up to a bound.
	r.healFlaky.Store(true)
	limit := *chaosSettle
	if limit == 0 {
		limit = 4*time.Minute + *chaosFor/10
	}
	outcomes := r.settle(t, eps, limit)

	var hits []hit
	for _, e := range eps {
		h, _ := e.rcv.log()
		hits = append(hits, h...)
	}
	r.mu.Lock()
	faults := slices.Clone(r.faults) // the supervisor may still add an exit
	r.mu.Unlock()
	slices.SortStableFunc(faults, func(a, b fault) int { return a.Killed.Compare(b.Killed) })
	// What the workers and history logged of failed tasks and aborted updates (a log not
	// there explains nothing).
	var logs []io.Reader
	paths, _ := filepath.Glob(filepath.Join(c.dir, "herald-worker-*.log"))
	for _, p := range append(paths, filepath.Join(c.dir, "temporal-history.log")) {
		if b, err := os.ReadFile(p); err == nil {
			logs = append(logs, bytes.NewReader(b))
		}
	}
	rep := audit(rules, hits, r.wants, outcomes, faults, r.replays, r.sentTo, taskFailures(logs...))
	rep.Duration = *chaosFor
	rep.Sent, rep.Accepted, rep.Unacknowledged, rep.Rejected = r.sent, r.accepted, r.givenUp, r.rejected
	md := rep.markdown()
	t.Logf("chaos report (seed %d):\n%s", seed, md)
	if *chaosReportFile != "" {
		if err := os.WriteFile(*chaosReportFile, []byte(fmt.Sprintf("seed %d, %s of traffic and faults, settled in %s\n\n%s", seed, *chaosFor,
			time.Since(end).Round(time.Second), md)), 0o644); err != nil {
			t.Error(err)
		}
	}
	// Quiet the run's endpoints for the tests that follow: the failing one keeps probing.
	for _, e := range eps {
		if e.rule.ID != "chaos-td" {
			c.herald("endpoint", "disable", e.rule.ID, "--reason", "chaos run over")
		}
	}
	if v := rep.violations(); len(v) > 0 {
		// The faults as they happened, to read the violations against.
		var tl strings.Builder
		for _, f := range faults {
			fmt.Fprintf(&tl, "\n%s down %s → %s (%s)", f.Name, f.Killed.Format(time.StampMilli), f.Back.Format(time.StampMilli), f.How)
		}
		t.Logf("faults and exits:%s", tl.String())
		t.Fatalf("the chaos audit found:\n%s", strings.Join(v, "\n"))
	}
	if rep.Accepted == 0 || rep.Delivered == 0 {
		t.Fatalf("nothing accepted or delivered: the run proves nothing")
	}
}

// endpoints makes the run's receivers and endpoints: healthy ones, one slow at its cap, one
// rate-limited, one always failing (its circuit opens), one failing a third of each minute
// (its dead letters are replayed), and a tenant's four for fan-out: two subscribed to
// order.*, one to invoice.* and one disabled.
func (r *chaosRun) endpoints(t *testing.T) []*chaosEndpoint {
	healthy := func(time.Time) (int, time.Duration) { return http.StatusOK, 5 * time.Millisecond }
	ladder := []string{"--schedule", "1s,2s,4s,8s", "--attempts", "12"}
	breaker := []string{"--breaker-consecutive", "5", "--probe-delay", "2s", "--max-probe-delay", "8s", "--half-open-attempts", "2"}
	var eps []*chaosEndpoint
	add := func(rule endpointRule, answer func(time.Time) (int, time.Duration), args ...string) {
		eps = append(eps, &chaosEndpoint{rule: rule, rcv: newChaosReceiver(t, rule.ID, answer), args: args})
	}
	for i := 1; i <= 4; i++ {
		add(endpointRule{ID: fmt.Sprintf("chaos-h%d", i), Healthy: true}, healthy, ladder...)
	}
	add(endpointRule{ID: "chaos-slow", Cap: 2}, func(time.Time) (int, time.Duration) { return http.StatusOK, 300 * time.Millisecond },
		append([]string{"--max-in-flight", "2"}, ladder...)...)
	add(endpointRule{ID: "chaos-rate", Rate: 3}, healthy, append([]string{"--rate-limit", "3"}, ladder...)...)
	add(endpointRule{ID: "chaos-down"}, func(time.Time) (int, time.Duration) { return http.StatusServiceUnavailable, 0 },
		append([]string{"--schedule", "1s", "--attempts", "2"}, breaker...)...)
	add(endpointRule{ID: "chaos-flaky"}, func(now time.Time) (int, time.Duration) {
		if !r.healFlaky.Load() && int(now.Sub(r.start).Seconds())%60 < 20 {
			return http.StatusInternalServerError, 0
		}
		return http.StatusOK, 5 * time.Millisecond
	}, "--schedule", "1s", "--attempts", "2", "--breaker-consecutive", "8", "--probe-delay", "2s", "--max-probe-delay", "8s", "--half-open-attempts", "2")
	add(endpointRule{ID: "chaos-ta", Types: []string{"order.*"}, Healthy: true}, healthy, append([]string{"--tenant", "chaos-t", "--types", "order.*"}, ladder...)...)
	add(endpointRule{ID: "chaos-tb", Healthy: true}, healthy, append([]string{"--tenant", "chaos-t"}, ladder...)...)
	add(endpointRule{ID: "chaos-tc", Types: []string{"invoice.*"}, Healthy: true}, healthy, append([]string{"--tenant", "chaos-t", "--types", "invoice.*"}, ladder...)...)
	add(endpointRule{ID: "chaos-td"}, healthy, append([]string{"--tenant", "chaos-t"}, ladder...)...)
	return eps
}

// fanoutTargets are the endpoints of tenant chaos-t subscribed to each type the run sends it.
var fanoutTargets = map[string][]string{
	"order.paid":      {"chaos-ta", "chaos-tb", "chaos-td"},
	"invoice.created": {"chaos-tb", "chaos-tc", "chaos-td"},
}

// traffic starts the senders, each a ticker until ctx ends: bursts to the slow and the
// rate-limited endpoints (so they sit at their cap and their limit), a steady stream to the
// others, and fan-out to the tenant.
func (r *chaosRun) traffic(ctx context.Context, wg *sync.WaitGroup) {
	every := func(d time.Duration, burst int, send func(n int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(d)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				for range burst {
					select {
					case r.inflight <- struct{}{}:
					default:
						r.skipped.Add(1)
						continue
					}
					n := int(r.seq.Add(1))
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer func() { <-r.inflight }()
						send(n)
					}()
				}
			}
		}()
	}
	direct := func(ep string) func(int) { return func(n int) { r.sendTo(ep, n) } }
	for i := 1; i <= 4; i++ {
		every(1300*time.Millisecond, 1, direct(fmt.Sprintf("chaos-h%d", i)))
	}
	every(3*time.Second, 4, direct("chaos-slow"))
	every(4*time.Second, 4, direct("chaos-rate"))
	every(2*time.Second, 1, direct("chaos-down"))
	every(2*time.Second, 1, direct("chaos-flaky"))
	every(2*time.Second, 1, func(n int) {
		typ := "order.paid"
		if n%2 == 1 {
			typ = "invoice.created"
		}
		r.publish("chaos-t", typ, n)
	})
}

// sendTo sends event n to endpoint ep, retrying with the same id until an answer or 60 s.
func (r *chaosRun) sendTo(ep string, n int) {
	id := fmt.Sprintf("evt_chaos_%s_%06d", r.tag, n)
	r.mu.Lock()
	r.sentTo[pair{ep, id}] = true
	r.mu.Unlock()
	if r.post(n, "/v1/events", map[string]any{"endpoint_id": ep, "id": id, "type": "chaos.direct", "data": map[string]any{"n": n}}) {
		r.mu.Lock()
		r.wants = append(r.wants, want{pair: pair{ep, id}, Accepted: time.Now()})
		r.mu.Unlock()
	}
}

// publish sends event n of type typ to every endpoint of tenant subscribed to it.
func (r *chaosRun) publish(tenant, typ string, n int) {
	id := fmt.Sprintf("evt_chaos_%s_%06d", r.tag, n)
	r.mu.Lock()
	for _, ep := range fanoutTargets[typ] {
		r.sentTo[pair{ep, id}] = true
	}
	r.mu.Unlock()
	if r.post(n, "/v1/events", map[string]any{"tenant": tenant, "id": id, "type": typ, "data": map[string]any{"n": n}}) {
		r.mu.Lock()
		for _, ep := range fanoutTargets[typ] {
			r.wants = append(r.wants, want{pair: pair{ep, id}, Tenant: tenant, Accepted: time.Now()})
		}
		r.mu.Unlock()
	}
}

// post POSTs body to path on one serve after the other, retrying connection errors and
// 5xx with the same body (the same event id) for up to 60 s; it reports whether an answer
// was 2xx. A 4xx is final.
func (r *chaosRun) post(n int, path string, body any) bool {
	b, _ := json.Marshal(body)
	deadline := time.Now().Add(60 * time.Second)
	wait := 100 * time.Millisecond
	for try := 0; ; try++ {
		code, err := r.do("POST", r.apis[(n+try)%len(r.apis)]+path, b, nil)
		if err == nil {
			r.mu.Lock()
			r.sent++
			r.accepted++
			r.mu.Unlock()
			return true
		}
		if code >= 400 && code < 500 && code != http.StatusTooManyRequests {
			r.mu.Lock()
			r.sent++
			r.rejected[code]++
			r.mu.Unlock()
			return false
		}
		if time.Now().After(deadline) {
			r.mu.Lock()
			r.sent++
			r.givenUp++
			r.mu.Unlock()
			return false
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// do makes one API call with the operator token; a status over 299 is an error.
func (r *chaosRun) do(method, url string, body []byte, out any) (int, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+r.c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, b)
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(b, out)
	}
	return resp.StatusCode, nil
}

// get GETs url into out.
func (r *chaosRun) get(url string, out any) error {
	_, err := r.do("GET", url, nil, out)
	return err
}

// api is one of the serves, by turn.
func (r *chaosRun) api(n int) string { return r.apis[n%len(r.apis)] }

// deliveryStatus is what the audit reads of a delivery's status.
type deliveryStatus struct {
	State  string    `json:"state"`
	DeadAt time.Time `json:"dead_lettered_at"`
}

// status reads the delivery w names, trying three times (on both serves) unless the answer
// is 404: Herald does not know the delivery.
func (r *chaosRun) status(w want, n int) (deliveryStatus, error) {
	var st deliveryStatus
	var err error
	for try := range 3 {
		u := r.api(n+try) + "/v1/events/" + w.Event
		if w.Tenant != "" {
			u += "?tenant=" + w.Tenant + "&endpoint=" + w.Endpoint
		}
		var code int
		if code, err = r.do("GET", u, nil, &st); err == nil || code == http.StatusNotFound {
			return st, err
		}
		time.Sleep(time.Second)
	}
	return st, err
}

// sweepDeadLetters replays the flaky endpoint's dead letters every few seconds until ctx
// ends, as an operator would: each one whose status says it is a dead letter (and has not
// been one since it was last replayed), once; a replay call that fails is not repeated
// (its effect is unknown), the next sweep looks again.
func (r *chaosRun) sweepDeadLetters(ctx context.Context) {
	lastReplay := map[string]time.Time{}
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
		var list struct {
			DeadLetters []struct {
				EventID string `json:"event_id"`
			} `json:"dead_letters"`
		}
		if err := r.get(r.api(n)+"/v1/dead-letters?endpoint=chaos-flaky", &list); err != nil {
			continue
		}
		for i, d := range list.DeadLetters {
			if i >= 20 || ctx.Err() != nil {
				break
			}
			st, err := r.status(want{pair: pair{"chaos-flaky", d.EventID}}, n)
			if err != nil || st.State != "dead_letter" || !st.DeadAt.After(lastReplay[d.EventID]) {
				continue
			}
			at := time.Now()
			lastReplay[d.EventID] = at
			r.mu.Lock()
			p := pair{"chaos-flaky", d.EventID}
			r.replays[p] = append(r.replays[p], at)
			r.mu.Unlock()
			r.do("POST", r.api(n)+"/v1/events/"+d.EventID+"/replay", nil, nil)
		}
	}
}

// chaos kills processes until ctx ends: one or two at a time (of different kinds), each
// brought back after a random pause of 1 to 6 s, with 2 to 6 s between faults. The kinds
// come from a shuffled deck, so that every kind is hit before any is hit again.
func (r *chaosRun) chaos(ctx context.Context, t *testing.T) {
	var deck []string
	draw := func() string {
		if len(deck) == 0 {
			deck = slices.Clone(chaosKinds)
			r.rnd.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		k := deck[0]
		deck = deck[1:]
		return k
	}
	sleep := func(lo, hi time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(lo + time.Duration(r.rnd.Int64N(int64(hi-lo)))):
			return true
		}
	}
	for sleep(2*time.Second, 6*time.Second) {
		kinds := []string{draw()}
		if r.rnd.IntN(3) == 0 {
			// Of another kind: a deck drawn out between the two draws could give the same
			// kind twice, and two restarts of one process would start it twice.
			if k := draw(); k != kinds[0] {
				kinds = append(kinds, k)
			} else {
				deck = append(deck, k)
			}
		}
		killed := time.Now()
		var wg sync.WaitGroup
		for _, kind := range kinds {
			name, how := r.pick(kind), "SIGKILL"
			pause := time.Second + time.Duration(r.rnd.Int64N(int64(5*time.Second)))
			if kind == "postgresql" && r.rnd.IntN(2) == 0 {
				how = "pg_ctl stop -m immediate"
			}
			lock := r.procLock(name)
			lock.Lock()
			r.mu.Lock()
			r.down[name] = true
			r.mu.Unlock()
			err := r.c.chaosKill(name, how)
			lock.Unlock()
			if err != nil {
				t.Errorf("kill %s: %v", name, err)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(pause)
				lock.Lock()
				defer lock.Unlock()
				if err := r.c.chaosStart(kind, name); err != nil {
					t.Logf("start %s again: %v (the supervisor tries again)", name, err)
				}
				r.mu.Lock()
				r.faults = append(r.faults, fault{Kind: kind, Name: name, How: how, Killed: killed, Back: time.Now()})
				delete(r.down, name)
				r.mu.Unlock()
			}()
		}
		wg.Wait()
	}
}

// supervise does what a process supervisor (systemd, Kubernetes) does for the cluster's
// processes, until ctx ends: it starts again, at most every 2 s, any process that exited
// without the chaos loop killing it (a Temporal service started while PostgreSQL is down
// exits at once), and counts those exits.
func (r *chaosRun) supervise(ctx context.Context, t *testing.T) {
	last := map[string]time.Time{}
	prev := time.Now() // the previous check: each process was running or under a kill then
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		checked := prev
		prev = time.Now()
		c := r.c
		c.mu.Lock()
		names := append(slices.Clone(c.workers), c.serves...)
		c.mu.Unlock()
		names = append(names, "postgresql", "temporal-frontend", "temporal-history", "temporal-matching", "temporal-worker")
		for _, name := range names {
			if time.Since(last[name]) < 2*time.Second {
				continue
			}
			lock := r.procLock(name)
			lock.Lock()
			r.mu.Lock()
			down := r.down[name]
			r.mu.Unlock()
			if !down && !c.running(name) {
				last[name] = time.Now()
				tail, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
				if len(tail) > 400 {
					tail = tail[len(tail)-400:]
				}
				t.Logf("supervisor: %s: %s exited on its own; starting it again. Its log ends: %s", time.Now().Format(time.StampMilli), name, tail)
				err := c.chaosStart(kindOf(name), name)
				if err != nil {
					t.Logf("supervisor: start %s again: %v", name, err)
				}
				// Down from some time after the last check until now: an outage that
				// explains repeats as a kill would.
				r.mu.Lock()
				r.faults = append(r.faults, fault{Kind: kindOf(name), Name: name, How: "exited on its own", Killed: checked, Back: time.Now(), Exit: true})
				r.mu.Unlock()
			}
			lock.Unlock()
		}
	}
}

// countExits is how many of faults are exits no kill caused.
func countExits(faults []fault) int {
	n := 0
	for _, f := range faults {
		if f.Exit {
			n++
		}
	}
	return n
}

// procLock is the lock that the chaos loop and the supervisor hold while they kill or start
// process name, so that neither starts it twice.
func (r *chaosRun) procLock(name string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.procLocks == nil {
		r.procLocks = map[string]*sync.Mutex{}
	}
	if r.procLocks[name] == nil {
		r.procLocks[name] = &sync.Mutex{}
	}
	return r.procLocks[name]
}

// kindOf is the kind of process name.
func kindOf(name string) string {
	switch {
	case strings.HasPrefix(name, "herald-worker"):
		return "worker"
	case strings.HasPrefix(name, "herald-serve"):
		return "serve"
	case name == "temporal-worker" || name == "postgresql":
		return name
	}
	return strings.TrimPrefix(name, "temporal-")
}

// pick is the process of kind to kill: a random one of the workers or serves.
func (r *chaosRun) pick(kind string) string {
	switch kind {
	case "worker":
		return fmt.Sprintf("herald-worker-%d", 1+r.rnd.IntN(workers))
	case "serve":
		return []string{"herald-serve", "herald-serve-2"}[r.rnd.IntN(2)]
	case "postgresql":
		return "postgresql"
	case "temporal-worker":
		return "temporal-worker"
	}
	return "temporal-" + kind
}

// chaosKill kills process name: with SIGKILL, or PostgreSQL with an immediate shutdown.
func (c *cluster) chaosKill(name, how string) error {
	if how == "SIGKILL" {
		return c.kill(name, syscall.SIGKILL)
	}
	if out, err := c.pgCommand("pg_ctl", "stop", "-D", c.pgData(), "-m", "immediate", "-w").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return c.kill(name, 0) // wait until the postmaster has exited
}

// chaosStart starts process name of kind again.
func (c *cluster) chaosStart(kind, name string) error {
	switch kind {
	case "worker":
		return c.startWorker(name)
	case "serve":
		c.mu.Lock()
		port := c.servePorts[name]
		c.mu.Unlock()
		return c.startServe(name, port)
	case "postgresql":
		return c.restartPostgres()
	}
	return c.startTemporal(strings.TrimPrefix(name, "temporal-"))
}

// restartPostgres starts PostgreSQL again after a crash. After a SIGKILL of the postmaster
// its backends take a moment to notice and exit, and until they have, a new postmaster
// refuses the data directory: it tries again for up to 90 s.
func (c *cluster) restartPostgres() error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		if err := c.spawn("postgresql", c.postmasterCommand()); err != nil {
			return err
		}
		c.mu.Lock()
		exited := c.exited["postgresql"]
		c.mu.Unlock()
		up := time.Now().Add(30 * time.Second)
		for time.Now().Before(up) {
			if c.pgReady() == nil {
				return nil
			}
			select {
			case <-exited:
				up = time.Time{}
			case <-time.After(100 * time.Millisecond):
			}
		}
		select {
		case <-exited:
		default:
			return errors.New("postgresql runs but does not accept connections after 30 s")
		}
		if time.Now().After(deadline) {
			return errors.New("postgresql did not start again within 90 s (see postgresql.log)")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// running reports whether process name runs.
func (c *cluster) running(name string) bool {
	c.mu.Lock()
	done := c.exited[name]
	c.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// ensureUp starts again any process of the cluster that is not running, so the tests after
// a chaos run find the whole cluster.
func (c *cluster) ensureUp(t *testing.T) {
	if !c.running("postgresql") {
		if err := c.restartPostgres(); err != nil {
			t.Error(err)
		}
	}
	for _, svc := range []string{"history", "matching", "frontend", "worker"} {
		if !c.running("temporal-" + svc) {
			if err := c.startTemporal(svc); err != nil {
				t.Error(err)
			}
		}
	}
	c.mu.Lock()
	ws, ss := slices.Clone(c.workers), slices.Clone(c.serves)
	c.mu.Unlock()
	for _, w := range ws {
		if !c.running(w) {
			if err := c.startWorker(w); err != nil {
				t.Error(err)
			}
		}
	}
	for _, s := range ss {
		if !c.running(s) {
			if err := c.chaosStart("serve", s); err != nil {
				t.Error(err)
			}
		}
	}
}

// settle waits, for up to limit, until every delivery owed is delivered (the receiver
// answered 2xx) or Herald reports an outcome the audit allows (dead letter; skipped at the
// disabled endpoint; waiting on an open circuit), and no request is in flight at any
// receiver. It returns Herald's outcome for each delivery not delivered.
func (r *chaosRun) settle(t *testing.T, eps []*chaosEndpoint, limit time.Duration) map[pair]outcome {
	deadline := time.Now().Add(limit)
	outcomes := map[pair]outcome{}
	// Settled for good: a dead letter (nothing replays them now), a delivery skipped at the
	// disabled endpoint, one waiting on the always-failing endpoint's open circuit. The flaky
	// endpoint has healed: its waiting deliveries go out once its circuit closes.
	final := func(w want, o outcome) bool {
		return o.State == "dead_letter" || o.State == "skipped" ||
			(w.Endpoint == "chaos-down" && o.State == "waiting_endpoint" && (o.Circuit == "open" || o.Circuit == "half_open"))
	}
	for round := 0; ; round++ {
		delivered := map[pair]bool{}
		busy := 0
		for _, e := range eps {
			hs, n := e.rcv.log()
			busy += n
			for _, h := range hs {
				if h.Status >= 200 && h.Status < 300 {
					delivered[pair{h.Endpoint, h.ID}] = true
				}
			}
		}
		var open []want
		for _, w := range r.wants {
			if !delivered[w.pair] && !final(w, outcomes[w.pair]) {
				open = append(open, w)
			}
		}
		last := time.Now().After(deadline)
		t.Logf("settle %s: %d of %d deliveries owed neither delivered nor settled, %d requests in flight",
			time.Since(r.start.Add(*chaosFor)).Round(time.Second), len(open), len(r.wants), busy)
		if len(open) == 0 && busy == 0 {
			return outcomes
		}
		// Ask Herald about those that may rightly stay undelivered, and, on the last round or
		// every fifth, about all of them.
		circuits := map[string]string{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		// A round asks for at most 30 s (the last for at most 3 minutes): on a loaded cluster a
		// status query waits for a worker, and the settle must keep to its bound.
		roundEnd := time.Now().Add(30 * time.Second)
		if last {
			roundEnd = time.Now().Add(3 * time.Minute)
		}
		for i, w := range open {
			rule := w.Endpoint == "chaos-down" || w.Endpoint == "chaos-flaky" || w.Endpoint == "chaos-td"
			if (!rule && !last && round%5 != 4) || time.Now().After(roundEnd) {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				st, err := r.status(w, i)
				if err != nil {
					return
				}
				o := outcome{State: st.State}
				if st.State == "waiting_endpoint" {
					mu.Lock()
					cs, ok := circuits[w.Endpoint]
					mu.Unlock()
					if !ok {
						var e endpointState
						if r.get(r.api(i)+"/v1/endpoints/"+w.Endpoint, &e) == nil {
							cs = e.Circuit.State
						}
						mu.Lock()
						circuits[w.Endpoint] = cs
						mu.Unlock()
					}
					o.Circuit = cs
				}
				mu.Lock()
				outcomes[w.pair] = o
				mu.Unlock()
			}()
		}
		wg.Wait()
		if last {
			t.Logf("settle: the bound of %s passed; Herald's status was read for %d of the %d open", limit, countIn(outcomes, open), len(open))
			return outcomes
		}
		time.Sleep(3 * time.Second)
	}
}

// countIn is how many of wants have an outcome.
func countIn(outcomes map[pair]outcome, wants []want) int {
	n := 0
	for _, w := range wants {
		if _, ok := outcomes[w.pair]; ok {
			n++
		}
	}
	return n
}
