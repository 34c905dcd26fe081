package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

// tiny runs every scenario end to end at a size that takes seconds. It checks that each
// scenario did its work and that its numbers are consistent, never how fast it was.
func tiny() Config {
	return Config{
		Events: 20, Endpoints: 3, Senders: 5, Rate: 40,
		CostEvents:  10,
		StormEvents: 20, StormRung: duration.Duration(time.Second),
		IsolationRate: 20, IsolationFor: duration.Duration(time.Second), HangTimeout: duration.Duration(time.Second),
		CapEvents: 10, CapLimit: 2, CapDelay: duration.Duration(10 * time.Millisecond),
		BreakerEvents: 5, BreakerFor: duration.Duration(3 * time.Second), ProbeDelay: duration.Duration(time.Second),
		BacklogEvents: 30, BacklogRate: 20, BacklogFor: duration.Duration(time.Second), BacklogCap: 3, BacklogDelay: duration.Duration(5 * time.Millisecond),
	}
}

func TestAllScenariosTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	rep, err := Run(context.Background(), tiny())
	if err != nil {
		t.Fatal(err)
	}
	for name, msg := range rep.Errors {
		t.Errorf("scenario %s failed: %s", name, msg)
	}
	for _, name := range DefaultScenarios {
		if _, ok := rep.Durations[name]; !ok {
			t.Errorf("scenario %s did not run", name)
		}
	}

	tp := rep.Throughput
	if tp == nil {
		t.Fatal("no throughput result")
	}
	for name, p := range map[string]Phase{"herald": tp.Herald, "naive": tp.Naive, "engine": tp.Engine, "steady": tp.Steady} {
		if p.Events != 20 || p.Arrived != 20 {
			t.Errorf("throughput %s: %d of %d events arrived, want all 20", name, p.Arrived, p.Events)
		}
		if p.Latency.Count != 20 || p.Latency.P50 <= 0 || p.Latency.P50 > p.Latency.P99 || p.Latency.P99 > p.Latency.Max {
			t.Errorf("throughput %s: latency %+v is not a sane summary of 20 positive durations", name, p.Latency)
		}
		if p.PerSecond <= 0 {
			t.Errorf("throughput %s: rate %v", name, p.PerSecond)
		}
	}
	if tp.VsNaive <= 0 || tp.VsEngine <= 0 {
		t.Errorf("throughput ratios %v, %v", tp.VsNaive, tp.VsEngine)
	}

	c := rep.Cost
	if c == nil || c.Deliveries != 10 {
		t.Fatalf("cost: %+v", c)
	}
	// A first-try delivery is at least started, task scheduled/started/completed, completed.
	if c.DeliveryEventsMin < 5 || float64(c.DeliveryEventsMin) > c.DeliveryEvents || c.DeliveryEvents > float64(c.DeliveryEventsMax) {
		t.Errorf("cost: delivery events min %d, mean %v, max %d", c.DeliveryEventsMin, c.DeliveryEvents, c.DeliveryEventsMax)
	}
	if c.EndpointEvents < 0 || c.PerDelivery != c.DeliveryEvents+c.EndpointShare {
		t.Errorf("cost: endpoint events %d, share %v, per delivery %v", c.EndpointEvents, c.EndpointShare, c.PerDelivery)
	}
	if len(c.Fanout) != 2 || c.Fanout[0].Fanout != 1 || c.Fanout[1].Fanout != 10 {
		t.Fatalf("cost: fan-out figures %+v, want fan-out 1 and 10", c.Fanout)
	}
	for _, f := range c.Fanout {
		if f.Deliveries != f.Events*f.Fanout || f.DeliveryEvents < 5 || f.PerDelivery < f.DeliveryEvents {
			t.Errorf("cost: fan-out %d: %+v", f.Fanout, f)
		}
	}

	st := rep.Storm
	if st == nil || st.Seconds != 20 || st.Delivered != 20 {
		t.Fatalf("storm: want 20 second attempts, got %+v", st)
	}
	sum := 0
	for _, n := range st.PerSecond {
		sum += n
	}
	if sum != st.Seconds {
		t.Errorf("storm: histogram sums to %d, want %d", sum, st.Seconds)
	}
	if st.FirstAt > st.LastAt || st.Peak < 1 || st.Peak > st.Seconds {
		t.Errorf("storm: first %s, last %s, peak %d", st.FirstAt, st.LastAt, st.Peak)
	}

	is := rep.Isolation
	if is == nil {
		t.Fatal("no isolation result")
	}
	for name, p := range map[string]Phase{"baseline": is.Baseline, "with hang": is.WithHang} {
		if p.Events == 0 || p.Arrived != p.Events {
			t.Errorf("isolation %s: %d of %d healthy events arrived", name, p.Arrived, p.Events)
		}
	}
	if is.HangRequests == 0 {
		t.Error("isolation: the hanging endpoint got no request")
	}

	cp := rep.Cap
	if cp == nil || cp.Delivery.Arrived != 10 || cp.MaxConcurrent < 1 || cp.MaxConcurrent > 10 {
		t.Errorf("cap: %+v", cp)
	}

	b := rep.Breaker
	if b == nil || b.Requests < 1 {
		t.Fatalf("breaker: %+v", b)
	}
	if b.BeforeTrip+b.WhileOpen > b.Requests {
		t.Errorf("breaker: %d before trip + %d while open > %d requests", b.BeforeTrip, b.WhileOpen, b.Requests)
	}

	bl := rep.Backlog
	if bl == nil {
		t.Fatal("no backlog result")
	}
	if bl.Sent != 30 || bl.Drained != 30 || bl.DrainTimedOut {
		t.Errorf("backlog: sent %d, drained %d (timed out %v), want 30 and 30", bl.Sent, bl.Drained, bl.DrainTimedOut)
	}
	if w := bl.WakeFloor; w.Events != 30 || w.Arrived != 30 || w.PerSecond <= 0 || bl.DrainVsWakeFloor <= 0 {
		t.Errorf("backlog wake floor: %d of %d woken at %.1f/s, drain ÷ floor %.2f; want all 30, and a ratio", w.Arrived, w.Events, w.PerSecond, bl.DrainVsWakeFloor)
	}
	if w := bl.FloorWaking; w.Events < 1 || w.Events > 20 || w.Arrived != w.Events || bl.FloorWakingMissing != 0 || bl.FloorWakingRatio <= 0 {
		t.Errorf("backlog healthy while the engine wakes: %d of %d arrived (%d missing), ratio %.2f; want the first at least, all arrived, and a ratio",
			w.Arrived, w.Events, bl.FloorWakingMissing, bl.FloorWakingRatio)
	}
	for name, p := range map[string]Phase{"without": bl.Without, "with": bl.With} {
		if p.Events != 20 || p.Arrived != 20 || p.Latency.Count != 20 {
			t.Errorf("backlog healthy %s: %d of %d arrived, latency over %d", name, p.Arrived, p.Events, p.Latency.Count)
		}
	}
	if bl.WithoutMissing != 0 || bl.WithMissing != 0 || bl.P99Ratio <= 0 {
		t.Errorf("backlog: missing %d/%d, ratio %v", bl.WithoutMissing, bl.WithMissing, bl.P99Ratio)
	}
	for name, op := range map[string]OpTiming{"get": bl.Get, "put": bl.Put, "reset": bl.Reset} {
		if op.Error != "" || op.Seconds <= 0 {
			t.Errorf("backlog %s: %+v", name, op)
		}
	}
	n := 0
	for _, k := range bl.States {
		n += k
	}
	if bl.StatusAsked != 30 || bl.StatusRead != 30 || n != 30 || bl.WithAttempts > bl.StatusRead || bl.Attempts < bl.WithAttempts {
		t.Errorf("backlog: status asked %d, read %d, states %v, %d attempts on %d deliveries", bl.StatusAsked, bl.StatusRead, bl.States, bl.Attempts, bl.WithAttempts)
	}
	if bl.MaxConcurrent < 1 || bl.DrainPerSecond <= 0 {
		t.Errorf("backlog: max concurrent %d, drain %v/s", bl.MaxConcurrent, bl.DrainPerSecond)
	}
	if bl.DrainCPUms <= 0 || bl.DrainCPUVsEngine <= 0 {
		t.Errorf("backlog: drain CPU %v ms per delivery, %v× the engine's", bl.DrainCPUms, bl.DrainCPUVsEngine)
	}
	// Every drained delivery was held once, then attempted on its pass. One that took its
	// pass completes in its attempt's workflow task, with no settle timer (settle-attempt
	// version 3): before, each one's settle timer fired (30 or more).
	if tr := bl.Trail; tr.Sampled != 30 || tr.Attempts < 2 || tr.MaxAttempts < 2 || tr.Timers >= 30 {
		t.Errorf("backlog trail: %+v, want 30 histories of at least 2 attempts, most without a settle timer", tr)
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SCENARIO", "Herald ÷ naive", "history events per first-try delivery", "peak second attempts per second", "healthy p99", "most concurrent requests", "breaker", "attempts used by the backlog"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, text.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Errorf("report does not marshal: %v", err)
	}
}

