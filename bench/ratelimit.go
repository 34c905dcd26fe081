package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

// RateLimitResult is a rate-limited endpoint under more load than its limit, measured once
// on a quiet machine and once with a CPU hog on every core, each time against the engine
// limit measured in the same conditions.
type RateLimitResult struct {
	Limit   int `json:"limit"`
	Events  int `json:"events"`
	Senders int `json:"senders"`
	// Workers is how many Herald workers (each with its gate) share the endpoint.
	Workers int       `json:"workers"`
	Quiet   RatePhase `json:"quiet"`
	Busy    RatePhase `json:"busy"`
}

// RatePhase is one run of the ratelimit scenario.
type RatePhase struct {
	// Hogs is how many busy-loop processes ran meanwhile.
	Hogs int `json:"hogs"`
	// Engine is the engine limit (eager start, one local activity) in the same conditions;
	// EngineError says why it could not be measured (then VsBound compares with the limit).
	Engine      Phase  `json:"engine"`
	EngineError string `json:"engine_error,omitempty"`
	// Delivered of Sent arrived (once each) within Seconds of the first send, at PerSecond.
	Sent      int     `json:"sent"`
	Delivered int     `json:"delivered"`
	Seconds   Seconds `json:"seconds"`
	PerSecond float64 `json:"per_second"`
	// VsLimit is PerSecond over the limit; VsBound over min(limit, engine limit).
	VsLimit float64 `json:"vs_limit"`
	VsBound float64 `json:"vs_bound"`
	// MostSigned is the most requests signed in one aligned second (webhook-timestamp);
	// MostArrived the most that arrived in one second of the receiver's clock; OverLimit
	// how many seconds (by webhook-timestamp) had more than the limit.
	MostSigned  int `json:"most_signed"`
	MostArrived int `json:"most_arrived"`
	OverLimit   int `json:"over_limit_seconds"`
	// Signed counts the requests signed in each second from the first send's (by
	// webhook-timestamp). SendSeconds is how long the sends took; WhileSends the rate
	// signed meanwhile, and AfterSends the rate delivered after the last send was accepted
	// (the endpoint's queue draining).
	Signed      []int   `json:"signed_per_second,omitempty"`
	SendSeconds Seconds `json:"send_seconds"`
	WhileSends  float64 `json:"while_sends_per_second"`
	AfterSends  float64 `json:"after_sends_per_second"`
	// Duplicates counts events that arrived more than once.
	Duplicates int `json:"duplicates"`
	// Stranded counts the deliveries not delivered in the end that wait on a recheck as
	// queued while the endpoint's queue is empty (lost wake-ups); StrandedRead how many of
	// the undelivered ones could be read. EndpointQueue is the queue at the end.
	Stranded      int `json:"stranded"`
	StrandedRead  int `json:"stranded_read"`
	EndpointQueue int `json:"endpoint_queue"`
	// Trail is what the histories of the last deliveries to arrive show (Trail).
	Trail Trail `json:"trail"`
}

// rateWorkers is how many workers share the rate-limited endpoint.
const rateWorkers = 2

func (e *env) ratelimit(ctx context.Context) (*RateLimitResult, error) {
	cfg := e.cfg
	res := &RateLimitResult{Limit: cfg.RateLimitN, Events: cfg.RateEvents, Senders: cfg.Senders, Workers: rateWorkers}
	stop, err := e.secondWorker(ctx)
	if err != nil {
		return nil, fmt.Errorf("start the second worker: %w", err)
	}
	defer stop()
	if res.Quiet, err = e.ratePhase(ctx, "quiet", 0); err != nil {
		return res, err
	}
	res.Busy, err = e.ratePhase(ctx, "busy", cfg.RateHogs)
	return res, err
}

