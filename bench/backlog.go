package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
)

// The backlog scenario's bounds: every wait ends by itself.
const (
	// backlogHealthy endpoints take the steady load.
	backlogHealthy = 10
	// opTimeout bounds each operator command (endpoint get, put, reset).
	opTimeout = 30 * time.Second
	// statusTimeout bounds one status query; statusBudget all of them.
	statusTimeout = 5 * time.Second
	statusBudget  = 90 * time.Second
	// statusReaders query statuses at once.
	statusReaders = 16
	// openTimeout bounds the wait for the circuit to open after the first failure.
	openTimeout = time.Minute
	// backlogProbeDelay puts the circuit's probe well past the scenario's end.
	backlogProbeDelay = time.Hour
)

// OpTiming is how long one operator command took; a timeout or an error is a result.
type OpTiming struct {
	Seconds  Seconds `json:"seconds"`
	Error    string  `json:"error,omitempty"`
	TimedOut bool    `json:"timed_out,omitempty"`
}

// BacklogResult is what N deliveries queued behind one open circuit do to everything else.
type BacklogResult struct {
	Events  int               `json:"events"`
	Senders int               `json:"senders"`
	Healthy int               `json:"healthy_endpoints"`
	Rate    float64           `json:"rate"`
	For     duration.Duration `json:"for"`
	Cap     int               `json:"cap"`
	Delay   duration.Duration `json:"drain_receiver_delay"`
	// RateLimit is the blocked endpoint's rate limit (0: none): a drain held to it.
	RateLimit int `json:"rate_limit,omitempty"`

	// OpenAfter is how long after the first (failing) send the circuit was seen open.
	OpenAfter Seconds `json:"open_after"`
	// Sent of Events were sent in SendSeconds; SendError is the first failed send's error.
	Sent        int     `json:"sent"`
	SendSeconds Seconds `json:"send_seconds"`
	SendError   string  `json:"send_error,omitempty"`
	// Parked says whether every sent backlog delivery showed waiting_endpoint within
	// parkTimeout; ParkSeconds is how long after the last send that took.
	Parked      bool    `json:"parked"`
	ParkSeconds Seconds `json:"park_seconds"`

	// Without is the healthy endpoints' steady load before the backlog exists; With the
	// same load while it waits. Events that did not arrive within the wait count in the
	// latency as the wait (a lower bound): see Missing.
	Without        Phase   `json:"without_backlog"`
	With           Phase   `json:"with_backlog"`
	WithoutMissing int     `json:"without_backlog_missing"`
	WithMissing    int     `json:"with_backlog_missing"`
	P99Ratio       float64 `json:"p99_ratio"`
	// WithoutGC and WithGC are the Go runtime's garbage collections in this process
	// (server, worker and receivers) during each healthy run.
	WithoutGC GCStats `json:"without_backlog_gc"`
	WithGC    GCStats `json:"with_backlog_gc"`

	// Get, Put and Reset are `endpoint get`, `endpoint put --max-in-flight` and
	// `endpoint reset` on the blocked endpoint, through the starter, while the backlog waits.
	Get   OpTiming `json:"get"`
	Put   OpTiming `json:"put"`
	Reset OpTiming `json:"reset"`
	// Queue is the endpoint's queue as Get showed it (-1: Get failed).
	Queue int `json:"queue"`

	// StatusRead of StatusAsked backlog deliveries answered a status query within the
	// budget; Attempts is the attempts recorded on them, WithAttempts how many had any,
	// States how many were in each state. Requests is how many requests for backlog events
	// reached the receiver while the circuit was open.
	StatusAsked  int            `json:"status_asked"`
	StatusRead   int            `json:"status_read"`
	StatusError  string         `json:"status_error,omitempty"`
	Attempts     int            `json:"attempts"`
	WithAttempts int            `json:"with_attempts"`
	States       map[string]int `json:"states"`
	Requests     int            `json:"requests_while_open"`
	// TurnedAway is how many of those read were turned away by the endpoint's full queue
	// (herald.Hold.Full): they wait for room, to be nudged back once the queue has it.
	TurnedAway int `json:"turned_away"`

	// Drained of Events were delivered (204) within DrainSeconds of the reset, at
	// DrainPerSecond; DrainTimedOut is set when not all were. MaxConcurrent is the most
	// requests the blocked endpoint's receiver had in progress at once.
	Drained        int     `json:"drained"`
	DrainSeconds   Seconds `json:"drain_seconds"`
	DrainPerSecond float64 `json:"drain_per_second"`
	DrainTimedOut  bool    `json:"drain_timed_out"`
	MaxConcurrent  int     `json:"max_concurrent"`

	// Engine is the engine limit measured in this run (eager start, one local activity,
	// Config.Events workflows); DrainTarget is min(Cap ÷ Delay, Engine's rate, RateLimit) and
	// DrainVsTarget the drain's rate over it.
	Engine        Phase   `json:"engine"`
	DrainTarget   float64 `json:"drain_target"`
	DrainVsTarget float64 `json:"drain_vs_target"`
	// DrainCPUms is the process's CPU time from the reset until the last backlog delivery
	// arrived, per delivery made meanwhile (the backlog's and the healthy endpoints' that
	// ran alongside); DrainCPUVsEngine is it over Engine.CPUms: what a woken delivery costs
	// against a workflow that goes at once (the healthy ones pull it down a little).
	DrainCPUms       float64 `json:"drain_cpu_ms_per_delivery,omitempty"`
	DrainCPUVsEngine float64 `json:"drain_cpu_vs_engine,omitempty"`
	// WakeFloor is the engine's own pace at waking parked workflows, in this run
	// (wakeFloorPhase: min(Events, wakeFloorMax) workflows woken by update, one local
	// activity each); DrainVsWakeFloor is the drain's rate over it.
	WakeFloor        Phase   `json:"wake_floor"`
	DrainVsWakeFloor float64 `json:"drain_vs_wake_floor,omitempty"`
	// FloorWaking is the healthy endpoints' same steady load while the engine alone wakes
	// the wake floor's parked workflows (the events sent before the last one ran), and
	// FloorWakingRatio its p99 over Without's: what a drain at the engine's own wake pace
	// does to the healthy endpoints whoever drains.
	FloorWaking        Phase   `json:"while_floor_waking"`
	FloorWakingMissing int     `json:"while_floor_waking_missing"`
	FloorWakingRatio   float64 `json:"while_floor_waking_p99_ratio,omitempty"`
	// Trail is what the histories of the last backlog deliveries to arrive show (Trail).
	Trail Trail `json:"trail"`
	// Draining is the healthy endpoints' same steady load while the backlog drains;
	// DrainingRatio its p99 over Without's.
	Draining        Phase   `json:"while_draining"`
	DrainingMissing int     `json:"while_draining_missing"`
	DrainingGC      GCStats `json:"while_draining_gc"`
	DrainingRatio   float64 `json:"while_draining_p99_ratio"`
}