func TestUnknownScenario(t *testing.T) {
	_, err := Run(context.Background(), Config{Scenarios: []string{"throughput", "speed"}})
	if err == nil || !strings.Contains(err.Error(), `"speed"`) {
		t.Fatalf("want an error naming the unknown scenario, got %v", err)
	}
}

func TestLastArrived(t *testing.T) {
	t0 := time.Now()
	first := map[string]time.Time{"a": t0, "b": t0.Add(3 * time.Second), "c": t0.Add(time.Second), "d": t0.Add(2 * time.Second)}
	if got := lastArrived(first, 2); !slices.Equal(got, []string{"b", "d"}) {
		t.Errorf("last 2: %v, want [b d]", got)
	}
	if got := lastArrived(first, 10); len(got) != 4 || got[3] != "a" {
		t.Errorf("last 10 of 4: %v, want all four, a last", got)
	}
	if got := lastArrived(nil, 5); len(got) != 0 {
		t.Errorf("none arrived: %v", got)
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := summarize(ds)
	if l.Count != 100 || l.P50.Std() != 50*time.Millisecond || l.P99.Std() != 99*time.Millisecond || l.Max.Std() != 100*time.Millisecond {
		t.Fatalf("summarize = %+v", l)
	}
	if (summarize(nil) != Latency{}) {
		t.Fatal("summary of nothing is not zero")
	}
	if ds[0] != 100*time.Millisecond {
		t.Fatal("summarize reordered its input")
	}
}

func TestPhaseOf(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sent := []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second), t0.Add(3 * time.Second)}
	got := []time.Time{t0.Add(100 * time.Millisecond), t0.Add(1200 * time.Millisecond), {}, t0.Add(4 * time.Second)}
	p := phaseOf(sent, got)
	if p.Events != 4 || p.Arrived != 3 || p.Latency.Count != 3 || p.Seconds != 4 || p.PerSecond != 0.75 {
		t.Fatalf("phaseOf = %+v", p)
	}
}