// ratePhase measures the engine limit, then sends RateEvents events at once to a fresh
// endpoint limited to RateLimitN, with hogs busy-loop processes running meanwhile.
func (e *env) ratePhase(ctx context.Context, label string, hogs int) (RatePhase, error) {
	cfg := e.cfg
	p := RatePhase{Hogs: max(hogs, 0)}
	if hogs > 0 {
		stop, err := startHogs(hogs)
		if err != nil {
			return p, err
		}
		defer stop()
		e.progress("ratelimit: %s: %d CPU hogs running", label, hogs)
	}
	e.progress("ratelimit: %s: engine limit (eager start, one local activity), %d workflows", label, min(cfg.RateEvents, 1000))
	var err error
	if p.Engine, err = e.baseline(ctx, engineQueue, engineFlow, engine, true, min(cfg.RateEvents, 1000), cfg.Senders); err != nil {
		// A loaded machine may fail a few starts: the rate limit is still measured.
		e.progress("ratelimit: %s: engine limit: %v", label, err)
		p.EngineError = err.Error()
		if ctx.Err() != nil {
			return p, ctx.Err()
		}
	}

	id := e.endpointID("rl-" + label)
	var mu sync.Mutex
	signed := map[int64]int{}
	arrived := map[int64]int{}
	seen := map[string]int{}
	first := map[string]time.Time{} // each event's first arrival
	var last time.Time
	ok := func(w http.ResponseWriter, r *http.Request, _ int) {
		now := time.Now()
		ts, _ := strconv.ParseInt(r.Header.Get(signature.HeaderTimestamp), 10, 64)
		mu.Lock()
		signed[ts]++
		arrived[now.Unix()]++
		wid := r.Header.Get(signature.HeaderID)
		if seen[wid]++; seen[wid] == 1 {
			first[wid] = now
		}
		last = now
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}
	limit := cfg.RateLimitN
	if err := e.putEndpoint(ctx, id, ok, &herald.Overrides{RateLimit: &limit}); err != nil {
		return p, err
	}
	ids := newIDs(cfg.RateEvents)
	defer e.terminate(context.WithoutCancel(ctx), ids)
	e.progress("ratelimit: %s: %d events at once to %s (limit %d/s), %d senders, %d workers", label, len(ids), id, limit, cfg.Senders, rateWorkers)
	t0 := time.Now()
	sentAt, err := e.sendEvents(ctx, ids, func(int) string { return id }, cfg.Senders, 0)
	p.Sent = countSet(sentAt)
	if err != nil {
		e.progress("ratelimit: %s: %v", label, err)
	}
	delivered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	wait := time.Minute + time.Duration(float64(len(ids))/float64(limit)*1.5*float64(time.Second))
	tick := ticker(10*time.Second, func() { e.progress("ratelimit: %s: %d/%d delivered", label, delivered(), p.Sent) })
	waitUntil(ctx, wait, func() bool { return delivered() >= p.Sent })
	tick()

	mu.Lock()
	p.Delivered = len(seen)
	for _, n := range seen {
		if n > 1 {
			p.Duplicates++
		}
	}
	for _, n := range signed {
		p.MostSigned = max(p.MostSigned, n)
		if n > limit {
			p.OverLimit++
		}
	}
	for _, n := range arrived {
		p.MostArrived = max(p.MostArrived, n)
	}
	for s := t0.Unix(); s <= last.Unix(); s++ {
		p.Signed = append(p.Signed, signed[s])
	}
	if sendEnd := latest(sentAt); sendEnd.After(t0) && last.After(sendEnd) {
		before := countBefore(signed, sendEnd)
		p.SendSeconds = secs(sendEnd.Sub(t0))
		p.WhileSends = float64(before) / sendEnd.Sub(t0).Seconds()
		p.AfterSends = float64(p.Delivered-before) / last.Sub(sendEnd).Seconds()
	}
	if last.After(t0) {
		p.Seconds = secs(last.Sub(t0))
		p.PerSecond = float64(p.Delivered) / last.Sub(t0).Seconds()
	}
	got := map[string]bool{}
	for id := range seen {
		got[id] = true
	}
	stragglers := lastArrived(first, trailSample)
	mu.Unlock()
	p.Trail = e.trail(ctx, stragglers)
	p.VsLimit = ratio(p.PerSecond, float64(limit))
	bound := float64(limit)
	if p.Engine.PerSecond > 0 {
		bound = min(bound, p.Engine.PerSecond)
	}
	p.VsBound = ratio(p.PerSecond, bound)
	e.stranded(ctx, id, ids, got, &p)
	return p, ctx.Err()
}

// stranded reads the endpoint's queue and the status of (up to 200 of) the events not
// delivered, and counts those that wait as queued while the queue is empty.
func (e *env) stranded(ctx context.Context, endpoint string, ids []string, got map[string]bool, p *RatePhase) {
	qctx, cancel := context.WithTimeout(ctx, statusTimeout)
	st, err := e.starter.GetEndpoint(qctx, endpoint)
	cancel()
	if err != nil {
		p.EndpointQueue = -1
		return
	}
	p.EndpointQueue = st.Queue
	var missing []string
	for _, id := range ids {
		if !got[id] && len(missing) < 200 {
			missing = append(missing, id)
		}
	}
	for _, id := range missing {
		qctx, cancel := context.WithTimeout(ctx, statusTimeout)
		r, err := e.starter.Status(qctx, starter.Ref{EventID: id})
		cancel()
		if err != nil {
			continue
		}
		p.StrandedRead++
		if r.Waiting != nil && r.Waiting.Queued && st.Queue == 0 {
			p.Stranded++
		}
	}
}

