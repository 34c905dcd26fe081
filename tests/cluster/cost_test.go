package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
)

// BenchmarkCost measures where a first-try delivery's PostgreSQL transactions and CPU go
// (issue 27), against the engine-limit workflow in the same run. It reconfigures the
// package's cluster for the measure and puts it back as it was at the end:
//
//   - PostgreSQL restarts with pg_stat_statements loaded (shared_preload_libraries), and
//     each Temporal service connects as a role of its own (temporal_frontend,
//     temporal_history, temporal_matching, temporal_worker, members of temporal), so that
//     statements and transactions are attributed per service;
//   - one Herald worker runs, `herald worker --api-listen` (the floor has one worker too:
//     this process's);
//   - for each configuration of the server in costConfigs (the rehearsal's: four
//     processes on the postgres12 plugin, lib/pq; the postgres12_pgx plugin; the pgx
//     plugin with the four services in one process, as the role temporal_server), four
//     loads of HERALD_COST_EVENTS first-try deliveries (default 400, 8 senders at once):
//     "herald", events through `herald serve`'s API to 10 endpoints answering 200;
//     "herald-eager", the same through the worker's own API, which starts deliveries
//     eagerly; "floor-eager", the engine-limit workflow (one no-op local activity, started
//     eagerly by this process, whose worker runs it: `herald bench`'s engine limit); and
//     "floor-matching", the same workflow started without eager start (its first workflow
//     task goes through matching, as a start from an API server with no worker does);
//     "floor-attrs", floor-eager with a Herald delivery's start options (its four search
//     attributes, a summary, the reuse policy that rejects a duplicate id); and
//     "floor-webhook", the engine doing a delivery's I/O and nothing more: an HTTP handler
//     in this process decodes a POSTed event and starts the engine-limit workflow
//     eagerly, and its local activity POSTs the event to the same receiver (no signature,
//     no endpoint, no gate); "floor-proc", floor-webhook with its handler and worker in a
//     process of their own (this test binary again, floorMain), as Herald's API and
//     worker are in theirs: this process only sends and receives, for both;
//   - each load's cost is the change in PostgreSQL's commits (pg_stat_database, Temporal's
//     two databases), in pg_stat_statements (per role and statement), and in every
//     process's CPU time (this process included: the receiver and HTTP client for Herald,
//     the starter and worker for the floor), less the idle rate measured over the 10 s just
//     before;
//   - then, on the pgx configuration, a traced pass of each load (log_statement = all for
//     its duration: it costs PostgreSQL CPU, so it is apart from the measure) groups the
//     statements by transaction (the virtual transaction id) and counts transactions per
//     role and per shape (the tables each touches, in order). With lib/pq, the trace
//     counts fewer transactions than pg_stat_database: lib/pq prepares each statement that
//     has arguments in a round trip of its own, which PostgreSQL counts as a transaction
//     when it is outside one, and which the statement log does not show.
//
// HERALD_COST_ROUNDS (default 1) repeats the configurations, alternating their order, and
// starts each round's loads with the next load of the list.
// HERALD_COST_LOADS (default all) names the loads to measure, in the order to run them, e.g.
// herald-eager,floor-eager.
// HERALD_COST_CONFIGS (default all: stock,pgx,pgx-one) names the configurations to measure,
// and HERALD_COST_TRACE=0 skips the traced pass.
// HERALD_COST_OUT, if set, is a directory where each load's full pg_stat_statements
// difference and transaction shapes are written (TSV).
// HERALD_COST_RATE, if set, paces every load at that many sends a second (from 32 senders)
// instead of 8 senders sending as fast as they can: the loads then compare at the same rate,
// so that costs paid per second weigh the same on each.
// HERALD_COST_PPROF, if set, is a directory where each load's CPU profiles are written, one
// per process (the Temporal services through their pprof port, the API worker through
// --pprof-listen, this process), over HERALD_COST_PPROF_SECONDS (default 8) from the load's
// start; read two loads' with go tool pprof -diff_base. Run it alone; it takes about 15
// minutes on 2 cores:
//
//	go test -count=1 ./tests/cluster -run '^$' -bench Cost -benchtime 1x -v
func BenchmarkCost(b *testing.B) {
	if cl == nil {
		b.Skipf("cluster rehearsal skipped: %s", skipReason)
	}
	c := cl
	n := envInt(b, "HERALD_COST_EVENTS", 400)
	rounds := envInt(b, "HERALD_COST_ROUNDS", 1)
	out := os.Getenv("HERALD_COST_OUT")
	costRate = 0
	if os.Getenv("HERALD_COST_RATE") != "" {
		costRate = float64(envInt(b, "HERALD_COST_RATE", 0))
	}
	profDir = os.Getenv("HERALD_COST_PPROF")
	profSeconds = envInt(b, "HERALD_COST_PPROF_SECONDS", 8)
	if profDir != "" {
		if err := os.MkdirAll(profDir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	defer func() {
		if c.running(apiWorker) {
			c.kill(apiWorker, syscall.SIGTERM)
		}
		if err := c.restoreCostLayout(); err != nil {
			b.Error(err)
		}
		if err := c.setWorkers(workers); err != nil {
			b.Error(err)
		}
		if err := c.awaitServing(); err != nil {
			b.Error(err)
		}
	}()
	if err := c.setWorkers(0); err != nil {
		b.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		b.Fatal(err)
	}
	apiAddr = "127.0.0.1:" + strconv.Itoa(port)
	api := "http://" + apiAddr
	if err := c.prepareCost(); err != nil {
		b.Fatal(err)
	}
	rcv := newCostReceiver()
	defer rcv.Close()
	for i := range 10 {
		if _, err := c.herald("endpoint", "put", fmt.Sprintf("cost-%d", i), "--url", rcv.URL); err != nil {
			b.Fatal(err)
		}
	}
	fl, err := c.startFloor()
	if err != nil {
		b.Fatal(err)
	}
	defer fl.stop()
	ingress := fl.ingress(rcv.URL)
	defer ingress.Close()
	configs, err := pickCostConfigs(os.Getenv("HERALD_COST_CONFIGS"))
	if err != nil {
		b.Fatal(err)
	}

	loads := []costLoad{
		{name: "herald", run: func(p string, k int) error { return c.heraldLoad(c.api, rcv, p, k) }},
		{name: "herald-eager", run: func(p string, k int) error { return c.heraldLoad(api, rcv, p, k) }},
		{name: "floor-eager", run: func(p string, k int) error { return fl.load(p, k, true) }},
		{name: "floor-matching", run: func(p string, k int) error { return fl.load(p, k, false) }},
		{name: "floor-attrs", run: func(p string, k int) error { return fl.attrsLoad(p, k) }},
		{name: "floor-webhook", run: func(p string, k int) error { return webhookLoad(ingress.URL, fl.count, p, k) }},
		{name: "floor-proc", run: func(p string, k int) error { return webhookLoad("http://"+floorProcAddr, rcv.count, p, k) }},
	}
	loads, err = pickNamed("HERALD_COST_LOADS", "load", loads, func(l costLoad) string { return l.name }, os.Getenv("HERALD_COST_LOADS"))
	if err != nil {
		b.Fatal(err)
	}
	if slices.ContainsFunc(loads, func(l costLoad) bool { return l.name == "floor-proc" }) {
		port, err := freePort()
		if err != nil {
			b.Fatal(err)
		}
		floorProcAddr, floorProcReceiver = "127.0.0.1:"+strconv.Itoa(port), rcv.URL
		defer func() {
			floorProcReceiver = ""
			if c.running(floorProc) {
				c.kill(floorProc, syscall.SIGTERM)
			}
		}()
		if err := c.startFloorProc(layoutNow != nil && layoutNow.floorPlain); err != nil {
			b.Fatal(err)
		}
	}
	results := map[string][]costResult{}
	for r := range rounds {
		for k := range configs {
			cfg := configs[k]
			if r%2 == 1 {
				cfg = configs[len(configs)-1-k]
			}
			if err := c.costLayout(cfg, fl); err != nil {
				b.Fatal(err)
			}
			for _, l := range loads { // warm: caches, leases, pollers
				if err := l.run(fmt.Sprintf("warm-%d-%s-%s", r, cfg.name, l.name), 50); err != nil {
					b.Fatal(err)
				}
			}
			// Each round starts with another load, so that no load is always the first after
			// the warm-up (each still follows the same one within a round: the order is cyclic).
			for i := range loads {
				l := loads[(i+r)%len(loads)]
				name := cfg.name + "/" + l.name
				res, err := c.costPhase(b, name, n, func() error { return l.run(fmt.Sprintf("cost-%d-%s-%s", r, cfg.name, l.name), n) })
				if err != nil {
					b.Fatal(err)
				}
				res.log(b, name)
				if out != "" {
					res.write(filepath.Join(out, fmt.Sprintf("r%d-%s-%s.tsv", r, cfg.name, l.name)))
				}
				results[name] = append(results[name], res)
			}
		}
	}
	// Traced pass on the pgx configuration: transactions by role and shape.
	trace := os.Getenv("HERALD_COST_TRACE") != "0"
	if trace {
		if err := c.costLayout(costConfigs[1], fl); err != nil {
			b.Fatal(err)
		}
	}
	tn := min(n, 200)
	for _, l := range loads {
		if !trace {
			break
		}
		if err := l.run("warm-trace-"+l.name, 30); err != nil {
			b.Fatal(err)
		}
		tr, err := c.tracePhase(tn, func() error { return l.run("trace-"+l.name, tn) })
		if err != nil {
			b.Fatal(err)
		}
		tr.log(b, costConfigs[1].name+"/"+l.name, tn)
		if out != "" {
			tr.write(filepath.Join(out, "trace-"+l.name+".tsv"), tn)
		}
	}
	var lines []string
	for _, cfg := range configs {
		for _, l := range loads {
			name := cfg.name + "/" + l.name
			m := meanCost(results[name])
			lines = append(lines, fmt.Sprintf("%-22s commits %5.1f (temporal %5.1f, visibility %4.1f, rollbacks %.1f), CPU ms %5.1f: %s; TOAST rows: %s; WAL: %s",
				name, m.commits, m.byDB["temporal"], m.byDB["temporal_visibility"], m.rollbacks, m.cpu["all"], m.cpuLine(), fmtMap(m.toast), fmtMap(m.wal)))
		}
	}
	b.Logf("mean of %d round(s), per first-try delivery:\n%s", rounds, strings.Join(lines, "\n"))
	for _, cfg := range configs {
		f := meanCost(results[cfg.name+"/floor-eager"])
		fw := meanCost(results[cfg.name+"/floor-webhook"])
		fp := meanCost(results[cfg.name+"/floor-proc"])
		for _, h := range []string{"herald", "herald-eager"} {
			if len(results[cfg.name+"/"+h]) == 0 {
				continue
			}
			m := meanCost(results[cfg.name+"/"+h])
			b.Logf("%s: %s ÷ engine limit: commits %.2f×, CPU %.2f×; ÷ engine limit with the webhook's I/O: commits %.2f×, CPU %.2f×; ÷ the same in a process of its own: commits %.2f×, CPU %.2f×",
				cfg.name, h, m.commits/f.commits, m.cpu["all"]/f.cpu["all"], m.commits/fw.commits, m.cpu["all"]/fw.cpu["all"], m.commits/fp.commits, m.cpu["all"]/fp.cpu["all"])
			b.ReportMetric(m.commits, "commits/delivery-"+cfg.name+"-"+h)
		}
		b.ReportMetric(f.commits, "commits/delivery-"+cfg.name+"-floor")
	}
}

// costRate is HERALD_COST_RATE (0: unpaced); pacedSenders send a paced load.
var costRate float64

const pacedSenders = 32

// profDir and profSeconds are HERALD_COST_PPROF and HERALD_COST_PPROF_SECONDS; profPorts
// the pprof port of each process that serves one, by process name.
var (
	profDir     string
	profSeconds int
	profPorts   = map[string]int{}
)

// profilePort returns a free port for the process name's profiles, or 0 when no profile is
// asked for.
func profilePort(name string) (int, error) {
	if profDir == "" {
		return 0, nil
	}
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	profPorts[name] = port
	return port, nil
}

// profileLoad writes CPU profiles of every process with a pprof port, and of this one, over
// profSeconds from now, to profDir/name-PROCESS.pprof; wait returns once all are written.
func profileLoad(name string) (wait func() error) {
	if profDir == "" {
		return func() error { return nil }
	}
	name = strings.ReplaceAll(name, "/", "-")
	var wg sync.WaitGroup
	errs := make(chan error, len(profPorts)+1)
	for proc, port := range profPorts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, profSeconds)
			resp, err := http.Get(u)
			if err != nil {
				errs <- fmt.Errorf("%s's profile: %w", proc, err)
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(filepath.Join(profDir, name+"-"+proc+".pprof"))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			if _, err := io.Copy(f, resp.Body); err != nil {
				errs <- fmt.Errorf("%s's profile: %w", proc, err)
			}
		}()
	}
	f, err := os.Create(filepath.Join(profDir, name+"-driver.pprof"))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		errs <- err
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(profSeconds) * time.Second)
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	return func() error {
		wg.Wait()
		close(errs)
		return <-errs
	}
}

