package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/policy"
)

// Row is one figure of the table: what was measured, its value, and the target if any.
type Row struct {
	Scenario string `json:"scenario"`
	Figure   string `json:"figure"`
	Value    string `json:"value"`
	Target   string `json:"target,omitempty"`
	// Verdict is "met", "MISSED" or "" (no target, or nothing to judge).
	Verdict string `json:"verdict,omitempty"`
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func lat(l Latency) string {
	return fmt.Sprintf("p50 %s  p99 %s", round(l.P50.Std()), round(l.P99.Std()))
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	default:
		return d.Round(100 * time.Microsecond)
	}
}

func phaseRow(s, name string, p Phase) Row {
	v := fmt.Sprintf("%.1f/s  %s  (%d/%d in %.1fs)", p.PerSecond, lat(p.Latency), p.Arrived, p.Events, float64(p.Seconds))
	if p.CPUms > 0 {
		v += fmt.Sprintf("  %.1f ms CPU each", p.CPUms)
	}
	return Row{Scenario: s, Figure: name, Value: v}
}

// Rows returns the report as table rows, in scenario order.
func (r *Report) Rows() []Row {
	var rows []Row
	if t := r.Throughput; t != nil {
		s := Throughput
		full := fmt.Sprintf("Herald, full load (%d senders)", t.Senders)
		if t.Fanout > 1 {
			full = fmt.Sprintf("Herald, full load (%d senders), fan-out %d: %d events to a tenant, rates in deliveries/s", t.Senders, t.Fanout, t.FanoutEvents)
		}
		if t.Herald.CPUms > 0 {
			// The headline: CPU time moves much less than throughput on a shared machine.
			v := fmt.Sprintf("Herald %.1f ms", t.Herald.CPUms)
			if t.Naive.CPUms > 0 {
				v += fmt.Sprintf(" · naive %.1f ms", t.Naive.CPUms)
			}
			if t.Engine.CPUms > 0 {
				v += fmt.Sprintf(" · engine limit %.1f ms", t.Engine.CPUms)
			}
			rows = append(rows, Row{s, "CPU per delivery (process user+system ÷ workflows, full load)", v, "Herald ≤ 17 ms", verdict(t.Herald.CPUms <= 17)})
		}
		rows = append(rows,
			phaseRow(s, full, t.Herald),
			phaseRow(s, "naive: 1 regular activity, no eager start", t.Naive),
			phaseRow(s, "engine limit: eager start, 1 local activity", t.Engine),
			phaseRow(s, fmt.Sprintf("Herald, steady %.0f/s", t.Rate), t.Steady),
			Row{s, "Herald ÷ naive", fmt.Sprintf("%.2f×", t.VsNaive), "≥ 2.5×", naiveVerdict(t)},
			Row{s, "Herald ÷ engine limit", fmt.Sprintf("%.2f×", t.VsEngine), "≥ 0.9×", verdict(t.VsEngine >= 0.9)},
			Row{s, "engine CPU ÷ Herald CPU, per workflow", fmt.Sprintf("%.2f×", t.CPUVsEngine), "", ""},
			Row{s, "steady p50 / p99 (peer: 1.4s / 2.9s)", lat(t.Steady.Latency), "< 1.4s / 2.9s",
				verdict(t.Steady.Latency.Count > 0 && t.Steady.Latency.P50.Std() < 1400*time.Millisecond && t.Steady.Latency.P99.Std() < 2900*time.Millisecond)},
			Row{s, "full-load rate (peer: 106-154/s)", fmt.Sprintf("%.1f/s", t.Herald.PerSecond), "> 154/s", verdict(t.Herald.PerSecond > 154)},
		)
	}
	if c := r.Cost; c != nil {
		s := Cost
		share := fmt.Sprintf("%.2f ((%d endpoint + %d stats events) ÷ %d, over %d endpoints)",
			c.EndpointShare, c.EndpointEvents, c.StatsEvents, c.Deliveries, c.Endpoints)
		if c.EndpointContinuedAsNew {
			share += ", continued as new during the run"
		}
		rows = append(rows,
			Row{s, "delivery workflow events", fmt.Sprintf("%.2f (min %d, max %d; %.0f bytes)", c.DeliveryEvents, c.DeliveryEventsMin, c.DeliveryEventsMax, c.DeliveryBytes), "", ""},
			Row{s, "endpoint and stats workflows' share", share, "", ""},
			Row{s, "endpoint workflow events by type", eventTypes(c.EndpointEventTypes), "", ""},
			Row{s, "engine-limit workflow, for comparison", fmt.Sprintf("%d events; %d bytes", c.EngineEvents, c.EngineBytes), "", ""},
			Row{s, "history events per first-try delivery", fmt.Sprintf("%.2f", c.PerDelivery), "≤ 8", verdict(c.PerDelivery <= 8)},
		)
		for _, f := range c.Fanout {
			rows = append(rows,
				Row{s, fmt.Sprintf("fan-out %d: history events per delivery", f.Fanout),
					fmt.Sprintf("%.2f (delivery %.2f + endpoints and stats %.2f; %d events → %d deliveries)", f.PerDelivery, f.DeliveryEvents, f.EndpointShare, f.Events, f.Deliveries),
					"≤ 8", verdict(f.PerDelivery <= 8)},
				Row{s, fmt.Sprintf("fan-out %d: events per event for the fan-out itself", f.Fanout),
					fmt.Sprintf("%.2f (the subscription directory gained %d)", f.PerEvent, f.DirectoryEvents), "≤ 4", verdict(f.PerEvent <= 4)},
			)
		}
	}
	if st := r.Storm; st != nil {
		s := Storm
		rows = append(rows,
			Row{s, "events failing together", fmt.Sprintf("%d (first attempts arrived within %s, answered 503 at once)", st.Events, round(st.FirstSpread.Std())), "", ""},
			Row{s, "second attempts arrived", fmt.Sprintf("%d/%d", st.Seconds, st.Events), "", verdict(st.Seconds == st.Events)},
			Row{s, "peak second attempts per second", fmt.Sprintf("%d", st.Peak), fmt.Sprintf("≤ %.1f", st.PeakTarget), verdict(st.Seconds > 0 && float64(st.Peak) <= st.PeakTarget)},
			Row{s, "first / last second attempt after the 503s", fmt.Sprintf("%s / %s", round(st.FirstAt.Std()), round(st.LastAt.Std())),
				fmt.Sprintf("first ≥ %s", round(st.EarliestTarget.Std())), verdict(st.Seconds > 0 && st.FirstAt >= st.EarliestTarget)},
			Row{s, "per second after the 503s", histogram(st.PerSecond), "", ""},
		)
	}
	if is := r.Isolation; is != nil {
		s := Isolation
		rows = append(rows,
			Row{s, fmt.Sprintf("%d healthy endpoints alone", is.Healthy), lat(is.Baseline.Latency), "", ""},
			Row{s, fmt.Sprintf("same, one endpoint hanging %s", is.HangTimeout), fmt.Sprintf("%s  (hanging endpoint took %d requests)", lat(is.WithHang.Latency), is.HangRequests), "", ""},
			Row{s, "healthy p99 with ÷ without", fmt.Sprintf("%.2f×", is.P99Ratio), "≤ 1.5×", verdict(is.P99Ratio > 0 && is.P99Ratio <= 1.5)},
		)
	}
	if c := r.Cap; c != nil {
		s := Cap
		rows = append(rows,
			Row{s, fmt.Sprintf("most concurrent requests (cap %d, receiver %s)", c.Cap, c.Delay), fmt.Sprintf("%d", c.MaxConcurrent),
				fmt.Sprintf("≤ %d", c.Cap), verdict(c.MaxConcurrent <= c.Cap)},
			phaseRow(s, fmt.Sprintf("deliveries (%d at once)", c.Events), c.Delivery),
		)
	}
	if b := r.Breaker; b != nil {
		s := Breaker
		if !b.Reported {
			rows = append(rows,
				Row{s, "circuit state reported", "no (EndpointState.Circuit is empty: the breaker is not wired in yet)", "", "MISSED"},
				Row{s, fmt.Sprintf("requests to an always-503 endpoint in %s", b.For), fmt.Sprintf("%d (%d events)", b.Requests, b.Events), "", ""},
			)
		} else {
			allowed := b.OpenPeriods
			rows = append(rows,
				Row{s, fmt.Sprintf("requests to an always-503 endpoint in %s", b.For), fmt.Sprintf("%d (%d events); %d before the first trip", b.Requests, b.Events, b.BeforeTrip), "", ""},
				Row{s, "requests while the circuit was open", fmt.Sprintf("%d (%d open periods)", b.WhileOpen, b.OpenPeriods), fmt.Sprintf("≤ %d (probes only)", allowed), verdict(b.WhileOpen <= allowed)},
				Row{s, "circuit timeline (after the first send)", timeline(b.Start, b.Timeline), "", ""},
				Row{s, "requests (after the first send, circuit state)", arrivals(b.Arrivals), "", ""},
			)
		}
	}
	if b := r.Backlog; b != nil {
		rows = append(rows, backlogRows(b)...)
	}
	if sc := r.Scale; sc != nil {
		rows = append(rows, scaleRows(sc)...)
	}
	if o := r.Ordered; o != nil {
		rows = append(rows, orderedRows(o)...)
	}
	if rl := r.RateLimit; rl != nil {
		rows = append(rows, rateRows(rl)...)
	}
	if h := r.Hot; h != nil {
		rows = append(rows, hotRows(h)...)
	}
	return rows
}

