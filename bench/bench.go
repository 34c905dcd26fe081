// Package bench measures Herald on an embedded Temporal server with receivers on loopback in
// the same process: throughput and latency against two baselines, history cost per delivery,
// the retry storm after a mass failure, isolation from a hanging endpoint, the per-endpoint
// concurrency cap, the circuit breaker, and a backlog waiting behind one open circuit. It prints figures; it never asserts speed.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/tracing"
	"github.com/heraldhq/herald/worker"
	"github.com/heraldhq/herald/worker/gate"
)

// Scenario names, in the order Run runs them.
const (
	Throughput = "throughput"
	Cost       = "cost"
	Storm      = "storm"
	Isolation  = "isolation"
	Cap        = "cap"
	Breaker    = "breaker"
	Backlog    = "backlog"
	Scale      = "scale"
	Ordered    = "ordered"
	RateLimit  = "ratelimit"
	Hot        = "hot"
)

// Scenarios lists every scenario, in the order Run runs them.
var Scenarios = []string{Throughput, Cost, Storm, Isolation, Cap, Breaker, Backlog, Scale, Ordered, RateLimit, Hot}

// DefaultScenarios are the scenarios Run runs when Config.Scenarios is empty: all but
// scale, whose default size takes as long as 100,000 registrations do, and ordered
// (10,000 deliveries).
var DefaultScenarios = []string{Throughput, Cost, Storm, Isolation, Cap, Breaker, Backlog}