func TestWithMissing(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sent := []time.Time{t0, t0, t0, {}}
	got := []time.Time{t0.Add(time.Second), {}, t0.Add(2 * time.Second), {}}
	p, missing := withMissing(sent, got, t0.Add(10*time.Second))
	if missing != 1 || p.Arrived != 2 || p.Latency.Count != 3 || p.Latency.Max.Std() != 10*time.Second || p.Latency.P50.Std() != 2*time.Second {
		t.Fatalf("withMissing = %+v, %d missing", p, missing)
	}
	p, missing = withMissing(sent[:1], got[:1], t0)
	if missing != 0 || p.Latency.Max.Std() != time.Second {
		t.Fatalf("withMissing with all arrived = %+v, %d missing", p, missing)
	}
}

func TestSentBefore(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sent := []time.Time{t0, t0.Add(time.Second), t0.Add(3 * time.Second), {}}
	got := []time.Time{t0.Add(time.Second), t0.Add(4 * time.Second), t0.Add(5 * time.Second), {}}
	p, missing := sentBefore(sent, got, t0.Add(2*time.Second))
	if missing != 0 || p.Events != 2 || p.Arrived != 2 || p.Latency.Max.Std() != 3*time.Second {
		t.Fatalf("sentBefore = %+v, %d missing; want the first two, the slower taking 3s", p, missing)
	}
	if p, _ := sentBefore(sent, got, t0.Add(-time.Second)); p.Events != 0 {
		t.Fatalf("sentBefore a time before every send = %+v, want no events", p)
	}
}