func scaleRows(sc *ScaleResult) []Row {
	s := Scale
	reg := fmt.Sprintf("%.1f/s  (%d/%d in %.1fs: %d in tenant %s, %d in the default tenant; %d puts at once)",
		sc.Registration.PerSecond, sc.Registration.Arrived, sc.Registration.Events, float64(sc.Registration.Seconds),
		sc.TenantEndpoints, sc.Tenant, sc.DefaultEndpoints, sc.Concurrency)
	if sc.Registration.CPUms > 0 {
		reg += fmt.Sprintf("  %.1f ms CPU each", sc.Registration.CPUms)
	}
	if sc.Failed > 0 {
		reg += fmt.Sprintf("; %d failed, first: %s", sc.Failed, sc.FirstError)
	}
	fanout := func(l Latency) string {
		v := lat(l)
		if sc.FanoutError != "" {
			v += "; first error: " + sc.FanoutError
		}
		return v
	}
	search := func(l Latency) string {
		v := lat(l)
		if sc.SearchError != "" {
			v += "; first error: " + sc.SearchError
		}
		return v
	}
	largest := func(l Largest, unit string) string {
		if l.Workflow == "" {
			return "-"
		}
		return fmt.Sprintf("%d %s (%s)", l.Value, unit, l.Workflow)
	}
	c := sc.Singletons
	census := fmt.Sprintf("%d executions: %s", c.Executions, dash(joinSorted(c.Types, ", ", func(k string, v int) string { return fmt.Sprintf("%s %d", k, v) })))
	if c.Error != "" {
		census += "; " + c.Error
	}
	return []Row{
		{s, "registration through the bulk path", reg, "", ""},
		phaseRow(s, fmt.Sprintf("engine limit: %d starts, %d at once", sc.EngineStarts, sc.Concurrency), sc.Engine),
		{s, "registration ÷ engine start rate", fmt.Sprintf("%.2f×", sc.VsEngine), "≥ 0.5×", verdict(sc.VsEngine >= 0.5)},
		{s, "engine CPU per start ÷ registration CPU per put", fmt.Sprintf("%.2f×", sc.CPUVsEngine), "", ""},
		{s, fmt.Sprintf("fan-out send to %d of %d endpoints (tenant)", scaleMatching, sc.TenantEndpoints), fanout(sc.FanoutTenant), "", ""},
		{s, fmt.Sprintf("fan-out send to %d of %d+ endpoints (default tenant)", scaleMatching, sc.DefaultEndpoints), fanout(sc.FanoutDefault), "", ""},
		{s, fmt.Sprintf("fan-out send to %d of %d endpoints (small tenant)", scaleMatching, scaleSmall), fanout(sc.FanoutSmall), "", ""},
		{s, "fan-out send p50, large ÷ small tenant", fmt.Sprintf("%.2f×", sc.FanoutRatio), "≤ 1.5×", verdict(sc.FanoutRatio > 0 && sc.FanoutRatio <= 1.5)},
		{s, fmt.Sprintf("tenant event search, %d endpoints (first page of 50)", sc.TenantEndpoints), search(sc.SearchTenant), "p50 < 1s", verdict(sc.SearchTenant.Count > 0 && sc.SearchTenant.P50.Std() < time.Second)},
		{s, "tenant event search, default tenant", search(sc.SearchDefault), "", ""},
		{s, "singleton workflows (types other than Delivery and Endpoint)", census, "", ""},
		{s, "largest singleton input (first event)", largest(c.Input, "bytes"), "≤ 65536 bytes", verdict(c.Input.Value <= 64<<10)},
		{s, "largest singleton memo (published state)", largest(c.Memo, "bytes"), "", ""},
		{s, "longest singleton history", largest(c.HistoryEvents, "events"), "", ""},
		{s, "largest singleton history", largest(c.HistoryBytes, "bytes"), "", ""},
	}
}