// Config sizes the scenarios. Zero values take the defaults (see DefaultConfig).
type Config struct {
	// Scenarios to run; empty runs DefaultScenarios.
	Scenarios []string `json:"scenarios"`
	// DBFile is the SQLite file of the embedded server; "" keeps it in memory.
	DBFile string `json:"db_file,omitempty"`
	// SQLitePragmas and DynamicConfig tune the embedded server (see devserver.Options).
	SQLitePragmas map[string]string `json:"sqlite_pragmas,omitempty"`
	DynamicConfig map[string]any    `json:"dynamic_config,omitempty"`
	// StockEngine runs the embedded server's storage as Temporal ships it, without the
	// tuning Herald applies (see devserver.Options.Stock): the figure to compare against.
	StockEngine bool `json:"stock_engine,omitempty"`
	// Plaintext turns payload encryption off (it is on in production and by default here).
	Plaintext bool `json:"plaintext"`
	// Tracing, if set, traces the bench's client and worker as a traced production process
	// does (the Temporal interceptor, the attempts' spans, traceparent to the receivers).
	// The embedded server only: with Address, the bench's own worker is not traced.
	Tracing *tracing.Tracing `json:"-"`
	// Traced says Tracing was set, in the report.
	Traced bool `json:"traced,omitempty"`
	// Address, when set, is the frontend (host:port) of an external Temporal to run on
	// instead of the embedded server, in Namespace (which must hold Herald's search
	// attributes). The bench's worker, baselines and receivers still run in this process;
	// other Herald workers polling the same namespace and task queue share the load, and
	// must allow 127.0.0.0/8 (the receivers).
	Address   string `json:"address,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Keys encrypt the payloads (unless Plaintext); nil: a key made for the run. On an
	// external Temporal, give the keys its other workers have.
	Keys *codec.Keyring `json:"-"`

	// Events (N) over Endpoints (M), sent by Senders (C) concurrent senders; the steady
	// phase sends the same N at Rate per second.
	Events    int `json:"events"`
	Endpoints int `json:"endpoints"`
	Senders   int `json:"senders"`
	// SkipNaive leaves the naive baseline out of the throughput scenario (it takes
	// minutes at thousands of events).
	SkipNaive bool    `json:"skip_naive,omitempty"`
	Rate      float64 `json:"rate"`
	// Fanout, above 1, makes the throughput scenario send its events to a tenant with
	// Fanout subscribed endpoints (starter.Publish) instead of to Endpoints endpoints one
	// by one. Each phase still makes Events deliveries (Events/Fanout events), at Rate
	// deliveries per second in the steady phase, so that the rates compare with the engine
	// limit's.
	Fanout int `json:"fanout,omitempty"`
	// CostEvents first-try deliveries, spread over CostEndpoints endpoints, are read back
	// for the cost scenario.
	CostEvents    int `json:"cost_events"`
	CostEndpoints int `json:"cost_endpoints"`
	// StormEvents fail their first attempt together; StormRung is the ladder's first wait
	// (±20% jitter).
	StormEvents int               `json:"storm_events"`
	StormRung   duration.Duration `json:"storm_rung"`
	// IsolationRate events per second go to 10 endpoints for IsolationFor; one hangs until
	// its attempt timeout, HangTimeout.
	IsolationRate float64           `json:"isolation_rate"`
	IsolationFor  duration.Duration `json:"isolation_for"`
	HangTimeout   duration.Duration `json:"hang_timeout"`
	// CapEvents go at once to an endpoint capped at CapLimit whose receiver takes CapDelay.
	CapEvents int               `json:"cap_events"`
	CapLimit  int               `json:"cap_limit"`
	CapDelay  duration.Duration `json:"cap_delay"`
	// BreakerEvents go to an endpoint failing every request, over BreakerFor, with the
	// breaker's probe delay scaled down to ProbeDelay.
	BreakerEvents int               `json:"breaker_events"`
	BreakerFor    duration.Duration `json:"breaker_for"`
	ProbeDelay    duration.Duration `json:"probe_delay"`
	// BacklogEvents wait behind one open circuit (an endpoint capped at BacklogCap) while
	// 10 healthy endpoints take BacklogRate events per second for BacklogFor, once before
	// the backlog exists and once while it waits; then the blocked endpoint's receiver
	// answers after BacklogDelay and its circuit is closed by hand.
	BacklogEvents int `json:"backlog_events"`
	// OrderedKeys keys of OrderedPerKey events each, over OrderedEndpoints endpoints, are
	// sent unordered and then ordered (the ordered scenario).
	OrderedKeys      int               `json:"ordered_keys"`
	OrderedPerKey    int               `json:"ordered_per_key"`
	OrderedEndpoints int               `json:"ordered_endpoints"`
	BacklogRate      float64           `json:"backlog_rate"`
	BacklogFor       duration.Duration `json:"backlog_for"`
	BacklogCap       int               `json:"backlog_cap"`
	BacklogDelay     duration.Duration `json:"backlog_delay"`
	// BacklogRateLimit, if not 0, is the blocked endpoint's rate limit: the drain is held
	// to it, to see what a slower drain does to the healthy endpoints.
	BacklogRateLimit int `json:"backlog_rate_limit,omitempty"`
	// BacklogProfile, if set, names a file for a CPU profile of the backlog's drain only
	// (from the reset until the last backlog delivery arrived).
	BacklogProfile string `json:"backlog_profile,omitempty"`

	// ScaleEndpoints are registered by the scale scenario through the bulk path, half in a
	// tenant of their own and half in the default tenant; ScaleEngineStarts engine-limit
	// workflows are started to compare with; ScaleSends fan-out sends (and a fifth as many
	// tenant searches) are timed in each tenant.
	ScaleEndpoints    int `json:"scale_endpoints"`
	ScaleEngineStarts int `json:"scale_engine_starts"`
	ScaleSends        int `json:"scale_sends"`
	// ScaleFor, when set, ends the scale scenario's registration once it has run this
	// long (the call of starter.MaxPutEndpoints in flight finishes): the largest number
	// registered within a time (0: all ScaleEndpoints).
	ScaleFor duration.Duration `json:"scale_for,omitempty"`

	// RateEvents go at once to an endpoint limited to RateLimitN requests per second,
	// shared by two workers, once quiet and once with RateHogs busy-loop processes (0:
	// one per CPU; NoHogs: none).
	RateLimitN int `json:"rate_limit_n"`
	RateEvents int `json:"rate_events"`
	RateHogs   int `json:"rate_hogs"`

	// HotEvents go from Senders concurrent senders to one endpoint capped at HotCap, and
	// the same to ten such endpoints (the hot scenario).
	HotEvents int `json:"hot_events"`
	HotCap    int `json:"hot_cap"`

	// Progress, if set, receives a line as each phase starts.
	Progress io.Writer `json:"-"`
	// Logger receives the server's and worker's logs; default: discarded.
	Logger *slog.Logger `json:"-"`
}

// DefaultConfig returns the sizes `herald bench` uses: each scenario takes under two
// minutes on a 2-core machine, except backlog (a few minutes; every wait in it is bounded)
// and scale (100,000 registrations: about as many seconds as the registration rate
// allows).
func DefaultConfig() Config {
	return Config{
		Events: 1000, Endpoints: 10, Senders: 50, Rate: 50,
		CostEvents: 200, CostEndpoints: 1,
		StormEvents: 240, StormRung: duration.Duration(30 * time.Second),
		IsolationRate: 50, IsolationFor: duration.Duration(10 * time.Second), HangTimeout: duration.Duration(5 * time.Second),
		CapEvents: 200, CapLimit: 5, CapDelay: duration.Duration(50 * time.Millisecond),
		BreakerEvents: 30, BreakerFor: duration.Duration(15 * time.Second), ProbeDelay: duration.Duration(2 * time.Second),
		OrderedKeys: 1000, OrderedPerKey: 5, OrderedEndpoints: 10,
		BacklogEvents: 5000, BacklogRate: 50, BacklogFor: duration.Duration(20 * time.Second), BacklogCap: 20, BacklogDelay: duration.Duration(20 * time.Millisecond),
		ScaleEndpoints: 100_000, ScaleEngineStarts: 5000, ScaleSends: 50,
		RateLimitN: 100, RateEvents: 3000, RateHogs: runtime.NumCPU(),
		HotEvents: 2000, HotCap: 100,
	}
}

// NoHogs as Config.RateHogs runs the ratelimit scenario's second run with no busy-loop
// process (0 there means the default, one per CPU).
const NoHogs = -1

// setDefaults gives every number (count, rate, duration) that is zero or negative its
// default (but RateHogs NoHogs), and fills in the scenarios and the logger.
func (c *Config) setDefaults() {
	v, def := reflect.ValueOf(c).Elem(), reflect.ValueOf(DefaultConfig())
	noHogs := c.RateHogs == NoHogs
	for i := range v.NumField() {
		if f := v.Field(i); f.CanInt() && f.Int() <= 0 || f.CanFloat() && f.Float() <= 0 {
			f.Set(def.Field(i))
		}
	}
	if noHogs {
		c.RateHogs = NoHogs
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = DefaultScenarios
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Validate checks the scenario names.
func (c Config) Validate() error {
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios, s) {
			return fmt.Errorf("unknown scenario %q: choose from %s", s, strings.Join(Scenarios, ", "))
		}
	}
	return nil
}

// Setting is one configuration value the figures came from.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Report is what Run measured.
type Report struct {
	Settings   []Setting          `json:"settings"`
	Throughput *ThroughputResult  `json:"throughput,omitempty"`
	Cost       *CostResult        `json:"cost,omitempty"`
	Storm      *StormResult       `json:"storm,omitempty"`
	Isolation  *IsolationResult   `json:"isolation,omitempty"`
	Cap        *CapResult         `json:"cap,omitempty"`
	Breaker    *BreakerResult     `json:"breaker,omitempty"`
	Backlog    *BacklogResult     `json:"backlog,omitempty"`
	Ordered    *OrderedResult     `json:"ordered,omitempty"`
	Scale      *ScaleResult       `json:"scale,omitempty"`
	RateLimit  *RateLimitResult   `json:"ratelimit,omitempty"`
	Hot        *HotResult         `json:"hot,omitempty"`
	Errors     map[string]string  `json:"errors,omitempty"`
	Durations  map[string]Seconds `json:"durations"`
}

// Seconds is a duration that prints and marshals as seconds.
type Seconds float64

func secs(d time.Duration) Seconds { return Seconds(d.Seconds()) }

// env is the stack every scenario runs on.
type env struct {
	cfg     Config
	srv     *devserver.Server
	client  client.Client
	worker  *worker.Worker
	starter *starter.Client
	rcv     *receivers
	keys    *codec.Keyring // the payload keys (nil: plaintext)
	tag     string         // makes endpoint ids unique to this run (a --db-file may hold older runs)
}

// Run starts the stack, runs the selected scenarios one after the other and returns what
// they measured. A scenario that fails is recorded in Report.Errors and the others still run.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e, settings, err := start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.stop()
	rep := &Report{Settings: settings, Errors: map[string]string{}, Durations: map[string]Seconds{}}
	run := map[string]func(context.Context) error{
		Throughput: into(&rep.Throughput, e.throughput),
		Cost:       into(&rep.Cost, e.cost),
		Storm:      into(&rep.Storm, e.storm),
		Isolation:  into(&rep.Isolation, e.isolation),
		Cap:        into(&rep.Cap, e.capScenario),
		Breaker:    into(&rep.Breaker, e.breaker),
		Backlog:    into(&rep.Backlog, e.backlog),
		Scale:      into(&rep.Scale, e.scale),
		Ordered:    into(&rep.Ordered, e.ordered),
		RateLimit:  into(&rep.RateLimit, e.ratelimit),
		Hot:        into(&rep.Hot, e.hot),
	}
	for _, name := range Scenarios {
		if !slices.Contains(cfg.Scenarios, name) {
			continue
		}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		e.progress("%s: starting", name)
		began := time.Now()
		err := run[name](ctx)
		rep.Durations[name] = secs(time.Since(began))
		if err != nil {
			rep.Errors[name] = err.Error()
			e.progress("%s: %v", name, err)
		}
	}
	return rep, nil
}

// into runs a scenario and keeps its result in *dst.
func into[T any](dst **T, scenario func(context.Context) (*T, error)) func(context.Context) error {
	return func(ctx context.Context) (err error) {
		*dst, err = scenario(ctx)
		return err
	}
}

func (e *env) progress(format string, args ...any) {
	if e.cfg.Progress != nil {
		fmt.Fprintf(e.cfg.Progress, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
}

func start(ctx context.Context, cfg Config) (*env, []Setting, error) {
	dyn := map[string]any{}
	for k, v := range cfg.DynamicConfig {
		dyn[k] = v
	}
	keys := cfg.Keys
	if cfg.Plaintext {
		keys = nil
	} else if keys == nil {
		dir, err := os.MkdirTemp("", "herald-bench-")
		if err != nil {
			return nil, nil, err
		}
		keys, err = codec.GenerateKeyFile(filepath.Join(dir, "codec.key"))
		os.RemoveAll(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("payload key: %w", err)
		}
	}
	// The production default: the gate renews its leases every second.
	// The product's intervals, not the test stack's shorter ones.
	wopts := worker.Options{RenewInterval: time.Second, StatsInterval: gate.StatsInterval, Logger: cfg.Logger, Tracing: cfg.Tracing}
	var traced func(*client.Options)
	if cfg.Tracing.Enabled() {
		icpt, err := cfg.Tracing.Interceptor()
		if err != nil {
			return nil, nil, err
		}
		traced = func(o *client.Options) { o.Interceptors = append(o.Interceptors, icpt) }
	}
	var stk *testkit.Stack
	var err error
	if cfg.Address != "" {
		stk, err = testkit.Connect(ctx, cfg.Address, cfg.Namespace, keys, wopts)
		if err != nil {
			return nil, nil, fmt.Errorf("start the Herald worker on Temporal at %s (namespace %s): %w", cfg.Address, cfg.Namespace, err)
		}
	} else {
		stk, err = testkit.Start(ctx, testkit.Options{
			Server: devserver.Options{HTTPPort: -1, DBFile: cfg.DBFile, SQLitePragmas: cfg.SQLitePragmas, DynamicConfig: dyn, Logger: cfg.Logger,
				Stock: cfg.StockEngine},
			Keys:   keys,
			Worker: wopts,
			Client: traced,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("start the embedded Temporal server and the Herald worker: %w", err)
		}
	}
	srv, c, w := stk.Server, stk.Client, stk.Worker
	rcv, err := startReceivers()
	if err != nil {
		stk.Stop()
		return nil, nil, err
	}
	e := &env{cfg: cfg, srv: srv, client: c, worker: w, rcv: rcv, keys: keys,
		starter: stk.Starter,
		tag:     strings.ToLower(strings.TrimPrefix(starter.NewEventID(), "evt_"))[20:]}

	storage := "in memory"
	if cfg.DBFile != "" {
		storage = "SQLite file " + cfg.DBFile
	}
	pragmas := map[string]string{"journal_mode": "wal", "synchronous": "normal", "busy_timeout": "10000"}
	for k, v := range cfg.SQLitePragmas {
		pragmas[strings.ToLower(k)] = v
	}
	tuning := "tuned by Herald: visibility in its own database, unused visibility indexes dropped, 1 partition per task queue, a 64 MB events cache, a history queue reader taken for stuck after 100 loads of one second (not 3), transfer and visibility queues checkpointed every second (not 30)"
	if cfg.StockEngine {
		tuning = "stock (--stock-engine): one database, every visibility index, 4 partitions per task queue, a 512 KB events cache"
	}
	server := []Setting{
		{"server", "embedded Temporal (internal/devserver), " + storage + ", 1 history shard (fixed by devserver)"},
		{"storage", tuning},
		{"sqlite pragmas", formatMap(pragmas)},
		{"dynamic config", formatAny(dyn, "server defaults (plus frontend visibility RPS 5000)")},
	}
	if cfg.Address != "" {
		server = []Setting{{"server", fmt.Sprintf("external Temporal at %s, namespace %s (its own storage and dynamic config); other workers on the namespace share the load", cfg.Address, cfg.Namespace)}}
	}
	settings := []Setting{
		{"machine", fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())},
		{"payloads", map[bool]string{true: "plaintext", false: "AES-256-GCM (codec), as in production"}[cfg.Plaintext]},
		{"herald worker", fmt.Sprintf("worker.New defaults: SDK worker options at SDK defaults (2 workflow + 2 activity pollers; 8 workflow pollers on the endpoints' queue; 1000 workflow tasks / 1000 local activities / 1000 activities at once) but a %s sticky schedule-to-start timeout (worker.DefaultStickyTimeout), gate renews its leases every 1s", worker.DefaultStickyTimeout)},
		{"starter", "eager start (the client has the worker in-process)"},
		{"receivers", "one net/http server on 127.0.0.1, in-process"},
	}
	if cfg.Tracing.Enabled() {
		settings = append(settings, Setting{"tracing", "on (--trace): Temporal interceptor on client and worker, a span per attempt, traceparent to the receivers"})
	}
	settings = slices.Insert(settings, 1, server...)
	return e, settings, nil
}

func formatMap(m map[string]string) string {
	return joinSorted(m, " ", func(k, v string) string { return k + "=" + v })
}

// joinSorted formats each entry of m with f, in key order, joined by sep.
func joinSorted[V any](m map[string]V, sep string, f func(string, V) string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = f(k, m[k])
	}
	return strings.Join(parts, sep)
}

func formatAny(m map[string]any, empty string) string {
	if len(m) == 0 {
		return empty
	}
	s := map[string]string{}
	for k, v := range m {
		b, _ := json.Marshal(v)
		s[k] = string(b)
	}
	return formatMap(s)
}

func (e *env) stop() {
	e.worker.Stop()
	e.client.Close()
	e.rcv.close()
	if e.srv != nil {
		e.srv.Stop()
	}
}

// endpointID names a scenario's endpoint, unique to this run.
func (e *env) endpointID(name string) string { return "bench-" + e.tag + "-" + name }

// putEndpoint registers endpoint id at the receiver with answer a.
func (e *env) putEndpoint(ctx context.Context, id string, a answer, o *herald.Overrides) error {
	sec, err := signature.GenerateSecret()
	if err != nil {
		return err
	}
	_, err = e.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, URL: e.rcv.url(id, a), Secret: sec, Overrides: o})
	return err
}

// putEndpoints registers the endpoints ids, 16 at a time, all answering with a.
func (e *env) putEndpoints(ctx context.Context, ids []string, a answer) error {
	_, failed, err := drive(ctx, len(ids), 16, 0, func(ctx context.Context, i int) error {
		return e.putEndpoint(ctx, ids[i], a, nil)
	})
	if failed > 0 {
		return fmt.Errorf("register %d of %d endpoints: %w", failed, len(ids), err)
	}
	return nil
}

// drive calls send for i in [0, n) from senders goroutines, at once (rate 0) or at rate per
// second, and returns when each call began. Failed sends are counted, not retried.
func drive(ctx context.Context, n, senders int, rate float64, send func(ctx context.Context, i int) error) (sentAt []time.Time, failed int, firstErr error) {
	sentAt = make([]time.Time, n)
	next := make(chan int, n)
	go func() {
		defer close(next)
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if rate > 0 {
				due := t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))
				if d := time.Until(due); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
			}
			next <- i
		}
	}()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(senders, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					continue
				}
				at := time.Now()
				err := send(ctx, i)
				mu.Lock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					sentAt[i] = at
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return sentAt, failed, firstErr
}

// sendEvents sends one event per id, endpoint(i) choosing its endpoint, and returns when
// each send began.
func (e *env) sendEvents(ctx context.Context, ids []string, endpoint func(i int) string, senders int, rate float64) ([]time.Time, error) {
	data := benchData
	sentAt, failed, err := drive(ctx, len(ids), senders, rate, func(ctx context.Context, i int) error {
		_, err := e.starter.Send(ctx, starter.Event{ID: ids[i], EndpointID: endpoint(i), Type: "bench.event", Data: data})
		return err
	})
	if failed > 0 {
		return sentAt, fmt.Errorf("%d of %d sends failed, first: %w", failed, len(ids), err)
	}
	return sentAt, nil
}

// putSubscribed registers the endpoints ids in tenant, 16 at a time, each subscribed to
// every type and answering with a.
func (e *env) putSubscribed(ctx context.Context, tenant string, ids []string, a answer) error {
	_, failed, err := drive(ctx, len(ids), 16, 0, func(ctx context.Context, i int) error {
		sec, err := signature.GenerateSecret()
		if err != nil {
			return err
		}
		_, err = e.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: ids[i], Tenant: tenant, URL: e.rcv.url(ids[i], a), Secret: sec})
		return err
	})
	if failed > 0 {
		return fmt.Errorf("register %d of %d endpoints of tenant %s: %w", failed, len(ids), tenant, err)
	}
	return nil
}

// publishEvents sends one event per id to tenant (fan-out), and returns when each send began.
func (e *env) publishEvents(ctx context.Context, tenant string, ids []string, senders int, rate float64) ([]time.Time, error) {
	data := benchData
	sentAt, failed, err := drive(ctx, len(ids), senders, rate, func(ctx context.Context, i int) error {
		_, err := e.starter.Publish(ctx, tenant, starter.Event{ID: ids[i], Type: "bench.event", Data: data})
		return err
	})
	if failed > 0 {
		return sentAt, fmt.Errorf("%d of %d sends to tenant %s failed, first: %w", failed, len(ids), tenant, err)
	}
	return sentAt, nil
}

// fannedOut expands events sent at sentAt to every one of eps into their deliveries, each
// with its event's send time.
func fannedOut(ids []string, sentAt []time.Time, eps []string) ([]delivery, []time.Time) {
	ds := make([]delivery, 0, len(ids)*len(eps))
	at := make([]time.Time, 0, len(ids)*len(eps))
	for i, id := range ids {
		for _, ep := range eps {
			ds = append(ds, delivery{ep, id})
			at = append(at, sentAt[i])
		}
	}
	return ds, at
}

// benchData is every event's payload: a small order, as webhooks usually carry.
var benchData = json.RawMessage(`{"order":42,"amount":"19.99","currency":"EUR","customer":"cus_0001"}`)

func newIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = starter.NewEventID()
	}
	return ids
}

// terminate ends the delivery workflows of ids that are still running (a scenario's
// leftovers), so they do not disturb the next scenario.
func (e *env) terminate(ctx context.Context, ids []string) {
	for _, id := range ids {
		_ = e.client.TerminateWorkflow(ctx, herald.DeliveryID(herald.DefaultTenant, id), "", "bench scenario over")
	}
}