// apiWorker is the process name of the Herald worker that serves the API (--api-listen).
const apiWorker = "herald-worker-api"

// apiAddr is where the API worker serves its API.
var apiAddr string

// ensureAPIWorker starts `herald worker --api-listen apiAddr` unless it runs, once the
// frontend accepts connections (a worker that cannot reach Temporal as it starts exits).
func (c *cluster) ensureAPIWorker(more []string) error {
	if c.running(apiWorker) {
		return nil
	}
	if err := awaitListening("the frontend's port", c.address, 2*time.Minute); err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // the frontend finds history and matching
	args := append([]string{"worker", "--api-listen", apiAddr}, more...)
	port, err := profilePort(apiWorker)
	if err != nil {
		return err
	}
	if port != 0 {
		args = append(args, "--pprof-listen", "127.0.0.1:"+strconv.Itoa(port))
	}
	w := exec.Command(filepath.Join(c.bin, "herald"), args...)
	w.Env = c.env()
	return c.spawn(apiWorker, w)
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("%s=%q: want a whole number, 1 or more", name, s)
	}
	return v
}

// costLoad is one kind of first-try delivery: run makes k of them, ids prefixed by p, and
// returns once each has arrived and had 5 s to close.
type costLoad struct {
	name string
	run  func(p string, k int) error
}