func TestBreakerTimeline(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tl := []CircuitChange{{State: "closed", Since: t0}, {State: "open", Since: t0.Add(time.Second)}, {State: "half_open", Since: t0.Add(3 * time.Second)}}
	for _, c := range []struct {
		at   time.Duration
		want string
	}{{500 * time.Millisecond, "closed"}, {time.Second, "open"}, {2 * time.Second, "open"}, {4 * time.Second, "half_open"}} {
		if got := stateAt(tl, t0.Add(c.at)); got != c.want {
			t.Errorf("state at +%s = %q, want %q", c.at, got, c.want)
		}
	}
	if stateAt(tl, t0.Add(-time.Second)) != "" || opened(tl, t0.Add(500*time.Millisecond)) || !opened(tl, t0.Add(4*time.Second)) {
		t.Error("stateAt/opened before the timeline or after the trip")
	}
	if got := timeline(t0, append([]CircuitChange{{State: "closed"}}, tl[1:]...)); got != "start closed, +1.0s open, +3.0s half_open" {
		t.Errorf("timeline = %q", got)
	}
	if got := histogram([]int{0, 3, 0, 2}); got != "1s:3 3s:2" {
		t.Errorf("histogram = %q", got)
	}
}

// TestThroughputFanoutTiny: with a fan-out, the throughput phases count deliveries, every
// one of which arrives.
func TestThroughputFanoutTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	cfg := tiny()
	cfg.Scenarios, cfg.Fanout, cfg.SkipNaive = []string{Throughput}, 5, true
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp := rep.Throughput
	if tp == nil {
		t.Fatalf("no throughput result: %v", rep.Errors)
	}
	if tp.Fanout != 5 || tp.FanoutEvents != 4 {
		t.Fatalf("fan-out %d with %d events, want 5 and 4", tp.Fanout, tp.FanoutEvents)
	}
	for name, p := range map[string]Phase{"herald": tp.Herald, "steady": tp.Steady} {
		if p.Events != 20 || p.Arrived != 20 || p.Latency.Count != 20 {
			t.Errorf("throughput %s: %d of %d deliveries arrived (latency of %d), want 20", name, p.Arrived, p.Events, p.Latency.Count)
		}
	}
	if tp.VsEngine <= 0 {
		t.Errorf("throughput vs engine %v", tp.VsEngine)
	}
}

// TestBacklogRateLimitedTiny: with --backlog-rate-limit the blocked endpoint drains held to
// its limit, and the drain is measured against it.
func TestBacklogRateLimitedTiny(t *testing.T) {
	cfg := tiny()
	cfg.Scenarios, cfg.BacklogRateLimit = []string{Backlog}, 10
	bl := runTiny(t, cfg).Backlog
	if bl == nil {
		t.Fatal("no backlog result")
	}
	if bl.Drained != bl.Events || bl.RateLimit != 10 || bl.DrainTarget != 10 {
		t.Fatalf("rate-limited backlog: drained %d of %d, rate limit %d, target %.1f/s; want all, 10 and 10/s",
			bl.Drained, bl.Events, bl.RateLimit, bl.DrainTarget)
	}
	// 30 events at 10 an aligned second take part of one second and two whole ones: the
	// last starts more than 1 s after the reset, so the rate over that is under 30/s.
	if bl.Events != 30 || bl.DrainPerSecond >= 30 {
		t.Errorf("rate-limited backlog drained %d at %.1f/s; at 10 a second, 30 take more than 1 s", bl.Events, bl.DrainPerSecond)
	}
}

