package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/bench"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/tracing"
)

func newBenchCmd(g *globals) *cobra.Command {
	cfg := bench.DefaultConfig()
	var (
		scenarios  []string
		dynamic    []string
		pragmas    []string
		cpuProfile string
		trace      bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Herald on this machine: throughput, history cost, retry storm, isolation, cap, breaker, backlog, scale",
		Long: `Measure Herald on this machine. The bench starts its own embedded Temporal server (in
memory unless --db-file is given), a Herald worker and HTTP receivers on 127.0.0.1, all in
this process; it needs nothing else running and touches nothing outside a --db-file.

Scenarios (--scenario, repeatable; default all but scale and ordered, in this order):
  throughput  N events over M endpoints whose receivers answer 204 at once: deliveries per
              second and the latency from just before Send to the receiver's first request,
              at full load (C concurrent senders) and at a steady rate; the same N through a
              naive workflow (one regular activity) and through the engine's limit (eager
              start, one local activity), each on its own task queue, and the ratios.
              With --fanout F, the events go to a tenant with F subscribed endpoints
              (send --tenant): N deliveries from N/F events, rates in deliveries/s.
  cost        history events per first-try delivery: its own workflow's, read back, plus its
              share of every endpoint workflow's and stats shard's events during the run;
              then the same for events sent to a tenant with 1 and with 10 subscribed
              endpoints, with the subscription directory's events per event.
  storm       events whose first attempts fail together (503, all at the same moment): how
              the second attempts spread over time (takes about 1.5 × --storm-rung).
  isolation   the healthy endpoints' latency while one endpoint hangs until its attempt
              timeout, against the same load without it.
  cap         an endpoint capped at --cap concurrent requests, with a slow receiver: the most
              concurrent requests it saw.
  breaker     an endpoint failing every request: how many requests reached it while its
              circuit was open (only probes should).
  backlog     --backlog-events deliveries queued behind one open circuit (one failure opens
              it, the probe is an hour away) while 10 healthy endpoints take --backlog-rate
              events/s for --backlog-for: their first-request p99 against the same load run
              before the backlog exists; how long endpoint get and put on the blocked
              endpoint take (30s timeout each); the attempts recorded on the backlog and the
              requests its receiver saw while open; then its receiver recovers, the circuit
              is closed by hand, and the drain rate against min(--backlog-cap ÷
              --backlog-delay, the engine limit measured in the same run with --events
              workflows), the CPU per delivery while it drains against the engine limit's,
              the drain rate against the engine's wake floor (up to 5,000 workflows that
              park and are woken by an update, measured in the same run, with the healthy
              load running meanwhile: its p99 is what any drain at the engine's pace does
              to it), the most concurrent requests (against --backlog-cap), the healthy
              endpoints' p99 while it drains, and what the last 50 to drain show in their histories
              (attempts, workflow tasks timed out, timer lateness); --backlog-cpuprofile
              profiles the drain alone. Every wait is bounded; takes a few minutes.
  scale       --scale-endpoints N registered through the bulk path (herald endpoint
              import's), half in a tenant of their own and half in the default tenant:
              registrations per second, and CPU per registration, against the engine's own
              start rate and CPU per start in the same run (--scale-engine-starts
              workflows, as many at once as the puts); with --scale-for D, registration
              stops after D (the largest N within a time: the two tenants take calls of
              10,000 in turn, and the endpoints the sends match are put after); the
              latency of a fan-out send to 10 matching endpoints in each of the two and in
              a tenant of 100 (--scale-sends, one at a time); a tenant event search's
              latency; and the largest input, memo and history of any workflow that is
              not one per delivery or per endpoint (stats shards, directories...). Takes
              as long as N registrations do (or --scale-for): not in the default set.
  ordered     --ordered-keys keys × --ordered-per-key events over --ordered-endpoints
              endpoints, sent round by round (event r of every key, then r+1), first
              without their ordering keys and then with them, in the same run: the ordered
              rate over the unordered one (target ≥ 0.7×), the process's CPU per
              delivery in each phase, history events per ordered delivery (its own,
              sampled, plus its share of its key's sequencer) against the unordered, and
              arrivals out of send order within a key (0); then the engine's own
              floors, the same sends as bare engine workflows: with no update, each
              after an update to its key's workflow, each after an update to one of 4
              workflows per endpoint shared by keys, and with one workflow per endpoint
              whose appends that meet go as one update (what a design that orders
              through a workflow can reach); then 200 sends of one key at once: how long
              until all were accepted and all delivered, and arrivals out of the key's
              order (0). Not in the default set.
  ratelimit   --rate-events events sent at once to an endpoint limited to --rate-limit-n
              requests per second, shared by two workers, once quiet and once with
              --rate-hogs busy-loop processes (default one per CPU): delivered/s against
              the limit and against the engine limit measured in the same conditions, the
              rate while the sends go and after the last one (the endpoint's queue
              draining; JSON adds the requests signed in each second), the most requests
              signed (webhook-timestamp) and arrived in one second, every event delivered
              once, what the last 50 to arrive show in their histories (attempts, workflow
              tasks timed out, timer lateness), and deliveries left waiting as queued while
              the endpoint's queue is empty (0). Not in the default set.
  hot         --hot-events events from --senders concurrent senders over ten endpoints, then
              the same to one endpoint, each capped at --hot-cap: the one endpoint's
              full-load p99 over the ten's (target ≤ 1.5×) and its rate over theirs. Not in
              the default set.

With --address HOST:PORT (and --namespace) the bench runs on that Temporal instead, e.g. a
cluster on PostgreSQL: its worker, baselines and receivers stay in this process, and any
other Herald workers on the namespace (with --allow-cidr 127.0.0.0/8, for the receivers)
share the load. The namespace needs Herald's search attributes (herald namespace setup).

The table shows each figure, its target where there is one, and whether it was met. The
figures are measurements, not pass/fail tests: run on a quiet machine, and compare runs
on the same machine. -o json prints everything measured.`,
		Example: `  herald bench                                  # every scenario, default sizes
  herald bench --scenario throughput --events 2000
  herald bench --scenario throughput --fanout 10
  herald bench --scenario storm --storm-rung 10s
  herald bench --scenario backlog --backlog-events 20000
  herald bench --scenario scale --scale-endpoints 100000 --db-file /tmp/scale.db
  herald bench --scenario ordered --ordered-keys 1000 --ordered-per-key 5
  herald bench --scenario ratelimit --rate-limit-n 100 --rate-events 3000
  herald bench --scenario hot --hot-events 2000 --senders 50
  herald bench --db-file /tmp/bench.db          # on a SQLite file instead of memory
  herald bench --address 127.0.0.1:7233 --namespace herald --scenario throughput,cost
  herald bench --cpuprofile cpu.out && go tool pprof -top cpu.out`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Scenarios = scenarios
			switch {
			case cfg.RateHogs < 0:
				return fmt.Errorf("%w: --rate-hogs %d: give 0 (no busy-loop processes) or more", errUsage, cfg.RateHogs)
			case cfg.RateHogs == 0:
				cfg.RateHogs = bench.NoHogs // 0 in the bench's Config means the default
			}
			if n := cfg.BacklogRateLimit; n < 0 || n > policy.MaxRateLimit {
				return fmt.Errorf("%w: --backlog-rate-limit %d: give 0 (no rate limit) or 1 to %d requests per second", errUsage, n, policy.MaxRateLimit)
			}
			// Only an explicit --address leaves the embedded server: TEMPORAL_ADDRESS, set
			// for the other commands, does not move a bench onto a real cluster.
			if cmd.Flags().Changed("address") {
				if cfg.DBFile != "" || len(dynamic) > 0 || len(pragmas) > 0 || cfg.StockEngine {
					return fmt.Errorf("%w: --db-file, --dynamic-config, --sqlite-pragma and --stock-engine tune the embedded server; with --address the cluster has its own", errUsage)
				}
				cfg.Address, cfg.Namespace = g.address, g.namespace
				if g.keys == nil && !cfg.Plaintext {
					return fmt.Errorf("%w: with --address the bench encrypts with the cluster's payload keys, so its workers can read them: give --codec-key-file (or --plaintext, if the workers run with --plaintext)", errUsage)
				}
				cfg.Keys = g.keys
			}
			var err error
			if cfg.DynamicConfig, err = parseDynamic(dynamic); err != nil {
				return err
			}
			if cfg.SQLitePragmas, err = parsePairs("--sqlite-pragma", pragmas); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("%w: --scenario: %v", errUsage, err)
			}
			if cpuProfile != "" && cfg.BacklogProfile != "" {
				return fmt.Errorf("%w: --cpuprofile and --backlog-cpuprofile: the process holds one CPU profile at a time; give one", errUsage)
			}
			if cpuProfile != "" {
				stop, err := bench.StartProfile(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer func() { _ = stop() }()
			}
			if trace {
				if cmd.Flags().Changed("address") {
					return fmt.Errorf("%w: --trace traces the embedded server's bench; give one or the other", errUsage)
				}
				stopTracing, err := g.startTracing(cmd.Context())
				if err != nil {
					return err
				}
				defer stopTracing()
				cfg.Tracing = g.tracing
				if !cfg.Tracing.Enabled() {
					cfg.Tracing = tracing.Discard()
					defer cfg.Tracing.Shutdown(context.Background())
				}
				cfg.Traced = true
			}
			ctx, stop := untilInterrupt(cmd)
			defer stop()
			cfg.Progress = cmd.ErrOrStderr()
			if g.verbose {
				cfg.Logger = g.logger()
			}
			rep, err := bench.Run(ctx, cfg)
			if err != nil && rep == nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.output == "json" {
				if perr := printJSON(out, struct {
					Config bench.Config `json:"config"`
					*bench.Report
					Rows []bench.Row `json:"rows"`
				}{cfg, rep, rep.Rows()}); perr != nil {
					return perr
				}
			} else if perr := rep.WriteText(out); perr != nil {
				return perr
			}
			if err != nil {
				return err
			}
			if len(rep.Errors) > 0 {
				return fmt.Errorf("%d scenario(s) could not finish (see above)", len(rep.Errors))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&scenarios, "scenario", nil, "scenario to run (repeatable, or comma-separated): "+strings.Join(bench.Scenarios, ", ")+"; default all")
	f.StringVar(&cfg.DBFile, "db-file", "", "run the embedded server on this SQLite file (created if missing) instead of in memory")
	f.StringSliceVar(&pragmas, "sqlite-pragma", nil, "SQLite pragma for the embedded server, KEY=VALUE (repeatable), e.g. synchronous=full")
	f.StringSliceVar(&dynamic, "dynamic-config", nil, "Temporal dynamic config for the embedded server, KEY=VALUE (repeatable), e.g. matching.numTaskqueueReadPartitions=1")
	f.BoolVar(&cfg.StockEngine, "stock-engine", false, "run the embedded server's storage as Temporal ships it (one database, every visibility index), to compare with Herald's tuning")
	f.BoolVar(&trace, "trace", false, "trace the bench's client and worker as OTEL_* would (OpenTelemetry; spans go to the OTLP endpoint the environment names, else are dropped once batched): run with and without to see what tracing costs")
	f.BoolVar(&cfg.Plaintext, "plaintext", false, "do not encrypt payloads (production encrypts them; so does the bench by default)")
	f.IntVar(&cfg.Events, "events", cfg.Events, "throughput: events per phase (N)")
	f.IntVar(&cfg.Endpoints, "endpoints", cfg.Endpoints, "throughput: endpoints the events are spread over (M)")
	f.IntVar(&cfg.Senders, "senders", cfg.Senders, "concurrent senders at full load (C)")
	f.BoolVar(&cfg.SkipNaive, "skip-naive", false, "throughput: leave out the naive baseline (slow at thousands of events)")
	f.Float64Var(&cfg.Rate, "rate", cfg.Rate, "throughput: events per second of the steady phase")
	f.IntVar(&cfg.Fanout, "fanout", 0, "throughput: send the events to a tenant with this many subscribed endpoints (deliveries/s vs the engine limit; --events counts deliveries)")
	f.IntVar(&cfg.CostEvents, "cost-events", cfg.CostEvents, "cost: first-try deliveries to read back")
	f.IntVar(&cfg.CostEndpoints, "cost-endpoints", cfg.CostEndpoints, "cost: endpoints the deliveries are spread over (many cold endpoints: try 1000)")
	f.IntVar(&cfg.StormEvents, "storm-events", cfg.StormEvents, "storm: events whose first attempt fails together")
	f.DurationVar((*time.Duration)(&cfg.StormRung), "storm-rung", cfg.StormRung.Std(), "storm: the ladder's first wait (jittered ±20%)")
	f.Float64Var(&cfg.IsolationRate, "isolation-rate", cfg.IsolationRate, "isolation: events per second over the 10 endpoints")
	f.DurationVar((*time.Duration)(&cfg.IsolationFor), "isolation-for", cfg.IsolationFor.Std(), "isolation: how long each of its two runs sends")
	f.DurationVar((*time.Duration)(&cfg.HangTimeout), "hang-timeout", cfg.HangTimeout.Std(), "isolation: attempt timeout of the hanging endpoint (at least 1s)")
	f.IntVar(&cfg.CapEvents, "cap-events", cfg.CapEvents, "cap: events sent at once to the capped endpoint")
	f.IntVar(&cfg.CapLimit, "cap", cfg.CapLimit, "cap: the endpoint's max in-flight requests (1-500)")
	f.DurationVar((*time.Duration)(&cfg.CapDelay), "cap-delay", cfg.CapDelay.Std(), "cap: how long the capped endpoint's receiver takes to answer")
	f.IntVar(&cfg.BreakerEvents, "breaker-events", cfg.BreakerEvents, "breaker: events sent to the failing endpoint")
	f.DurationVar((*time.Duration)(&cfg.BreakerFor), "breaker-for", cfg.BreakerFor.Std(), "breaker: how long to watch the failing endpoint")
	f.DurationVar((*time.Duration)(&cfg.ProbeDelay), "probe-delay", cfg.ProbeDelay.Std(), "breaker: the scaled-down delay before the circuit's first probe")
	f.IntVar(&cfg.BacklogEvents, "backlog-events", cfg.BacklogEvents, "backlog: deliveries queued behind the open circuit")
	f.IntVar(&cfg.OrderedKeys, "ordered-keys", cfg.OrderedKeys, "ordered: ordering keys")
	f.IntVar(&cfg.OrderedPerKey, "ordered-per-key", cfg.OrderedPerKey, "ordered: events per key")
	f.IntVar(&cfg.OrderedEndpoints, "ordered-endpoints", cfg.OrderedEndpoints, "ordered: endpoints the keys are spread over")
	f.Float64Var(&cfg.BacklogRate, "backlog-rate", cfg.BacklogRate, "backlog: events per second over the 10 healthy endpoints")
	f.DurationVar((*time.Duration)(&cfg.BacklogFor), "backlog-for", cfg.BacklogFor.Std(), "backlog: how long each of the healthy endpoints' two runs sends")
	f.IntVar(&cfg.BacklogCap, "backlog-cap", cfg.BacklogCap, "backlog: the blocked endpoint's max in-flight requests (1-500)")
	f.IntVar(&cfg.BacklogRateLimit, "backlog-rate-limit", cfg.BacklogRateLimit, "backlog: the blocked endpoint's rate limit, requests per second (0: none); a drain held to it shows what a slower drain does to the healthy endpoints")
	f.StringVar(&cfg.BacklogProfile, "backlog-cpuprofile", "", "backlog: write a CPU profile of the drain alone (from the reset until the last backlog delivery arrived) to `FILE`")
	f.DurationVar((*time.Duration)(&cfg.BacklogDelay), "backlog-delay", cfg.BacklogDelay.Std(), "backlog: how long the blocked endpoint's receiver takes to answer once it recovers")
	f.IntVar(&cfg.ScaleEndpoints, "scale-endpoints", cfg.ScaleEndpoints, "scale: endpoints to register (half in a tenant, half in the default tenant)")
	f.IntVar(&cfg.ScaleEngineStarts, "scale-engine-starts", cfg.ScaleEngineStarts, "scale: engine-limit workflows started to compare the registration rate with")
	f.IntVar(&cfg.ScaleSends, "scale-sends", cfg.ScaleSends, "scale: fan-out sends timed in each tenant")
	f.DurationVar((*time.Duration)(&cfg.ScaleFor), "scale-for", 0, "scale: end the registration after this long, e.g. 1h (the call of 10,000 puts in flight finishes; default: register all of --scale-endpoints)")
	f.IntVar(&cfg.RateLimitN, "rate-limit-n", cfg.RateLimitN, "ratelimit: the endpoint's rate limit, requests per second")
	f.IntVar(&cfg.RateEvents, "rate-events", cfg.RateEvents, "ratelimit: events sent at once to the rate-limited endpoint")
	f.IntVar(&cfg.RateHogs, "rate-hogs", cfg.RateHogs, "ratelimit: busy-loop processes in its second run (0: none, a second quiet run)")
	f.IntVar(&cfg.HotEvents, "hot-events", cfg.HotEvents, "hot: events sent at once to one endpoint, then over ten")
	f.IntVar(&cfg.HotCap, "hot-cap", cfg.HotCap, "hot: each endpoint's max in-flight requests (1-500)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole process (server, worker, receivers) to `FILE`; read it with go tool pprof")
	return cmd
}

// parsePairs parses KEY=VALUE flags.
func parsePairs(flag string, list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%w: %s %q: give KEY=VALUE", errUsage, flag, kv)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}

// parseDynamic parses --dynamic-config values: integers, numbers and booleans as such,
// anything else (e.g. durations such as 10s) as strings.
func parseDynamic(list []string) (map[string]any, error) {
	pairs, err := parsePairs("--dynamic-config", list)
	if err != nil || pairs == nil {
		return nil, err
	}
	m := map[string]any{}
	for k, v := range pairs {
		if i, err := strconv.Atoi(v); err == nil {
			m[k] = i
		} else if f, err := strconv.ParseFloat(v, 64); err == nil {
			m[k] = f
		} else if b, err := strconv.ParseBool(v); err == nil {
			m[k] = b
		} else {
			m[k] = v
		}
	}
	return m, nil
}