// costServiceRoles are the PostgreSQL roles the Temporal services connect as during
// BenchmarkCost; temporal_server is the one-process layout's.
var costServiceRoles = []string{"temporal_frontend", "temporal_history", "temporal_matching", "temporal_worker", "temporal_server"}

// prepareCost restarts PostgreSQL with pg_stat_statements and creates the roles.
func (c *cluster) prepareCost() error {
	if err := c.stopTemporalAll(); err != nil {
		return err
	}
	if err := c.restartPostgresWith("-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.max=10000"); err != nil {
		return err
	}
	if _, err := c.psql("postgres", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return err
	}
	for _, r := range costServiceRoles {
		exists, err := c.psql("postgres", fmt.Sprintf("SELECT count(*) FROM pg_roles WHERE rolname = '%s'", r))
		if err != nil {
			return err
		}
		if exists == "0" {
			if _, err := c.psql("postgres", fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE temporal", r, pgPassword)); err != nil {
				return err
			}
		}
	}
	return c.costLayout(costConfigs[0], nil)
}

// costConfig is a configuration of the Temporal server that BenchmarkCost measures.
type costConfig struct {
	name string
	// one runs the four services in one process (as temporal_server); else one process
	// per service, each as its own role.
	one bool
	// pgx is the persistence plugin postgres12_pgx (pgx, statements prepared once per
	// connection) instead of postgres12 (lib/pq).
	pgx bool
	// dynamic is added to production.yaml's dynamic config while the configuration runs.
	dynamic string
	// worker are more arguments of the API worker (`herald worker --api-listen`).
	worker []string
	// floorPlain dials the floor's client without gRPC compression (the SDK's default is
	// gzip; Herald's, none).
	floorPlain bool
	// stockHistory stores history_node as PostgreSQL does by default (tune-history.sh
	// --restore): a history batch over about 2 KB is compressed or moved to TOAST.
	stockHistory bool
}

// server is what of c needs the Temporal server restarted when it changes.
func (c costConfig) server() string { return fmt.Sprint(c.one, c.pgx, c.dynamic) }

// costConfigs are the configurations BenchmarkCost alternates: the rehearsal's, the pgx
// plugin, and the pgx plugin with the services in one process.
var costConfigs = []costConfig{
	{name: "stock"},
	{name: "pgx", pgx: true},
	{name: "pgx-one", pgx: true, one: true},
	// pgx with each history shard's events cache at 16 MB (Temporal's default 512 KB), as
	// herald dev runs at 64 MB for its one shard: describes read the start event.
	{name: "pgx-events", pgx: true, dynamic: "history.eventsCacheMaxSizeBytes:\n  - value: 16777216\n"},
	// pgx with the API worker as it was before gRPC compression went off by default and
	// the stats flush went from every 2 s to every 10 s.
	{name: "pgx-before", pgx: true, worker: []string{"--grpc-compression", "gzip", "--stats-interval", "2s"}},
	// pgx with the floor's client, too, not compressing (as Herald's does by default).
	{name: "pgx-plain", pgx: true, floorPlain: true},
	// pgx with history_node stored as PostgreSQL does by default, as before tune-history.sh.
	{name: "pgx-toast", pgx: true, stockHistory: true},
}

// layoutNow is the configuration costLayout last started (nil when TestMain's or restored).
var layoutNow *costConfig

// restartPostgresWith stops PostgreSQL (fast shutdown) and starts it again as startPostgres
// does, with extra arguments.
func (c *cluster) restartPostgresWith(extra ...string) error {
	if err := c.kill("postgresql", syscall.SIGINT); err != nil {
		return err
	}
	data := filepath.Join(c.dir, "pg")
	args := append([]string{"-D", data, "-p", strconv.Itoa(c.pgPort),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + data,
		"-c", "max_connections=300"}, extra...)
	if err := c.spawn("postgresql", c.pgCommand("postgres", args...)); err != nil {
		return err
	}
	return waitFor("postgresql", 60*time.Second, func() error {
		_, err := c.psql("postgres", "SELECT 1")
		return err
	})
}

// stopTemporalAll stops the Temporal server's processes, in either layout.
func (c *cluster) stopTemporalAll() error {
	for _, name := range []string{"temporal-frontend", "temporal-worker", "temporal-matching", "temporal-history", "temporal-server"} {
		if c.running(name) {
			if err := c.kill(name, syscall.SIGTERM); err != nil {
				return err
			}
		}
	}
	return nil
}

// roleConfig writes the server's config with role as the PostgreSQL user (and
// application_name), and the pgx plugin if pgx, and returns its path.
func (c *cluster) roleConfig(role string, pgx bool, pprofPort int) (string, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "temporal.yaml"))
	if err != nil {
		return "", err
	}
	cfg := strings.ReplaceAll(string(b), "        user: temporal\n",
		"        user: "+role+"\n        connectAttributes:\n          application_name: "+role+"\n")
	if pgx {
		cfg = strings.ReplaceAll(cfg, "pluginName: postgres12\n", "pluginName: postgres12_pgx\n")
	}
	if pprofPort != 0 {
		cfg = strings.Replace(cfg, "global:\n", fmt.Sprintf("global:\n  pprof:\n    port: %d\n    host: 127.0.0.1\n", pprofPort), 1)
	}
	path := filepath.Join(c.dir, "temporal-"+role+".yaml")
	return path, os.WriteFile(path, []byte(cfg), 0o644)
}