// TestHotTiny runs the hot scenario at a size that takes seconds, with a cap small enough
// that the one endpoint's attempts wait for room: every event arrives in both layouts.
func TestHotTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	cfg := tiny()
	cfg.Scenarios, cfg.HotEvents, cfg.HotCap = []string{Hot}, 40, 3
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := rep.Hot
	if h == nil {
		t.Fatalf("no hot result: %v", rep.Errors)
	}
	for name, p := range map[string]Phase{"one endpoint": h.One, "ten endpoints": h.Ten} {
		if p.Events != 40 || p.Arrived != 40 || p.Latency.Count != 40 {
			t.Errorf("hot, %s: %d of %d events arrived (latency of %d), want 40", name, p.Arrived, p.Events, p.Latency.Count)
		}
	}
	if h.P99Ratio <= 0 || h.RateRatio <= 0 {
		t.Errorf("hot ratios: p99 %v, rate %v", h.P99Ratio, h.RateRatio)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "one endpoint ÷ ten: full-load p99") {
		t.Errorf("table lacks the hot p99 ratio:\n%s", text.String())
	}
}

// TestScaleTiny runs the scale scenario at a size that takes seconds: every endpoint is
// registered, the engine baseline ran, every send reached its 10 endpoints, the searches
// answered, and the census found the singletons (the stats shards, the directories).
func TestScaleTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	cfg := Config{Scenarios: []string{Scale}, ScaleEndpoints: 60, ScaleEngineStarts: 20, ScaleSends: 5}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if msg := rep.Errors[Scale]; msg != "" {
		t.Fatalf("scale failed: %s", msg)
	}
	s := rep.Scale
	if s == nil {
		t.Fatal("no scale result")
	}
	if s.TenantEndpoints != 30 || s.DefaultEndpoints != 30 || s.Failed != 0 || s.Registration.Arrived != 60 || s.Registration.PerSecond <= 0 {
		t.Errorf("registration: %+v", s)
	}
	if s.Engine.Arrived != 20 || s.Engine.PerSecond <= 0 || s.VsEngine <= 0 {
		t.Errorf("engine: %+v, ratio %v", s.Engine, s.VsEngine)
	}
	if s.FanoutError != "" || s.SearchError != "" {
		t.Errorf("errors: fan-out %q, search %q", s.FanoutError, s.SearchError)
	}
	for name, l := range map[string]Latency{"fan-out tenant": s.FanoutTenant, "fan-out default": s.FanoutDefault, "fan-out small": s.FanoutSmall} {
		if l.Count != 5 || l.P50 <= 0 {
			t.Errorf("%s: %+v, want 5 timed sends", name, l)
		}
	}
	if s.SearchTenant.Count != 1 || s.SearchDefault.Count != 1 || s.FanoutRatio <= 0 {
		t.Errorf("searches %+v %+v, ratio %v", s.SearchTenant, s.SearchDefault, s.FanoutRatio)
	}
	c := s.Singletons
	if c.Error != "" || c.Executions == 0 || c.Input.Value <= 0 || c.HistoryEvents.Value <= 0 || c.HistoryBytes.Value <= 0 || c.Types["Delivery"] != 0 || c.Types["Endpoint"] != 0 {
		t.Errorf("singletons: %+v", c)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if b, err := json.Marshal(rep); err != nil || !strings.Contains(string(b), `"singletons"`) {
		t.Errorf("report as JSON: %v\n%s", err, b)
	}
	for _, want := range []string{"registration ÷ engine", "fan-out send", "tenant event search", "largest singleton input"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, text.String())
		}
	}
}