// wakeFloorMax bounds the workflows the wake floor parks: enough for a rate, and for
// waking to last some seconds of the healthy load run alongside.
const wakeFloorMax = 5000

// rateLimitOverride is the override for a rate limit of n per second: none for 0.
func rateLimitOverride(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// sentBefore summarises, as withMissing does, the events of sentAt sent before last.
func sentBefore(sentAt, arrived []time.Time, last time.Time) (Phase, int) {
	var s, a []time.Time
	for i, t := range sentAt {
		if !t.IsZero() && !t.After(last) {
			s, a = append(s, t), append(a, arrived[i])
		}
	}
	return withMissing(s, a, time.Now())
}

// countArrivedBefore counts the arrival times in ts that are set and not after last.
func countArrivedBefore(ts []time.Time, last time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.IsZero() && !t.After(last) {
			n++
		}
	}
	return n
}

// drainTarget is the rate a backlog can drain at: min(cap ÷ the receiver's latency, the
// engine's limit, the endpoint's rate limit if it has one); 0 if cap, latency or engine
// limit is unknown.
func drainTarget(capN int, delay time.Duration, engine float64, rateLimit int) float64 {
	if capN <= 0 || delay <= 0 || engine <= 0 {
		return 0
	}
	t := min(float64(capN)/delay.Seconds(), engine)
	if rateLimit > 0 {
		t = min(t, float64(rateLimit))
	}
	return t
}

func (t OpTiming) String() string {
	if t.Error != "" {
		return fmt.Sprintf("%.2fs, %s", float64(t.Seconds), t.Error)
	}
	return fmt.Sprintf("%.2fs, ok", float64(t.Seconds))
}

// timed runs op with opTimeout and reports how long it took.
func timed(ctx context.Context, op func(ctx context.Context) error) OpTiming {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	began := time.Now()
	err := op(ctx)
	t := OpTiming{Seconds: secs(time.Since(began))}
	if err != nil {
		t.Error = err.Error()
		// The server's own deadline (e.g. a query no worker picked up in time) counts too.
		var deadline *serviceerror.DeadlineExceeded
		t.TimedOut = errors.Is(err, context.DeadlineExceeded) || errors.As(err, &deadline) || ctx.Err() != nil
	}
	return t
}