func backlogRows(b *BacklogResult) []Row {
	s := Backlog
	healthy := func(p Phase, missing int) string {
		v := fmt.Sprintf("%s  (%d/%d arrived)", lat(p.Latency), p.Arrived, p.Events)
		if missing > 0 {
			v += fmt.Sprintf("; %d never arrived, counted as the whole wait: lower bounds", missing)
		}
		return v
	}
	op := func(name string, t OpTiming) Row {
		v := fmt.Sprintf("%.2fs", float64(t.Seconds))
		switch {
		case t.TimedOut:
			v += fmt.Sprintf(" (timed out: %s)", t.Error)
		case t.Error != "":
			v += fmt.Sprintf(" (failed: %s)", t.Error)
		}
		return Row{s, name, v, "< 2s", verdict(t.Error == "" && t.Seconds < 2)}
	}
	get := op(fmt.Sprintf("endpoint get (blocked endpoint, %d waiting)", b.Sent), b.Get)
	if b.Queue >= 0 {
		get.Value += fmt.Sprintf("  queue shown: %d", b.Queue)
	}
	sent := fmt.Sprintf("%d/%d in %.1fs (%d senders); circuit open %.2fs after its one failure", b.Sent, b.Events, float64(b.SendSeconds), b.Senders, float64(b.OpenAfter))
	if b.SendError != "" {
		sent += "; " + b.SendError
	}
	parked := fmt.Sprintf("all %d showed waiting_endpoint %.1fs after the last send", b.Sent, float64(b.ParkSeconds))
	if !b.Parked {
		parked = fmt.Sprintf("not all %d showed waiting_endpoint within %.1fs: the healthy load ran while they were still arriving", b.Sent, float64(b.ParkSeconds))
	}
	used := fmt.Sprintf("%d attempts on %d deliveries; %d requests reached the receiver; status read for %d/%d (%s)",
		b.Attempts, b.WithAttempts, b.Requests, b.StatusRead, b.Events, states(b.States))
	if b.TurnedAway > 0 {
		used += fmt.Sprintf("; %d turned away by the full queue (%d at most queued), to be nudged back", b.TurnedAway, maxQueue)
	}
	if b.StatusRead < b.StatusAsked {
		used += fmt.Sprintf("; %d of %d status queries failed, first: %s", b.StatusAsked-b.StatusRead, b.StatusAsked, b.StatusError)
	}
	usedVerdict := ""
	switch {
	case b.Attempts > 0 || b.Requests > 0:
		usedVerdict = verdict(false)
	case b.StatusRead == b.Sent && b.Sent > 0:
		usedVerdict = verdict(true)
	}
	drain := fmt.Sprintf("%.1f/s  (%d/%d in %.1fs after the reset)", b.DrainPerSecond, b.Drained, b.Events, float64(b.DrainSeconds))
	if b.DrainTimedOut {
		drain += "; the rest did not arrive in time"
	}
	capVerdict := "" // nothing drained: nothing to judge
	if b.Drained > 0 {
		capVerdict = verdict(b.MaxConcurrent <= b.Cap)
	}
	return []Row{
		{s, "backlog sent behind one open circuit", sent, "", ""},
		{s, "backlog parked (visibility shows every one waiting)", parked, "", ""},
		{s, fmt.Sprintf("%d healthy endpoints at %.0f/s, no backlog", b.Healthy, b.Rate), healthy(b.Without, b.WithoutMissing) + "; " + b.WithoutGC.String(), "", ""},
		{s, fmt.Sprintf("same, %d events waiting on the open circuit", b.Sent), healthy(b.With, b.WithMissing) + "; " + b.WithGC.String(), "", ""},
		{s, "healthy p99 with ÷ without", fmt.Sprintf("%.2f×", b.P99Ratio), "≤ 1.5×", verdict(b.P99Ratio > 0 && b.P99Ratio <= 1.5 && b.WithMissing == 0)},
		get,
		op(fmt.Sprintf("endpoint put --max-in-flight %d (blocked endpoint)", b.Cap), b.Put),
		{s, "attempts used by the backlog while open", used, "0", usedVerdict},
		op("endpoint reset (close the circuit by hand)", b.Reset),
		{s, fmt.Sprintf("drain (receiver %s per request)", b.Delay), drain, "", verdict(!b.DrainTimedOut && b.Drained == b.Events)},
		{s, fmt.Sprintf("most concurrent requests to it (cap %d)", b.Cap), fmt.Sprintf("%d", b.MaxConcurrent), fmt.Sprintf("≤ %d", b.Cap), capVerdict},
		phaseRow(s, fmt.Sprintf("engine limit in this run: %d workflows", b.Engine.Events), b.Engine),
		{s, drainTargetLabel(b.RateLimit), fmt.Sprintf("%.2f×  (%.1f/s of %.1f/s)", b.DrainVsTarget, b.DrainPerSecond, b.DrainTarget),
			"≥ 0.8×", verdict(b.DrainTarget > 0 && b.DrainVsTarget >= 0.8)},
		{s, "CPU per delivery while draining ÷ engine limit's per workflow", drainCPU(b), "", ""},
		phaseRow(s, fmt.Sprintf("engine wake floor in this run: %d parked workflows woken by update", b.WakeFloor.Events), b.WakeFloor),
		{s, "drain ÷ engine wake floor (the engine's own pace at waking parked workflows)", fmt.Sprintf("%.2f×", b.DrainVsWakeFloor), "", ""},
		{s, fmt.Sprintf("%d healthy endpoints at %.0f/s while the engine wakes its floor", b.Healthy, b.Rate), healthy(b.FloorWaking, b.FloorWakingMissing), "", ""},
		{s, "healthy p99 while the engine wakes ÷ without backlog (any drain at the engine's pace)", fmt.Sprintf("%.2f×", b.FloorWakingRatio), "", ""},
		{s, fmt.Sprintf("the last %d to drain, from their histories", b.Trail.Sampled), b.Trail.String(), "", ""},
		{s, fmt.Sprintf("%d healthy endpoints at %.0f/s while it drains", b.Healthy, b.Rate), healthy(b.Draining, b.DrainingMissing) + "; " + b.DrainingGC.String(), "", ""},
		{s, "healthy p99 while draining ÷ without backlog", fmt.Sprintf("%.2f×", b.DrainingRatio), "≤ 1.5×",
			verdict(b.DrainingRatio > 0 && b.DrainingRatio <= 1.5 && b.DrainingMissing == 0)},
	}
}