// TestRateLimitTiny runs the ratelimit scenario small: every event delivered once, never
// more than the limit in a second, and the stragglers' histories read.
func TestRateLimitTiny(t *testing.T) {
	cfg := tiny()
	cfg.Scenarios, cfg.RateLimitN, cfg.RateEvents, cfg.RateHogs = []string{RateLimit}, 20, 60, 1
	rep := runTiny(t, cfg)
	rl := rep.RateLimit
	if rl == nil {
		t.Fatal("no ratelimit result")
	}
	for name, p := range map[string]RatePhase{"quiet": rl.Quiet, "busy": rl.Busy} {
		if p.Sent != 60 || p.Delivered != 60 || p.Duplicates != 0 {
			t.Errorf("%s: sent %d, delivered %d, %d twice; want 60, 60, 0", name, p.Sent, p.Delivered, p.Duplicates)
		}
		if p.MostSigned > 20 || p.OverLimit != 0 {
			t.Errorf("%s: %d requests in one second (%d seconds over), limit 20", name, p.MostSigned, p.OverLimit)
		}
		if tr := p.Trail; tr.Sampled != trailSample || tr.Attempts < 1 || tr.MaxAttempts < 1 {
			t.Errorf("%s trail: %+v, want %d histories of at least one attempt", name, tr, trailSample)
		}
	}
}

// TestSetDefaultsKeepsNoHogs: zero RateHogs is one per CPU, NoHogs stays none.
func TestSetDefaultsKeepsNoHogs(t *testing.T) {
	var c Config
	c.setDefaults()
	if c.RateHogs != runtime.NumCPU() {
		t.Errorf("RateHogs 0 became %d; want one per CPU (%d)", c.RateHogs, runtime.NumCPU())
	}
	c = Config{RateHogs: NoHogs}
	c.setDefaults()
	if c.RateHogs != NoHogs {
		t.Errorf("RateHogs NoHogs became %d; want it kept", c.RateHogs)
	}
	if c.RateEvents != DefaultConfig().RateEvents {
		t.Errorf("the other numbers must still get their defaults: RateEvents %d", c.RateEvents)
	}
}

// TestOrderedTiny runs the ordered scenario small: both phases arrive in full, in order
// within each key, with their CPU per delivery measured and the history sampled.
func TestOrderedTiny(t *testing.T) {
	cfg := tiny()
	cfg.Scenarios, cfg.OrderedKeys, cfg.OrderedPerKey, cfg.OrderedEndpoints = []string{Ordered}, 6, 3, 2
	rep := runTiny(t, cfg)
	o := rep.Ordered
	if o == nil {
		t.Fatal("no ordered result")
	}
	if o.FloorError != "" {
		t.Errorf("ordering floors: %s", o.FloorError)
	}
	// With 6 keys over 2 endpoints and 4 shared workflows per endpoint, keys 0 and 4 hash
	// to one shared workflow and 1 and 5 to another: 4 workflows for 18 sends against 6,
	// so fewer events per send.
	if o.FloorPerKeyEvents <= 0 || o.FloorSharedEvents <= 0 || o.FloorSharedEvents >= o.FloorPerKeyEvents {
		t.Errorf("ordering floors' events per send: per key %v, shared %v; want both measured, shared fewer", o.FloorPerKeyEvents, o.FloorSharedEvents)
	}
	if o.FloorBatchedUpdates < 1 || o.FloorBatchedUpdates > 18 || o.FloorBatchedEvents <= 0 {
		t.Errorf("batched floor: %d updates for 18 sends, %v events per send; want 1 to 18, measured", o.FloorBatchedUpdates, o.FloorBatchedEvents)
	}
	for name, p := range map[string]Phase{"unordered": o.Unordered, "ordered": o.Ordered,
		"engine floor": o.FloorEngine, "per-key floor": o.FloorPerKey, "shared floor": o.FloorShared, "batched floor": o.FloorBatched} {
		if p.Events != 18 || p.Arrived != 18 {
			t.Errorf("%s: %d of %d arrived, want all 18", name, p.Arrived, p.Events)
		}
		if p.CPUms <= 0 {
			t.Errorf("%s: CPU per delivery %v, want it measured", name, p.CPUms)
		}
	}
	if o.OrderedOutOfOrder != 0 || o.OrderedArrivalsSet != 18 {
		t.Errorf("ordered: %d out of order, %d arrivals; want 0 and 18", o.OrderedOutOfOrder, o.OrderedArrivalsSet)
	}
	if o.Ratio <= 0 || o.SequencerEvents <= 0 || o.DeliveryEvents <= 0 {
		t.Errorf("ratio %v, sequencer events %v, delivery events %v: want all measured", o.Ratio, o.SequencerEvents, o.DeliveryEvents)
	}
	if o.BurstError != "" || o.BurstOutOfOrder != 0 {
		t.Errorf("burst: %q, %d out of order", o.BurstError, o.BurstOutOfOrder)
	}
	var cpuRow bool
	for _, r := range rep.Rows() {
		if strings.HasPrefix(r.Figure, "CPU per delivery, ordered ÷ unordered") && strings.HasSuffix(r.Value, "ms)") {
			cpuRow = true
		}
	}
	if !cpuRow {
		t.Error("no row with the CPU per delivery of the two phases")
	}
}

