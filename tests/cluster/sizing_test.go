package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// setWorkers stops or starts `herald worker` processes until n run.
func (c *cluster) setWorkers(n int) error {
	c.mu.Lock()
	var running []string
	for _, name := range c.workers {
		if cmd := c.procs[name]; cmd != nil && cmd.ProcessState == nil && !containsName(running, name) {
			running = append(running, name)
		}
	}
	c.mu.Unlock()
	for len(running) > n {
		last := running[len(running)-1]
		if err := c.kill(last, syscall.SIGTERM); err != nil {
			return err
		}
		running = running[:len(running)-1]
	}
	for i := 1; len(running) < n; i++ {
		name := fmt.Sprintf("herald-worker-%d", i)
		if containsName(running, name) {
			continue
		}
		if err := c.startWorker(name); err != nil {
			return err
		}
		running = append(running, name)
	}
	return nil
}

func containsName(list []string, name string) bool {
	for _, s := range list {
		if s == name {
			return true
		}
	}
	return false
}

// cpuTicks returns the CPU time (user + system, in clock ticks of 10 ms) each part of the
// cluster has used so far: PostgreSQL (the postmaster and its backends), each Temporal
// service, the Herald workers together and herald serve.
func (c *cluster) cpuTicks() map[string]int64 {
	stat := func(pid int) (ppid int, ticks int64, ok bool) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, 0, false
		}
		// The fields after the command name, which is in parentheses and may hold spaces.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		if len(f) < 13 {
			return 0, 0, false
		}
		ppid, _ = strconv.Atoi(f[1])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		return ppid, u + st, true
	}
	out := map[string]int64{}
	c.mu.Lock()
	pids := map[int]string{}
	for name, cmd := range c.procs {
		if cmd.Process == nil || cmd.ProcessState != nil {
			continue
		}
		group := name
		if strings.HasPrefix(name, "herald-worker") {
			group = "herald workers"
		}
		pids[cmd.Process.Pid] = group
	}
	c.mu.Unlock()
	for pid, group := range pids {
		if _, t, ok := stat(pid); ok {
			out[group] += t
		}
	}
	// PostgreSQL's backends are children of the postmaster.
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, t, ok := stat(pid); ok && pids[ppid] == "postgresql" {
			out["postgresql"] += t
		}
	}
	return out
}

// commits is PostgreSQL's committed transactions so far, in Temporal's two databases.
func (c *cluster) commits() (int64, error) {
	out, err := c.psql("postgres", "SELECT sum(xact_commit) FROM pg_stat_database WHERE datname IN ('temporal', 'temporal_visibility')")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(out, 10, 64)
}