// costLayout runs the Temporal server as cfg says: four processes, each service as its
// own role, or one process running the four services as temporal_server; the API worker
// with cfg's arguments; and the floor's client (fl, unless nil) as cfg says; and waits
// until a delivery goes through. It restarts only what differs from the last layout.
func (c *cluster) costLayout(cfg costConfig, fl *floor) error {
	now := layoutNow
	layoutNow = nil
	if now != nil && now.name == cfg.name {
		layoutNow = now
		return nil
	}
	if now == nil || now.server() != cfg.server() {
		now = nil
		if err := c.stopTemporalAll(); err != nil {
			return err
		}
		if err := c.writeDynamicConfig(cfg.dynamic); err != nil {
			return err
		}
		for name := range profPorts {
			if strings.HasPrefix(name, "temporal") {
				delete(profPorts, name)
			}
		}
		start := func(name, role string, services ...string) error {
			port, err := profilePort(name)
			if err != nil {
				return err
			}
			path, err := c.roleConfig(role, cfg.pgx, port)
			if err != nil {
				return err
			}
			args := []string{"--config-file", path, "--allow-no-auth", "start"}
			for _, s := range services {
				args = append(args, "--service", s)
			}
			cmd := exec.Command(filepath.Join(c.bin, "temporal-server"), args...)
			cmd.Dir = c.dir
			return c.spawn(name, cmd)
		}
		if cfg.one {
			if err := start("temporal-server", "temporal_server", "frontend", "history", "matching", "worker"); err != nil {
				return err
			}
		} else {
			for _, svc := range []string{"history", "matching", "frontend", "worker"} {
				if err := start("temporal-"+svc, "temporal_"+svc, svc); err != nil {
					return err
				}
			}
		}
	}
	if (now == nil || !slices.Equal(now.worker, cfg.worker)) && c.running(apiWorker) {
		if err := c.kill(apiWorker, syscall.SIGTERM); err != nil {
			return err
		}
	}
	if err := c.ensureAPIWorker(cfg.worker); err != nil {
		return err
	}
	if now == nil || now.stockHistory != cfg.stockHistory {
		if err := c.tuneHistory(cfg.stockHistory); err != nil {
			return err
		}
	}
	if fl != nil && (now == nil || now.floorPlain != cfg.floorPlain) {
		if err := fl.dial(c.address, c.namespace, cfg.floorPlain); err != nil {
			return err
		}
		if err := c.startFloorProc(cfg.floorPlain); err != nil {
			return err
		}
	}
	if err := c.awaitServing(); err != nil {
		return err
	}
	layoutNow = &cfg
	return nil
}

// awaitServing waits until herald serve answers and an event sent through it is delivered.
func (c *cluster) awaitServing() error {
	if err := waitFor("herald serve", 2*time.Minute, func() error {
		_, err := c.call("GET", "/v1/endpoints", nil, nil)
		return err
	}); err != nil {
		return err
	}
	if apiAddr != "" && c.running(apiWorker) {
		if err := waitFor("the worker's API", 2*time.Minute, func() error {
			_, err := c.callAt("http://"+apiAddr, "GET", "/v1/endpoints", nil)
			return err
		}); err != nil {
			return err
		}
	}
	rcv := newCostReceiver()
	defer rcv.Close()
	id := fmt.Sprintf("cost-probe-%d", time.Now().UnixNano())
	if _, err := c.herald("endpoint", "put", id, "--url", rcv.URL); err != nil {
		return err
	}
	if _, err := c.call("POST", "/v1/events", map[string]any{"type": "test.event", "endpoint_id": id, "data": map[string]int{}}, nil); err != nil {
		return err
	}
	return waitFor("a delivery after the restart", 3*time.Minute, func() error {
		if rcv.count() == 0 {
			return fmt.Errorf("not delivered yet")
		}
		return nil
	})
}

// restoreCostLayout puts the cluster back as TestMain started it: PostgreSQL without
// pg_stat_statements and the four services as the role temporal, with temporal.yaml; it
// returns once the frontend accepts connections (start the workers then).
func (c *cluster) restoreCostLayout() error {
	layoutNow = nil
	if err := c.tuneHistory(false); err != nil {
		return err
	}
	if err := c.stopTemporalAll(); err != nil {
		return err
	}
	if err := c.writeDynamicConfig(""); err != nil {
		return err
	}
	if _, err := c.psql("postgres", "ALTER SYSTEM RESET ALL"); err != nil {
		return err
	}
	if err := c.restartPostgresWith(); err != nil {
		return err
	}
	for _, svc := range []string{"history", "matching", "frontend", "worker"} {
		if err := c.startTemporal(svc); err != nil {
			return err
		}
	}
	err := awaitListening("the frontend's port", c.address, 2*time.Minute)
	time.Sleep(3 * time.Second) // the frontend finds history and matching
	return err
}

// costReceiver answers 200 at once and records the webhook-ids it saw.
type costReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]bool
}