// ticker calls f every d until the returned stop is called.
func ticker(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// withMissing summarises the latency of sentAt→arrived, counting an event that did not
// arrive as having taken until cutoff (so the figures are lower bounds then).
func withMissing(sentAt, arrived []time.Time, cutoff time.Time) (Phase, int) {
	p := phaseOf(sentAt, arrived)
	missing := 0
	filled := make([]time.Time, len(arrived))
	for i := range arrived {
		filled[i] = arrived[i]
		if arrived[i].IsZero() && !sentAt[i].IsZero() {
			filled[i] = cutoff
			missing++
		}
	}
	if missing > 0 {
		p.Latency = summarize(between(sentAt, filled))
	}
	return p, missing
}

func (e *env) backlog(ctx context.Context) (*BacklogResult, error) {
	cfg := e.cfg
	res := &BacklogResult{Events: cfg.BacklogEvents, Senders: cfg.Senders, Healthy: backlogHealthy,
		Rate: cfg.BacklogRate, For: cfg.BacklogFor, Cap: cfg.BacklogCap, Delay: cfg.BacklogDelay, RateLimit: cfg.BacklogRateLimit,
		Queue: -1, States: map[string]int{}}

	// The healthy endpoints: 204 at once.
	ok := func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusNoContent) }
	eps := make([]string, backlogHealthy)
	for i := range eps {
		eps[i] = e.endpointID(fmt.Sprintf("bl-%d", i))
		if err := e.putEndpoint(ctx, eps[i], ok, nil); err != nil {
			return nil, err
		}
	}
	// The blocked endpoint: 503 until healthy is set, then 204 after BacklogDelay. One
	// failure opens its circuit; the probe is an hour away.
	bq := e.endpointID("bq")
	var healthy atomic.Bool
	var dmu sync.Mutex
	delivered := map[string]time.Time{}
	// The backlog's own first arrivals, counted as they come (a poll of the drain then
	// costs nothing, where walking 20,000 ids 50 times a second took CPU from it).
	var backlogIDs map[string]bool
	var drainedN int
	var drainedLast time.Time
	if err := e.putEndpoint(ctx, bq, func(w http.ResponseWriter, r *http.Request, _ int) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		time.Sleep(cfg.BacklogDelay.Std())
		w.WriteHeader(http.StatusNoContent)
		dmu.Lock()
		if id := r.Header.Get("webhook-id"); delivered[id].IsZero() {
			now := time.Now()
			delivered[id] = now
			if backlogIDs[id] {
				drainedN++
				if now.After(drainedLast) {
					drainedLast = now
				}
			}
		}
		dmu.Unlock()
	}, &herald.Overrides{MaxInFlight: cfg.BacklogCap, RateLimit: rateLimitOverride(cfg.BacklogRateLimit), Breaker: &policy.BreakerOverride{
		ConsecutiveFailures: 1, ProbeDelay: duration.Duration(backlogProbeDelay), MaxProbeDelay: duration.Duration(backlogProbeDelay),
	}}); err != nil {
		return nil, err
	}

	// The healthy load, the same with and without the backlog.
	n := int(cfg.BacklogRate * cfg.BacklogFor.Std().Seconds())
	endpoint := func(i int) string { return eps[i%len(eps)] }
	var steadyIDs []string     // the last steady run's events
	var steadySent []time.Time // and when each was sent
	steady := func(label string, gc *GCStats) (Phase, int, error) {
		defer gc.measure()()
		ids := newIDs(n)
		steadyIDs, steadySent = ids, nil
		sctx, cancel := context.WithTimeout(ctx, cfg.BacklogFor.Std()+opTimeout)
		defer cancel()
		sentAt, err := e.sendEvents(sctx, ids, endpoint, cfg.Senders, cfg.BacklogRate)
		if err != nil {
			e.progress("backlog: %s: %v", label, err)
		}
		steadySent = sentAt
		wait := min(arrivalTimeout(n), time.Minute)
		stop := ticker(10*time.Second, func() {
			e.progress("backlog: %s: %d/%d healthy events arrived", label, countSet(e.rcv.firstSeen(ids)), n)
		})
		if !waitUntil(ctx, wait, func() bool { return e.rcv.allSeen(ids, 1) }) {
			e.progress("backlog: %s: not every healthy event arrived within %s", label, wait)
		}
		stop()
		p, missing := withMissing(sentAt, e.rcv.firstSeen(ids), time.Now())
		return p, missing, ctx.Err()
	}

	warm := newIDs(min(100, n))
	if _, err := e.sendEvents(ctx, warm, endpoint, cfg.Senders, 0); err != nil {
		return nil, err
	}
	waitUntil(ctx, time.Minute, func() bool { return e.rcv.allSeen(warm, 1) })

	// The engine's limit in this run, for the drain's target.
	e.progress("backlog: engine limit (eager start, one local activity), %d workflows", cfg.Events)
	var err error
	if res.Engine, err = e.baseline(ctx, engineQueue, engineFlow, engine, true, cfg.Events, cfg.Senders); err != nil {
		return res, err
	}

	e.progress("backlog: %d healthy endpoints at %.0f/s for %s, no backlog", backlogHealthy, cfg.BacklogRate, cfg.BacklogFor)
	if res.Without, res.WithoutMissing, err = steady("without backlog", &res.WithoutGC); err != nil {
		return res, err
	}

	// The engine's wake floor, and the same healthy load while it wakes.
	nFloor := min(cfg.BacklogEvents, wakeFloorMax)
	e.progress("backlog: the engine's wake floor, %d parked workflows woken by update; %d healthy endpoints at %.0f/s meanwhile",
		nFloor, backlogHealthy, cfg.BacklogRate)
	var wokenBy time.Time
	alongside := make(chan error, 1)
	if res.WakeFloor, err = e.wakeFloorPhase(ctx, nFloor, cfg.Senders, func() func(time.Time) {
		var gc GCStats
		go func() {
			_, _, err := steady("while the engine wakes", &gc)
			alongside <- err
		}()
		return func(t time.Time) { wokenBy = t }
	}); err != nil {
		return res, err
	}
	if err := <-alongside; err != nil {
		return res, err
	}
	res.FloorWaking, res.FloorWakingMissing = sentBefore(steadySent, e.rcv.firstSeen(steadyIDs), wokenBy)
	res.FloorWakingRatio = ratio(float64(res.FloorWaking.Latency.P99), float64(res.Without.Latency.P99))

	// Open bq's circuit with one failing event.
	e.progress("backlog: opening %s's circuit with one failing event", bq)
	opener := newIDs(1)
	began := time.Now()
	if _, err := e.sendEvents(ctx, opener, func(int) string { return bq }, 1, 0); err != nil {
		return res, err
	}
	if !waitUntil(ctx, openTimeout, func() bool {
		qctx, cancel := context.WithTimeout(ctx, statusTimeout)
		defer cancel()
		st, err := e.starter.GetEndpoint(qctx, bq)
		return err == nil && st.Circuit.State == policy.CircuitOpen
	}) {
		return res, fmt.Errorf("the circuit of %s did not open within %s of its first failure", bq, openTimeout)
	}
	res.OpenAfter = secs(time.Since(began))

	// Queue the backlog behind it.
	ids := newIDs(cfg.BacklogEvents)
	dmu.Lock()
	backlogIDs = make(map[string]bool, len(ids))
	for _, id := range ids {
		backlogIDs[id] = true
	}
	dmu.Unlock()
	defer e.terminateAll(ctx, append(ids, opener...))
	e.progress("backlog: sending %d events to %s (circuit open), %d senders", len(ids), bq, cfg.Senders)
	var sent atomic.Int64
	sendTimeout := time.Minute + time.Duration(len(ids))*10*time.Millisecond
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	stop := ticker(10*time.Second, func() { e.progress("backlog: %d/%d sent", sent.Load(), len(ids)) })
	began = time.Now()
	_, failed, ferr := drive(sctx, len(ids), cfg.Senders, 0, func(ctx context.Context, i int) error {
		_, err := e.starter.Send(ctx, starter.Event{ID: ids[i], EndpointID: bq, Type: "bench.event", Data: benchData})
		if err == nil {
			sent.Add(1)
		}
		return err
	})
	res.SendSeconds = secs(time.Since(began))
	stop()
	cancel()
	res.Sent = int(sent.Load())
	if ferr != nil {
		res.SendError = fmt.Sprintf("%d sends failed, first: %v", failed, ferr)
		e.progress("backlog: %s", res.SendError)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	opened := len(e.rcv.arrivalsOf(bq))

	// Queued behind the circuit: every backlog delivery has parked (its state shows
	// waiting_endpoint in the server's visibility store) before the healthy load runs again.
	e.progress("backlog: waiting until the %d deliveries are parked", res.Sent)
	parkStart := time.Now()
	parkQuery := herald.Workflows(herald.DeliveryWorkflow).Is(herald.AttrEndpoint, bq).
		Is(herald.AttrStatus, string(herald.StateWaitingEndpoint)).String()
	res.Parked = e.awaitVisible(ctx, parkQuery, int64(res.Sent), parkTimeout(res.Sent))
	res.ParkSeconds = secs(time.Since(parkStart))
	e.progress("backlog: parked after %.1fs: %v", float64(res.ParkSeconds), res.Parked)

	// The same healthy load while the backlog waits; meanwhile, the operator commands.
	e.progress("backlog: %d healthy endpoints at %.0f/s for %s, %d events waiting on %s; endpoint get and put on it",
		backlogHealthy, cfg.BacklogRate, cfg.BacklogFor, res.Sent, bq)
	ops := make(chan struct{})
	go func() {
		defer close(ops)
		res.Get = timed(ctx, func(ctx context.Context) error {
			st, err := e.starter.GetEndpoint(ctx, bq)
			if err == nil {
				res.Queue = st.Queue
			}
			return err
		})
		e.progress("backlog: endpoint get %s: %s", bq, res.Get)
		res.Put = timed(ctx, func(ctx context.Context) error {
			_, err := e.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: bq,
				Overrides: &herald.Overrides{MaxInFlight: cfg.BacklogCap}})
			return err
		})
		e.progress("backlog: endpoint put %s --max-in-flight %d: %s", bq, cfg.BacklogCap, res.Put)
	}()
	res.With, res.WithMissing, err = steady("with backlog", &res.WithGC)
	<-ops
	if err != nil {
		return res, err
	}
	res.P99Ratio = ratio(float64(res.With.Latency.P99), float64(res.Without.Latency.P99))

	// What the backlog used while the circuit was open.
	e.progress("backlog: reading the status of the %d backlog deliveries (at most %s)", len(ids), statusBudget)
	e.backlogAttempts(ctx, ids, res)
	res.Requests = len(e.rcv.arrivalsOf(bq)) - opened

	// Drain: bq answers again, the circuit closes by hand.
	e.progress("backlog: %s healthy again (%s per request); closing its circuit by hand", bq, cfg.BacklogDelay)
	healthy.Store(true)
	var stopProfile func() error
	if cfg.BacklogProfile != "" {
		var err error
		if stopProfile, err = StartProfile(cfg.BacklogProfile); err != nil {
			return res, fmt.Errorf("--backlog-cpuprofile: %w", err)
		}
	}
	drainStart, drainCPU := time.Now(), processCPU()
	res.Reset = timed(ctx, func(ctx context.Context) error {
		_, err := e.starter.ResetCircuit(ctx, bq)
		return err
	})
	e.progress("backlog: endpoint reset %s: %s", bq, res.Reset)
	drained := func() (int, time.Time) {
		dmu.Lock()
		defer dmu.Unlock()
		return drainedN, drainedLast
	}
	// Bounded for a drain far slower than the target: tens per second.
	drainTimeout := 90*time.Second + time.Duration(len(ids))*(20*time.Millisecond+cfg.BacklogDelay.Std()*2/time.Duration(cfg.BacklogCap))
	stop = ticker(10*time.Second, func() {
		k, _ := drained()
		e.progress("backlog: drain: %d/%d delivered", k, len(ids))
	})
	// The healthy load again, while the backlog drains.
	during := make(chan error, 1)
	go func() {
		var err error
		res.Draining, res.DrainingMissing, err = steady("while draining", &res.DrainingGC)
		during <- err
	}()
	res.DrainTimedOut = !waitUntil(ctx, drainTimeout, func() bool { k, _ := drained(); return k == len(ids) })
	drainUsed := processCPU() - drainCPU
	if stopProfile != nil {
		if err := stopProfile(); err != nil {
			e.progress("backlog: --backlog-cpuprofile: %v", err)
		}
	}
	stop()
	if err := <-during; err != nil {
		return res, err
	}
	res.DrainingRatio = ratio(float64(res.Draining.Latency.P99), float64(res.Without.Latency.P99))
	var last time.Time
	res.Drained, last = drained()
	if made := res.Drained + countArrivedBefore(e.rcv.firstSeen(steadyIDs), last); drainCPU > 0 && made > 0 {
		res.DrainCPUms = float64(drainUsed) / float64(time.Millisecond) / float64(made)
		res.DrainCPUVsEngine = ratio(res.DrainCPUms, res.Engine.CPUms)
	}
	if res.Drained > 0 {
		res.DrainSeconds = secs(last.Sub(drainStart))
		res.DrainPerSecond = float64(res.Drained) / last.Sub(drainStart).Seconds()
	}
	if res.DrainTimedOut {
		e.progress("backlog: drain: %d/%d delivered within %s", res.Drained, len(ids), drainTimeout)
	}
	dmu.Lock()
	last50 := lastArrived(delivered, trailSample)
	dmu.Unlock()
	res.Trail = e.trail(ctx, last50)
	res.MaxConcurrent = e.rcv.maxInFlight(bq)
	res.DrainTarget = drainTarget(res.Cap, res.Delay.Std(), res.Engine.PerSecond, res.RateLimit)
	res.DrainVsTarget = ratio(res.DrainPerSecond, res.DrainTarget)
	res.DrainVsWakeFloor = ratio(res.DrainPerSecond, res.WakeFloor.PerSecond)
	return res, ctx.Err()
}