// BenchmarkSizing measures the figures of docs/sizing.md on the cluster: for 1, 2 and 3
// Herald workers, PostgreSQL commits per first-try delivery (a burst sent through the API
// to 10 endpoints, less the cluster's idle commits over the same time), and `herald bench
// --address` throughput against the engine's limit (the bench's own worker plus n-1 worker
// processes); once, `herald bench`'s history events per delivery. Run it alone:
//
//	go test -count=1 ./tests/cluster -run '^$' -bench Sizing -benchtime 1x -v
func BenchmarkSizing(b *testing.B) {
	if cl == nil {
		b.Skipf("cluster rehearsal skipped: %s", skipReason)
	}
	c := cl
	for range b.N {
		for n := 1; n <= workers; n++ {
			if err := c.setWorkers(n); err != nil {
				b.Fatal(err)
			}
			time.Sleep(3 * time.Second) // pollers settle
			perDelivery, rate, err := c.commitsPerDelivery(b, fmt.Sprintf("sizing-%d", n), 400)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%d herald worker process(es): %.1f PostgreSQL commits per first-try delivery (burst of 400 through the API at %.0f deliveries/s)", n, perDelivery, rate)
			b.ReportMetric(perDelivery, fmt.Sprintf("commits/delivery-%dw", n))
			if err := c.setWorkers(n - 1); err != nil {
				b.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			out, err := c.herald("bench", "--address", c.address, "--namespace", c.namespace, "--scenario", "throughput",
				"--skip-naive", "--events", "600", "--rate", "40", "-o", "json")
			if err != nil {
				b.Fatal(err)
			}
			var rep struct {
				Throughput struct {
					Herald, Engine, Steady struct {
						PerSecond float64 `json:"per_second"`
						Latency   struct {
							P50 time.Duration `json:"p50"`
							P99 time.Duration `json:"p99"`
						} `json:"latency"`
					}
					VsEngine float64 `json:"vs_engine"`
				} `json:"throughput"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				b.Fatal(err)
			}
			tp := rep.Throughput
			b.Logf("%d worker(s) (bench's own + %d process(es)): Herald %.1f deliveries/s, engine limit %.1f workflows/s, ratio %.2f; steady 40/s p50 %s p99 %s",
				n, n-1, tp.Herald.PerSecond, tp.Engine.PerSecond, tp.VsEngine, tp.Steady.Latency.P50, tp.Steady.Latency.P99)
			b.ReportMetric(tp.VsEngine, fmt.Sprintf("vs-engine-%dw", n))
		}
		if err := c.setWorkers(0); err != nil {
			b.Fatal(err)
		}
		out, err := c.herald("bench", "--address", c.address, "--namespace", c.namespace, "--scenario", "cost", "--cost-events", "100", "-o", "json")
		if err != nil {
			b.Fatal(err)
		}
		var cost struct {
			Cost struct {
				DeliveryEvents float64 `json:"delivery_events"`
				EndpointShare  float64 `json:"endpoint_share"`
				PerDelivery    float64 `json:"per_delivery"`
				EngineEvents   int     `json:"engine_events"`
			} `json:"cost"`
		}
		if err := json.Unmarshal([]byte(out), &cost); err != nil {
			b.Fatal(err)
		}
		b.Logf("history events per first-try delivery: %.1f (its own %.1f + endpoint and stats share %.2f); engine-limit workflow %d",
			cost.Cost.PerDelivery, cost.Cost.DeliveryEvents, cost.Cost.EndpointShare, cost.Cost.EngineEvents)
		b.ReportMetric(cost.Cost.PerDelivery, "history-events/delivery")
		if err := c.setWorkers(workers); err != nil {
			b.Fatal(err)
		}
	}
}

// commitsPerDelivery sends n events through the API to 10 endpoints whose receiver answers
// 200 at once, waits until every one has arrived and its workflow has had time to close,
// and returns PostgreSQL's commits per delivery, less the idle rate measured just before,
// and the deliveries per second of the burst.
func (c *cluster) commitsPerDelivery(b *testing.B, prefix string, n int) (perDelivery, rate float64, err error) {
	r, err := c.burst(b, prefix, n)
	return r.commits, r.rate, err
}

// cpuGroups are the parts of the cluster whose CPU time burst reports, in order.
var cpuGroups = []string{"postgresql", "temporal-history", "temporal-matching", "temporal-frontend", "temporal-worker", "herald workers", "herald-serve"}

// burstResult is what one burst cost per delivery.
type burstResult struct {
	commits float64            // PostgreSQL commits, less the idle rate
	rate    float64            // deliveries per second of the burst
	cpu     map[string]float64 // CPU ms by group of cpuGroups, and "all"
}

// burst is commitsPerDelivery with the CPU time per delivery of each part of the cluster.
func (c *cluster) burst(b *testing.B, prefix string, n int) (res burstResult, err error) {
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("webhook-id")] = true
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	for i := range 10 {
		if _, err := c.herald("endpoint", "put", fmt.Sprintf("%s-%d", prefix, i), "--url", srv.URL); err != nil {
			return res, err
		}
	}
	idle0, err := c.commits()
	if err != nil {
		return res, err
	}
	idleFor := 10 * time.Second
	time.Sleep(idleFor)
	idle1, err := c.commits()
	if err != nil {
		return res, err
	}
	idleRate := float64(idle1-idle0) / idleFor.Seconds()
	cpu0 := c.cpuTicks()
	began := time.Now()
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for s := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < n; i += 8 {
				body := map[string]any{"type": "test.event", "endpoint_id": fmt.Sprintf("%s-%d", prefix, i%10), "data": map[string]int{"order": i}}
				if _, err := c.call("POST", "/v1/events", body, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	if err := waitFor("burst delivered", 5*time.Minute, func() error {
		mu.Lock()
		got := len(seen)
		mu.Unlock()
		if got < n {
			return fmt.Errorf("%d of %d arrived", got, n)
		}
		return nil
	}); err != nil {
		return res, err
	}
	took := time.Since(began)
	time.Sleep(5 * time.Second) // the last workflows close, their visibility rows are written
	cpu1 := c.cpuTicks()
	var parts []string
	var ticks int64
	res.cpu = map[string]float64{}
	for _, g := range cpuGroups {
		d := cpu1[g] - cpu0[g]
		ticks += d
		res.cpu[g] = float64(d) * 10 / float64(n)
		parts = append(parts, fmt.Sprintf("%s %.1f", g, res.cpu[g]))
	}
	res.cpu["all"] = float64(ticks) * 10 / float64(n)
	b.Logf("%s: CPU ms per delivery (burst and the 5 s after, idle included): %s; all %.1f", prefix, strings.Join(parts, ", "), float64(ticks)*10/float64(n))
	after, err := c.commits()
	if err != nil {
		return res, err
	}
	elapsed := time.Since(began)
	total := float64(after-idle1) - idleRate*elapsed.Seconds()
	b.Logf("%s: %d commits in %s, idle rate %.1f/s", prefix, after-idle1, elapsed.Round(time.Second), idleRate)
	res.commits, res.rate = total/float64(n), float64(n)/took.Seconds()
	return res, nil
}