func newCostReceiver() *costReceiver {
	r := &costReceiver{seen: map[string]bool{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.seen[req.Header.Get("webhook-id")] = true
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	return r
}

func (r *costReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// settle is how long a load waits after its last arrival: the workflows close, their
// visibility records are written.
const settle = 5 * time.Second

// senders is how many requests or starts a load makes at once.
const senders = 8

// heraldLoad sends k events through the API at base to the 10 cost-N endpoints and waits
// until each has arrived, then settle.
func (c *cluster) heraldLoad(base string, rcv *costReceiver, p string, k int) error {
	return sendAndAwait(p, k, rcv.count, func(i int) error {
		body := map[string]any{"type": "test.event", "endpoint_id": fmt.Sprintf("cost-%d", i%10), "data": map[string]int{"order": i}}
		_, err := c.callAt(base, "POST", "/v1/events", body)
		return err
	})
}

// callAt is call against the API at base (herald serve's, or a worker's), with no answer
// decoded.
func (c *cluster) callAt(base, method, path string, body any) (int, error) {
	if base == c.api {
		return c.call(method, path, body, nil)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(method, base+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s%s: %s: %s", method, base, path, resp.Status, msg)
	}
	return resp.StatusCode, nil
}

// floor runs the engine-limit workflow in this process: a worker on its own task queue
// and a client that starts it.
type floor struct {
	c    client.Client
	w    sdkworker.Worker
	mu   sync.Mutex
	seen map[string]bool
}

const (
	floorQueue    = "cost-floor"
	floorWorkflow = "CostFloor"
	floorActivity = "CostNoop"
)

// floorInput is the floor workflow's input: about the size of a Herald event. With a URL,
// its activity POSTs the event there (floor-webhook).
type floorInput struct {
	ID   string         `json:"id"`
	Data map[string]int `json:"data"`
	URL  string         `json:"url,omitempty"`
}

// pickCostConfigs returns the configurations named in list (comma-separated; "" for all).
func pickCostConfigs(list string) ([]costConfig, error) {
	return pickNamed("HERALD_COST_CONFIGS", "configuration", costConfigs, func(c costConfig) string { return c.name }, list)
}

// pickNamed returns the items of all named in list (comma-separated, in its order; "" for
// all of them); a name that is not one of theirs is an error naming env and the names there are.
func pickNamed[T any](env, kind string, all []T, name func(T) string, list string) ([]T, error) {
	if list == "" {
		return all, nil
	}
	var out []T
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		i := slices.IndexFunc(all, func(t T) bool { return name(t) == n })
		if i < 0 {
			names := make([]string, len(all))
			for j, t := range all {
				names[j] = name(t)
			}
			return nil, fmt.Errorf("%s: no %s %q (%s)", env, kind, n, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func (c *cluster) startFloor() (*floor, error) {
	f := &floor{seen: map[string]bool{}}
	return f, f.dial(c.address, c.namespace, false)
}

// dial (again) connects the floor's client and worker, without gRPC compression when plain
// (else the SDK's default, gzip), stopping those it had.
func (f *floor) dial(address, namespace string, plain bool) error {
	if f.w != nil {
		f.stop()
	}
	var compression client.GrpcCompression
	if plain {
		compression = &client.GrpcCompressionNone{}
	}
	tc, err := client.Dial(client.Options{
		HostPort: address, Namespace: namespace,
		Logger:            sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: compression},
	})
	if err != nil {
		return err
	}
	f.c = tc
	f.w = sdkworker.New(tc, floorQueue, sdkworker.Options{})
	f.w.RegisterWorkflowWithOptions(func(ctx workflow.Context, in floorInput) error {
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: 30 * time.Second,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		return workflow.ExecuteLocalActivity(ctx, floorActivity, in).Get(ctx, nil)
	}, workflow.RegisterOptions{Name: floorWorkflow})
	f.w.RegisterActivityWithOptions(func(ctx context.Context, in floorInput) error {
		if in.URL != "" {
			if err := postEvent(ctx, in); err != nil {
				return err
			}
		}
		f.mu.Lock()
		f.seen[in.ID] = true
		f.mu.Unlock()
		return nil
	}, activity.RegisterOptions{Name: floorActivity})
	if err := f.w.Start(); err != nil {
		tc.Close()
		f.w = nil
		return err
	}
	return nil
}

func (f *floor) stop() {
	f.w.Stop()
	f.c.Close()
}

func (f *floor) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

// postEvent POSTs the floor's event to in.URL, named by its id as a webhook is.
func postEvent(ctx context.Context, in floorInput) error {
	body, err := json.Marshal(in.Data)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", in.ID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("POST %s: %s", in.URL, resp.Status)
	}
	return nil
}

// ingress serves the floor-webhook's API (ingressHandler) in this process.
func (f *floor) ingress(receiver string) *httptest.Server {
	return httptest.NewServer(f.ingressHandler(receiver))
}

// ingressHandler is the floor's API: it decodes a POSTed floorInput and starts the floor
// workflow with it eagerly, its activity to POST it to receiver.
func (f *floor) ingressHandler(receiver string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in floorInput
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.ID == "" {
			http.Error(w, "want a JSON event with an id", http.StatusBadRequest)
			return
		}
		in.URL = receiver
		if _, err := f.c.ExecuteWorkflow(r.Context(), client.StartWorkflowOptions{ID: "cost:" + in.ID, TaskQueue: floorQueue, EnableEagerStart: true},
			floorWorkflow, in); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
}

// webhookLoad sends k events through the ingress at base, as heraldLoad does through
// Herald's API, and waits until count says each reached the receiver, then settle.
func webhookLoad(base string, count func() int, p string, k int) error {
	return sendAndAwait(p, k, count, func(i int) error {
		b, err := json.Marshal(floorInput{ID: fmt.Sprintf("%s-%d", p, i), Data: map[string]int{"order": i}})
		if err != nil {
			return err
		}
		resp, err := http.Post(base, "application/json", bytes.NewReader(b))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("floor ingress: %s", resp.Status)
		}
		return nil
	})
}

// sendAndAwait makes k sends (send(i) for i < k) from senders goroutines, then waits until
// count has grown by k (each arrived), then settle.
func sendAndAwait(p string, k int, count func() int, send func(i int) error) error {
	before := count()
	n := senders
	if costRate > 0 {
		n = pacedSenders
	}
	errs := make(chan error, n)
	began := time.Now()
	var wg sync.WaitGroup
	for s := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < k; i += n {
				if costRate > 0 {
					time.Sleep(time.Until(began.Add(time.Duration(float64(i) / costRate * float64(time.Second)))))
				}
				if err := send(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if err := waitFor(p+" arrived", 5*time.Minute, func() error {
		if got := count() - before; got < k {
			return fmt.Errorf("%d of %d arrived", got, k)
		}
		return nil
	}); err != nil {
		return err
	}
	time.Sleep(settle)
	return nil
}

// load starts k floor workflows (eagerly or not) and waits until each ran, then settle.
func (f *floor) load(p string, k int, eager bool) error {
	return f.loadWith(p, k, func(id string, _ int) client.StartWorkflowOptions {
		return client.StartWorkflowOptions{ID: "cost:" + id, TaskQueue: floorQueue, EnableEagerStart: eager}
	})
}

// attrsLoad is load, eager, with the start options a Herald delivery's start carries
// (starter.Client.startOnce): its four search attributes, a summary, and the reuse policy
// that rejects a duplicate id. Against floor-eager it prices those; against herald-eager,
// everything else Herald does.
func (f *floor) attrsLoad(p string, k int) error {
	return f.loadWith(p, k, func(id string, i int) client.StartWorkflowOptions {
		ep := fmt.Sprintf("cost-%d", i%10)
		return client.StartWorkflowOptions{
			ID: "cost:" + id, TaskQueue: floorQueue, EnableEagerStart: true,
			WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			WorkflowExecutionErrorWhenAlreadyStarted: true,
			TypedSearchAttributes: temporal.NewSearchAttributes(herald.AttrEndpoint.ValueSet(ep),
				herald.AttrEventType.ValueSet("test.event"), herald.AttrTenant.ValueSet(herald.DefaultTenant),
				herald.AttrEventID.ValueSet(id)),
			StaticSummary: "test.event → " + ep,
		}
	})
}

// loadWith starts k floor workflows named after p with the options opts gives, 8 at once,
// and waits until each has run.
func (f *floor) loadWith(p string, k int, opts func(id string, i int) client.StartWorkflowOptions) error {
	return sendAndAwait(p, k, f.count, func(i int) error {
		id := fmt.Sprintf("%s-%d", p, i)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := f.c.ExecuteWorkflow(ctx, opts(id, i), floorWorkflow, floorInput{ID: id, Data: map[string]int{"order": i}})
		return err
	})
}

// stmtKey is one statement of one role in one database (pg_stat_statements).
type stmtKey struct{ role, db, query string }

// stmtStat is a statement's cumulative figures.
type stmtStat struct {
	calls, rows int64
	ms          float64
}

// costSnap is the cluster's cumulative counters at one moment.
type costSnap struct {
	at        time.Time
	commits   map[string]int64 // by database
	rollbacks map[string]int64
	cpu       map[string]int64 // ticks by process group, "driver" for this process
	stmts     map[stmtKey]stmtStat
	toast     map[string]int64 // rows inserted into each table's TOAST table, by "db.table"
	wal       map[string]int64 // pg_stat_wal: "records", "full-page images", "bytes"
}

// psqlRows runs a query in db and returns its rows split into fields (unit and record
// separators, so that statements with newlines and bars survive).
func (c *cluster) psqlRows(db, sql string) ([][]string, error) {
	cmd := exec.Command(filepath.Join(c.pgBin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.pgPort),
		"-U", "temporal", "-d", db, "-At", "-F", "\x1f", "-R", "\x1e", "-c", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+pgPassword)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("psql %q: %v", sql, err)
	}
	var rows [][]string
	for _, r := range strings.Split(strings.TrimRight(string(out), "\n"), "\x1e") {
		if r = strings.TrimPrefix(r, "\n"); r != "" {
			rows = append(rows, strings.Split(r, "\x1f"))
		}
	}
	return rows, nil
}

func (c *cluster) costSnapshot() (costSnap, error) {
	s := costSnap{at: time.Now(), commits: map[string]int64{}, rollbacks: map[string]int64{}, stmts: map[stmtKey]stmtStat{}, toast: map[string]int64{}, wal: map[string]int64{}}
	// pg_stat_wal is PostgreSQL 14's: without it, no WAL figures.
	if rows, err := c.psqlRows("postgres", "SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal"); err == nil && len(rows) == 1 && len(rows[0]) == 3 {
		for i, k := range []string{"records", "full-page images", "bytes"} {
			s.wal[k], _ = strconv.ParseInt(rows[0][i], 10, 64)
		}
	}
	s.cpu = c.cpuTicks()
	s.cpu["driver"] = selfTicks()
	rows, err := c.psqlRows("postgres", "SELECT datname, xact_commit, xact_rollback FROM pg_stat_database WHERE datname IN ('temporal', 'temporal_visibility')")
	if err != nil {
		return s, err
	}
	for _, r := range rows {
		s.commits[r[0]], _ = strconv.ParseInt(r[1], 10, 64)
		s.rollbacks[r[0]], _ = strconv.ParseInt(r[2], 10, 64)
	}
	// A row over about 2 KB is compressed (pglz) or, failing that, stored out of line in
	// its table's TOAST table: encrypted payloads do not compress, so each such row costs
	// a compression attempt and TOAST inserts.
	for _, db := range []string{"temporal", "temporal_visibility"} {
		rows, err := c.psqlRows(db, "SELECT c.relname, t.n_tup_ins FROM pg_class c JOIN pg_stat_all_tables t ON t.relid = c.reltoastrelid WHERE c.relkind = 'r' AND c.relnamespace <> 'pg_catalog'::regnamespace")
		if err != nil {
			return s, err
		}
		for _, r := range rows {
			if len(r) == 2 {
				s.toast[db+"."+r[0]], _ = strconv.ParseInt(r[1], 10, 64)
			}
		}
	}
	rows, err = c.psqlRows("postgres", `SELECT r.rolname, d.datname, regexp_replace(s.query, '\s+', ' ', 'g'), s.calls, s.rows, s.total_exec_time
		FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname IN ('temporal', 'temporal_visibility')`)
	if err != nil {
		return s, err
	}
	for _, r := range rows {
		if len(r) < 6 {
			continue
		}
		k := stmtKey{r[0], r[1], r[2]}
		calls, _ := strconv.ParseInt(r[3], 10, 64)
		n, _ := strconv.ParseInt(r[4], 10, 64)
		ms, _ := strconv.ParseFloat(r[5], 64)
		v := s.stmts[k]
		s.stmts[k] = stmtStat{v.calls + calls, v.rows + n, v.ms + ms}
	}
	return s, nil
}

// selfTicks is this process's CPU time in clock ticks (10 ms).
func selfTicks() int64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// stmtCost is a statement's calls, rows and execution time (ms) per delivery.
type stmtCost struct{ calls, rows, ms float64 }

// costResult is one load's cost per delivery, idle rate subtracted.
type costResult struct {
	n         int
	commits   float64
	rollbacks float64
	byDB      map[string]float64
	cpu       map[string]float64 // ms by group, and "all"
	stmts     map[stmtKey]stmtCost
	perRole   map[string]float64 // statement calls per role (BEGIN/COMMIT excluded)
	txPerRole map[string]float64 // COMMIT calls per role: explicit transactions
	toast     map[string]float64 // TOAST rows inserted per table ("db.table")
	wal       map[string]float64 // WAL records, full-page images and bytes
	rate      float64
}

// costPhase measures the idle rate for 10 s, then runs load (n deliveries), and returns
// the difference per delivery less the idle rate over the load's time.
func (c *cluster) costPhase(b *testing.B, name string, n int, load func() error) (costResult, error) {
	s0, err := c.costSnapshot()
	if err != nil {
		return costResult{}, err
	}
	time.Sleep(10 * time.Second)
	s1, err := c.costSnapshot()
	if err != nil {
		return costResult{}, err
	}
	began := time.Now()
	profiled := profileLoad(name)
	if err := load(); err != nil {
		return costResult{}, err
	}
	took := time.Since(began) - settle
	if err := profiled(); err != nil {
		return costResult{}, err
	}
	s2, err := c.costSnapshot()
	if err != nil {
		return costResult{}, err
	}
	scale := s2.at.Sub(s1.at).Seconds() / s1.at.Sub(s0.at).Seconds()
	net := func(a0, a1, a2 int64) float64 { return (float64(a2-a1) - scale*float64(a1-a0)) / float64(n) }
	r := costResult{n: n, byDB: map[string]float64{}, cpu: map[string]float64{}, stmts: map[stmtKey]stmtCost{},
		perRole: map[string]float64{}, txPerRole: map[string]float64{}, toast: map[string]float64{}, wal: map[string]float64{},
		rate: float64(n) / took.Seconds()}
	for k, v2 := range s2.wal {
		r.wal[k] = net(s0.wal[k], s1.wal[k], v2)
	}
	for t, v2 := range s2.toast {
		if v := net(s0.toast[t], s1.toast[t], v2); v >= 0.01 {
			r.toast[t] = v
		}
	}
	for db := range s2.commits {
		r.byDB[db] = net(s0.commits[db], s1.commits[db], s2.commits[db])
		r.commits += r.byDB[db]
		r.rollbacks += net(s0.rollbacks[db], s1.rollbacks[db], s2.rollbacks[db])
	}
	for g := range s2.cpu {
		ms := 10 * net(s0.cpu[g], s1.cpu[g], s2.cpu[g])
		if g == "postgresql" || strings.HasPrefix(g, "temporal") || g == "herald workers" || g == "herald-serve" || g == "driver" || g == floorProc {
			r.cpu[g] = ms
			r.cpu["all"] += ms
		}
	}
	for k, v2 := range s2.stmts {
		v0, v1 := s0.stmts[k], s1.stmts[k]
		calls := net(v0.calls, v1.calls, v2.calls)
		if calls == 0 && v2.calls == v1.calls {
			continue
		}
		rows := net(v0.rows, v1.rows, v2.rows)
		ms := ((v2.ms - v1.ms) - scale*(v1.ms-v0.ms)) / float64(n)
		r.stmts[k] = stmtCost{calls: calls, rows: rows, ms: ms}
		switch strings.ToUpper(strings.TrimSpace(k.query)) {
		case "BEGIN", "BEGIN READ WRITE", "START TRANSACTION":
		case "COMMIT":
			r.txPerRole[k.role] += calls
		case "ROLLBACK":
		default:
			r.perRole[k.role] += calls
		}
	}
	return r, nil
}

// cpuLine lists the CPU per group.
func (r costResult) cpuLine() string {
	var groups []string
	for g := range r.cpu {
		if g != "all" {
			groups = append(groups, g)
		}
	}
	sort.Strings(groups)
	var parts []string
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%s %.1f", g, r.cpu[g]))
	}
	return strings.Join(parts, ", ")
}

// log writes the result's summary and its 20 statements most called per delivery.
func (r costResult) log(b *testing.B, name string) {
	var roles []string
	for role := range r.perRole {
		roles = append(roles, role)
	}
	sort.Strings(roles)
	var rp []string
	for _, role := range roles {
		rp = append(rp, fmt.Sprintf("%s %.1f statements (%.1f explicit transactions)", role, r.perRole[role], r.txPerRole[role]))
	}
	b.Logf("%s: per delivery %.1f commits (%s), %.1f rollbacks; CPU ms %.1f (%s); %.0f deliveries/s\n  by role: %s\n  TOAST rows: %s; WAL: %s",
		name, r.commits, fmtMap(r.byDB), r.rollbacks, r.cpu["all"], r.cpuLine(), r.rate, strings.Join(rp, "; "), fmtMap(r.toast), fmtMap(r.wal))
	top := r.top()
	var lines []string
	for i, k := range top {
		if i == 20 {
			break
		}
		v := r.stmts[k]
		lines = append(lines, fmt.Sprintf("  %6.2f calls %6.3f ms  %-18s %s", v.calls, v.ms, k.role, shorten(k.query, 140)))
	}
	b.Logf("%s: statements per delivery (most called):\n%s", name, strings.Join(lines, "\n"))
}

// top is the result's statements by calls, most first.
func (r costResult) top() []stmtKey {
	var keys []stmtKey
	for k := range r.stmts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := r.stmts[keys[i]], r.stmts[keys[j]]
		if a.calls != b.calls {
			return a.calls > b.calls
		}
		return keys[i].query < keys[j].query
	})
	return keys
}

// write writes every statement's per-delivery figures to path (TSV).
func (r costResult) write(path string) {
	var sb strings.Builder
	sb.WriteString("calls\trows\tms\trole\tdb\tquery\n")
	for _, k := range r.top() {
		v := r.stmts[k]
		fmt.Fprintf(&sb, "%.3f\t%.3f\t%.4f\t%s\t%s\t%s\n", v.calls, v.rows, v.ms, k.role, k.db, k.query)
	}
	os.WriteFile(path, []byte(sb.String()), 0o644)
}

func fmtMap(m map[string]float64) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// meanCost is the mean of rs.
func meanCost(rs []costResult) costResult {
	m := costResult{byDB: map[string]float64{}, cpu: map[string]float64{}, toast: map[string]float64{}, wal: map[string]float64{}}
	for _, r := range rs {
		k := float64(len(rs))
		for t, v := range r.toast {
			m.toast[t] += v / k
		}
		for t, v := range r.wal {
			m.wal[t] += v / k
		}
		m.commits += r.commits / k
		m.rollbacks += r.rollbacks / k
		for g, v := range r.byDB {
			m.byDB[g] += v / k
		}
		for g, v := range r.cpu {
			m.cpu[g] += v / k
		}
	}
	return m
}

// traceResult is a traced load's transactions: by role and shape, less the idle window's.
type traceResult struct {
	shapes map[string]map[string]float64 // role → shape → transactions
}

// tracePhase logs every statement (log_statement = all, with the role and virtual
// transaction id in each line) for 10 s idle and then for load, and groups the lines into
// transactions.
func (c *cluster) tracePhase(n int, load func() error) (traceResult, error) {
	set := func(on bool) error {
		if on {
			if _, err := c.psql("postgres", "ALTER SYSTEM SET log_statement = 'all'"); err != nil {
				return err
			}
			if _, err := c.psql("postgres", `ALTER SYSTEM SET log_line_prefix = '@@%u|%v|%a@@ '`); err != nil {
				return err
			}
		} else if _, err := c.psql("postgres", "ALTER SYSTEM RESET ALL"); err != nil {
			return err
		}
		_, err := c.psql("postgres", "SELECT pg_reload_conf()")
		time.Sleep(time.Second)
		return err
	}
	logPath := filepath.Join(c.dir, "postgresql.log")
	size := func() int64 {
		st, err := os.Stat(logPath)
		if err != nil {
			return 0
		}
		return st.Size()
	}
	if err := set(true); err != nil {
		return traceResult{}, err
	}
	defer set(false)
	o0 := size()
	t0 := time.Now()
	time.Sleep(10 * time.Second)
	o1 := size()
	t1 := time.Now()
	if err := load(); err != nil {
		return traceResult{}, err
	}
	o2 := size()
	t2 := time.Now()
	idle, err := readTransactions(logPath, o0, o1)
	if err != nil {
		return traceResult{}, err
	}
	busy, err := readTransactions(logPath, o1, o2)
	if err != nil {
		return traceResult{}, err
	}
	scale := t2.Sub(t1).Seconds() / t1.Sub(t0).Seconds()
	tr := traceResult{shapes: map[string]map[string]float64{}}
	for role, m := range busy {
		tr.shapes[role] = map[string]float64{}
		for s, v := range m {
			tr.shapes[role][s] += float64(v)
		}
	}
	for role, m := range idle {
		if tr.shapes[role] == nil {
			tr.shapes[role] = map[string]float64{}
		}
		for s, v := range m {
			tr.shapes[role][s] -= scale * float64(v)
		}
	}
	return tr, nil
}

var (
	logPrefix = regexp.MustCompile(`^@@([^|]*)\|([^|]*)\|([^@]*)@@ (\w+):\s+(.*)$`)
	stmtText  = regexp.MustCompile(`^(?:statement|execute [^:]*): (.*)$`)
	tableOf   = []*regexp.Regexp{
		regexp.MustCompile(`(?i)^\s*(insert)\s+into\s+(\w+)`),
		regexp.MustCompile(`(?i)^\s*(update)\s+(\w+)`),
		regexp.MustCompile(`(?i)^\s*(delete)\s+from\s+(\w+)`),
		regexp.MustCompile(`(?i)^\s*(select)\b.*?\bfrom\s+(\w+)`),
	}
)

// shapeOf names a statement by its verb and first table: "update executions",
// "select shards (lock)".
func shapeOf(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	u := strings.ToUpper(q)
	switch u {
	case "BEGIN", "COMMIT", "ROLLBACK", "BEGIN READ WRITE":
		return strings.ToLower(u)
	}
	for _, re := range tableOf {
		if m := re.FindStringSubmatch(q); m != nil {
			s := strings.ToLower(m[1]) + " " + m[2]
			if strings.Contains(u, "FOR UPDATE") || strings.Contains(u, "FOR SHARE") {
				s += " (lock)"
			}
			return s
		}
	}
	return shorten(q, 40)
}

// readTransactions reads the PostgreSQL log between offsets from and to and counts
// transactions by role and shape: the statements of one virtual transaction id, BEGIN and
// COMMIT left out, repeats of one statement shown as ×n; "tx:" marks an explicit
// transaction, "rollback:" one that rolled back. psql's own lines are left out.
func readTransactions(path string, from, to int64) (map[string]map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	type tx struct {
		role     string
		stmts    []string
		explicit bool
		rollback bool
	}
	txs := map[string]*tx{}
	var order []string
	var last *tx
	var lastIdx int
	sc := bufio.NewScanner(io.LimitReader(f, to-from))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		m := logPrefix.FindStringSubmatch(line)
		if m == nil {
			if last != nil && lastIdx >= 0 && strings.HasPrefix(line, "\t") {
				// A continuation of the last statement: its table may be on this line.
				last.stmts[lastIdx] += " " + strings.TrimSpace(line)
			}
			continue
		}
		lastIdx = -1
		role, vxid, app, level, msg := m[1], m[2], m[3], m[4], m[5]
		if level != "LOG" || app == "psql" || role == "" {
			continue
		}
		sm := stmtText.FindStringSubmatch(msg)
		if sm == nil {
			continue
		}
		key := role + "/" + vxid
		t := txs[key]
		if t == nil {
			t = &tx{role: role}
			txs[key] = t
			order = append(order, key)
		}
		last = t
		t.stmts = append(t.stmts, sm[1])
		lastIdx = len(t.stmts) - 1
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for _, key := range order {
		t := txs[key]
		var parts []string
		for _, s := range t.stmts {
			sh := shapeOf(s)
			switch sh {
			case "begin", "begin read write":
				t.explicit = true
				continue
			case "commit":
				continue
			case "rollback":
				t.rollback = true
				continue
			}
			parts = append(parts, sh)
		}
		shape := strings.Join(collapse(parts), "; ")
		switch {
		case t.rollback:
			shape = "rollback: " + shape
		case t.explicit:
			shape = "tx: " + shape
		}
		if out[t.role] == nil {
			out[t.role] = map[string]int{}
		}
		out[t.role][shape]++
	}
	return out, nil
}

// collapse writes runs of one shape as "shape ×n".
func collapse(parts []string) []string {
	var out []string
	for i := 0; i < len(parts); {
		j := i
		for j < len(parts) && parts[j] == parts[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", parts[i], j-i))
		} else {
			out = append(out, parts[i])
		}
		i = j
	}
	return out
}

// log writes the transactions per delivery by role, and each role's shapes above 0.05.
func (tr traceResult) log(b *testing.B, name string, n int) {
	var roles []string
	for r := range tr.shapes {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	var lines []string
	var all float64
	for _, role := range roles {
		var sum float64
		for _, v := range tr.shapes[role] {
			sum += v
		}
		all += sum
		lines = append(lines, fmt.Sprintf("  %s: %.2f transactions per delivery", role, sum/float64(n)))
		for _, s := range sortedShapes(tr.shapes[role]) {
			if v := tr.shapes[role][s] / float64(n); v >= 0.05 {
				lines = append(lines, fmt.Sprintf("    %6.2f  %s", v, shorten(s, 160)))
			}
		}
	}
	b.Logf("%s traced (%d deliveries, log_statement = all, idle subtracted): %.2f transactions per delivery\n%s", name, n, all/float64(n), strings.Join(lines, "\n"))
}

func sortedShapes(m map[string]float64) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

func (tr traceResult) write(path string, n int) {
	var sb strings.Builder
	sb.WriteString("per_delivery\trole\tshape\n")
	for role, m := range tr.shapes {
		for _, s := range sortedShapes(m) {
			fmt.Fprintf(&sb, "%.3f\t%s\t%s\n", m[s]/float64(n), role, s)
		}
	}
	os.WriteFile(path, []byte(sb.String()), 0o644)
}

func TestPickNamed(t *testing.T) {
	all := []string{"herald", "floor-eager", "floor-webhook"}
	id := func(s string) string { return s }
	if got, err := pickNamed("ENV", "load", all, id, ""); err != nil || !slices.Equal(got, all) {
		t.Errorf("empty list: %v, %v; want all", got, err)
	}
	if got, err := pickNamed("ENV", "load", all, id, "floor-webhook, herald"); err != nil || !slices.Equal(got, []string{"floor-webhook", "herald"}) {
		t.Errorf("two names: %v, %v; want them in the list's order", got, err)
	}
	_, err := pickNamed("ENV", "load", all, id, "herald,nope")
	if err == nil || !strings.Contains(err.Error(), `ENV: no load "nope" (herald, floor-eager, floor-webhook)`) {
		t.Errorf("unknown name: %v; want an error naming it and the names there are", err)
	}
}