// backlogAttempts reads the status of every backlog delivery it can within statusBudget, in
// random order (so those read are a fair sample), and sums their attempts.
func (e *env) backlogAttempts(ctx context.Context, ids []string, res *BacklogResult) {
	order := rand.Perm(len(ids))
	bctx, cancel := context.WithTimeout(ctx, statusBudget)
	defer cancel()
	var mu sync.Mutex
	drive(bctx, len(ids), statusReaders, 0, func(bctx context.Context, k int) error {
		qctx, qcancel := context.WithTimeout(bctx, statusTimeout)
		st, err := e.starter.Status(qctx, starter.Ref{EventID: ids[order[k]]})
		qcancel()
		mu.Lock()
		defer mu.Unlock()
		res.StatusAsked++
		if err != nil {
			if res.StatusError == "" {
				res.StatusError = err.Error()
			}
			return err
		}
		res.StatusRead++
		used := len(st.Attempts) + st.Dropped
		res.Attempts += used
		if used > 0 {
			res.WithAttempts++
		}
		res.States[string(st.State)]++
		if st.Waiting != nil && st.Waiting.Full {
			res.TurnedAway++
		}
		return nil
	})
}

// terminateAll ends the delivery workflows of ids that are still running, several at a
// time and within two minutes at most.
func (e *env) terminateAll(ctx context.Context, ids []string) {
	e.progress("backlog: terminating the %d backlog deliveries", len(ids))
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	drive(tctx, len(ids), 16, 0, func(ctx context.Context, i int) error {
		return e.client.TerminateWorkflow(ctx, herald.DeliveryID(herald.DefaultTenant, ids[i]), "", "bench scenario over")
	})
}