// secondWorker starts another Herald worker on the bench's server, with a client and a
// gate of its own, as a second process would have; stop it with the returned func.
func (e *env) secondWorker(ctx context.Context) (func(), error) {
	o := client.Options{
		Logger:        sdklog.NewStructuredLogger(testkit.Quiet),
		DataConverter: codec.DataConverter(e.keys), FailureConverter: codec.FailureConverter(e.keys),
		Identity: codec.Identity("", e.keys),
	}
	if e.srv != nil {
		o.HostPort, o.Namespace, o.ConnectionOptions = e.srv.FrontendAddress(), e.srv.Namespace(), e.srv.Connection()
	} else {
		o.HostPort, o.Namespace = e.cfg.Address, e.cfg.Namespace
	}
	c, err := client.DialContext(ctx, o)
	if err != nil {
		return nil, err
	}
	w, err := worker.New(c, worker.Options{Net: testkit.Loopback, RenewInterval: time.Second, Logger: e.cfg.Logger})
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return func() { w.Stop(); c.Close() }, nil
}

// startHogs starts n busy-loop processes (sh), each of which also ends when this process
// is gone; stop ends them.
func startHogs(n int) (stop func(), err error) {
	script := `p=$1; while kill -0 "$p" 2>/dev/null; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; done`
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command("sh", "-c", script, "hog", strconv.Itoa(os.Getpid()))
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("start a CPU hog: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

func rateRows(rl *RateLimitResult) []Row {
	s := RateLimit
	var rows []Row
	for _, ph := range []struct {
		name string
		p    RatePhase
	}{{"quiet", rl.Quiet}, {fmt.Sprintf("%d CPU hogs", rl.Busy.Hogs), rl.Busy}} {
		p := ph.p
		if p.Sent == 0 {
			continue
		}
		bound, engineFig := float64(rl.Limit), fmt.Sprintf("%.1f/s", p.Engine.PerSecond)
		if p.Engine.PerSecond > 0 {
			bound = min(bound, p.Engine.PerSecond)
		}
		if p.EngineError != "" {
			engineFig += " (" + p.EngineError + ")"
		}
		rows = append(rows,
			Row{s, ph.name + ": engine limit (same conditions)", engineFig, "", ""},
			Row{s, fmt.Sprintf("%s: delivered/s, limit %d, %d events, %d workers", ph.name, rl.Limit, rl.Events, rl.Workers),
				fmt.Sprintf("%.1f/s = %.2f× the limit, %.2f× min(limit, engine) (%d/%d in %.1fs)", p.PerSecond, p.VsLimit, p.VsBound, p.Delivered, p.Sent, float64(p.Seconds)),
				fmt.Sprintf("≥ %.1f/s (0.9 × %.1f)", 0.9*bound, bound), verdict(p.VsBound >= 0.9)},
			Row{s, ph.name + ": while the sends go, and after the last (the queue draining)",
				fmt.Sprintf("%.1f/s for %.1fs; then %.1f/s", p.WhileSends, float64(p.SendSeconds), p.AfterSends), "", ""},
			Row{s, ph.name + ": most requests in one aligned second (webhook-timestamp; arrival)", fmt.Sprintf("%d; %d (%d seconds over)", p.MostSigned, p.MostArrived, p.OverLimit),
				fmt.Sprintf("≤ %d", rl.Limit), verdict(p.MostSigned <= rl.Limit)},
			Row{s, ph.name + ": every event delivered once", fmt.Sprintf("%d/%d, %d twice", p.Delivered, p.Sent, p.Duplicates), "all", verdict(p.Delivered == p.Sent && p.Sent == rl.Events)},
			Row{s, fmt.Sprintf("%s: the last %d to arrive, from their histories", ph.name, p.Trail.Sampled), p.Trail.String(), "", ""},
			Row{s, ph.name + ": left waiting as queued while the queue is empty", fmt.Sprintf("%d (of %d undelivered read; queue %d)", p.Stranded, p.StrandedRead, p.EndpointQueue), "0", verdict(p.Stranded == 0)},
		)
	}
	return rows
}

// latest is the latest of ts.
func latest(ts []time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// countBefore counts the requests signed in the seconds before t's (by webhook-timestamp).
func countBefore(signed map[int64]int, t time.Time) int {
	n := 0
	for s, c := range signed {
		if s < t.Unix() {
			n += c
		}
	}
	return n
}