// runTiny runs cfg (skipped with -short: it starts a Temporal server), stops the test if
// the stack does not start, and reports each scenario that failed.
func runTiny(t *testing.T, cfg Config) *Report {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, msg := range rep.Errors {
		t.Errorf("scenario %s failed: %s", name, msg)
	}
	return rep
}

// TestGroupAppender: appends to one holder that come while its update is in flight go
// together in the next update; each append returns once, with its update's error; another
// holder's appends are not held behind it.
func TestGroupAppender(t *testing.T) {
	var mu sync.Mutex
	var batches [][]orderAppend
	release := make(chan struct{})
	var held atomic.Int64 // the size of the update held in flight
	g := &groupAppender{holders: map[string]*appendQueue{}, send: func(holder string, as []orderAppend) error {
		if holder == "slow" && held.CompareAndSwap(0, int64(len(as))) {
			<-release
		}
		mu.Lock()
		batches = append(batches, as)
		mu.Unlock()
		if holder == "bad" {
			return fmt.Errorf("refused")
		}
		return nil
	}}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- g.append(ctx, "slow", orderAppend{Key: "k", ID: fmt.Sprint(i)}) }()
	}
	// Another holder goes while "slow" is held.
	if err := g.append(ctx, "other", orderAppend{Key: "k", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := g.append(ctx, "bad", orderAppend{Key: "k", ID: "y"}); err == nil {
		t.Error("an update's error must reach its appends")
	}
	// Every append not in the held update waits in the queue: then it goes as one.
	for {
		g.mu.Lock()
		q := g.holders["slow"]
		waiting := 0
		if q != nil {
			waiting = len(q.queue)
		}
		g.mu.Unlock()
		if n := held.Load(); n > 0 && int64(waiting) == 50-n {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	seen := map[string]int{}
	slow := 0
	for _, b := range batches {
		for _, a := range b {
			seen[a.ID]++
		}
	}
	for _, b := range batches {
		if len(b) > 0 && b[0].ID != "x" && b[0].ID != "y" {
			slow++
		}
	}
	if len(seen) != 52 {
		t.Errorf("%d distinct appends sent, want 52", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("append %s sent %d times", id, n)
		}
	}
	want := 2 // the held update, then the rest in one
	if held.Load() == 50 {
		want = 1
	}
	if slow != want {
		t.Errorf("50 appends to a held holder went in %d updates (%d in the first): want the rest in one", slow, held.Load())
	}
}