// awaitVisible waits until the server's visibility store counts at least n workflows
// matching query, within timeout, and says whether it did.
func (e *env) awaitVisible(ctx context.Context, query string, n int64, timeout time.Duration) bool {
	return waitUntil(ctx, timeout, func() bool { return e.countVisible(ctx, query) >= n })
}

// countVisible counts the workflows matching query in the visibility store (-1 if it
// cannot be read).
func (e *env) countVisible(ctx context.Context, query string) int64 {
	qctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	c, err := e.client.CountWorkflow(qctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return -1
	}
	return c.GetCount()
}

// parkTimeout bounds the wait for n backlog deliveries to park.
func parkTimeout(n int) time.Duration { return time.Minute + time.Duration(n)*20*time.Millisecond }

// GCStats is what the garbage collector did during a phase.
type GCStats struct {
	Cycles  uint32  `json:"cycles"`
	PauseMS float64 `json:"pause_ms"`
	// HeapMB is the heap in use at the phase's end.
	HeapMB float64 `json:"heap_mb"`
}

// measure starts measuring; the returned func ends it and fills in g.
func (g *GCStats) measure() func() {
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	return func() {
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		g.Cycles = after.NumGC - before.NumGC
		g.PauseMS = float64(after.PauseTotalNs-before.PauseTotalNs) / 1e6
		g.HeapMB = float64(after.HeapInuse) / (1 << 20)
	}
}

func (g GCStats) String() string {
	return fmt.Sprintf("GC: %d cycles, %.1fms paused, heap %.0f MB", g.Cycles, g.PauseMS, g.HeapMB)
}