// drainCPU shows the CPU a delivery cost while the backlog drained against the engine
// limit's per workflow.
func drainCPU(b *BacklogResult) string {
	if b.DrainCPUms <= 0 || b.Engine.CPUms <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×  (%.1f ms of %.1f ms; the healthy endpoints' deliveries meanwhile counted in)", b.DrainCPUVsEngine, b.DrainCPUms, b.Engine.CPUms)
}

// maxQueue is the endpoint queue's bound, for the backlog's report.
var maxQueue = policy.DefaultLimiterConfig().MaxQueue

func states(m map[string]int) string {
	return dash(joinSorted(m, ", ", func(k string, v int) string { return fmt.Sprintf("%s %d", k, v) }))
}

func histogram(per []int) string {
	var b strings.Builder
	first := true
	for i, c := range per {
		if c == 0 {
			continue
		}
		if !first {
			b.WriteString(" ")
		}
		first = false
		fmt.Fprintf(&b, "%ds:%d", i, c)
	}
	return b.String()
}

func eventTypes(m map[string]int) string {
	return dash(joinSorted(m, ", ", func(k string, v int) string { return fmt.Sprintf("%s %d", strings.ToLower(k), v) }))
}

func arrivals(as []BreakerArrival) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = fmt.Sprintf("%.1fs %s", float64(a.At), dash(a.State))
	}
	return strings.Join(parts, ", ")
}

// timeline prints each reported state with when it began, relative to t0 ("start" when
// the endpoint gave no time, e.g. closed since it was registered).
func timeline(t0 time.Time, tl []CircuitChange) string {
	if len(tl) == 0 {
		return "-"
	}
	parts := make([]string, len(tl))
	for i, c := range tl {
		at := "start"
		if !c.Since.IsZero() {
			at = fmt.Sprintf("%+.1fs", c.Since.Sub(t0).Seconds())
		}
		parts[i] = at + " " + c.State
	}
	return strings.Join(parts, ", ")
}

// WriteText prints the settings, then the figures as a table, then any scenario errors.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintln(w, "Settings")
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	for _, s := range r.Settings {
		fmt.Fprintf(tw, "  %s\t%s\n", s.Name, s.Value)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tFIGURE\tVALUE\tTARGET\tVERDICT")
	for _, row := range r.Rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", row.Scenario, row.Figure, row.Value, dash(row.Target), dash(row.Verdict))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, name := range Scenarios {
		if d, ok := r.Durations[name]; ok {
			fmt.Fprintf(w, "%s took %.1fs", name, float64(d))
			if msg := r.Errors[name]; msg != "" {
				fmt.Fprintf(w, "; FAILED: %s", msg)
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// naiveVerdict judges Herald against the naive baseline, or nothing when it was left out.
func naiveVerdict(t *ThroughputResult) string {
	if t.Naive.PerSecond == 0 {
		return ""
	}
	return verdict(t.VsNaive >= 2.5)
}

// drainTargetLabel names what the drain is measured against.
func drainTargetLabel(rateLimit int) string {
	if rateLimit > 0 {
		return fmt.Sprintf("drain ÷ min(cap ÷ receiver latency, engine limit, rate limit %d/s)", rateLimit)
	}
	return "drain ÷ min(cap ÷ receiver latency, engine limit)"
}
