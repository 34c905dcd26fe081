package policy

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/heraldhq/herald/duration"
)

// LimiterConfig configures a Limiter.
type LimiterConfig struct {
	Breaker  BreakerConfig  `json:"breaker"`
	Capacity CapacityConfig `json:"capacity"`
	// LeaseTTL is how long a grant of permits lasts unless renewed. It must exceed the
	// attempt timeout, so that an attempt admitted just before a holder stops renewing
	// finishes before its permit returns to the pool.
	LeaseTTL duration.Duration `json:"lease_ttl"`
	// MaxQueue bounds the queue of waiting attempts; beyond it, waiters are told to come
	// back later instead of being queued.
	MaxQueue int `json:"max_queue"`
	// RateLimit is the most requests that may start per aligned second (RateWindow); 0 is
	// none. A rate-limited endpoint leases no permits: every attempt is granted one of its
	// own, for one window (Grant.Window), at most RateLimit per window.
	RateLimit int `json:"rate_limit,omitempty"`
	// DisableAfter is how long every attempt must fail before the endpoint is disabled
	// (zero: DefaultDisableAfter).
	DisableAfter duration.Duration `json:"disable_after,omitempty"`
}

// MaxLeaseTTL bounds the TTL a holder may ask for, so that a dead holder's permits always
// come back: the longest attempt timeout plus margin.
const MaxLeaseTTL = 3 * time.Minute

// DefaultLimiterConfig returns the article's breaker and cap, leases of 40 s (a 30 s attempt
// timeout plus margin) and a queue of at most 10,000 waiters.
func DefaultLimiterConfig() LimiterConfig {
	return LimiterConfig{
		Breaker:  DefaultBreakerConfig(),
		Capacity: DefaultCapacityConfig(),
		LeaseTTL: duration.Duration(40 * time.Second),
		MaxQueue: 10000,
	}
}

// Validate reports every problem with c.
func (c LimiterConfig) Validate() error {
	var errs []error
	if err := c.Breaker.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Capacity.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.LeaseTTL <= 0 {
		errs = append(errs, fmt.Errorf("lease TTL %s must be positive", c.LeaseTTL))
	}
	if c.MaxQueue < 1 {
		errs = append(errs, fmt.Errorf("max queue %d must be at least 1", c.MaxQueue))
	}
	if err := ValidateRateLimit(c.RateLimit); err != nil {
		errs = append(errs, err)
	}
	if c.DisableAfter != 0 {
		if err := ValidateDisableAfter(c.DisableAfter.Std()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Limiter is one endpoint's protection: the circuit breaker, the adaptive concurrency cap,
// the ledger of leased permits and the FIFO queue of attempts waiting for a permit. Worker
// processes lease permits in blocks (Lease) and admit attempts against them without asking
// again; attempts that cannot be admitted wait in the queue and are woken one by one
// (Tick) when a permit frees up, when the probe of an open circuit is due, or for each
// half-open trickle attempt. It is a value with exported fields so that it round-trips
// through encoding/json (continue-as-new); change it only through its methods.
type Limiter struct {
	Config   LimiterConfig `json:"config"`
	Breaker  Breaker       `json:"breaker"`
	Capacity Capacity      `json:"capacity"`
	Ledger   Ledger        `json:"ledger"`
	// Grants are the one-permit grants to woken waiters, with the ticket each runs under.
	Grants []Grant `json:"grants,omitempty"`
	// Passes are the queued waiters let go to the workers' gates, each admitted there under
	// a lease (TickPasses, drain.go), not yet reported used.
	Passes []Grant `json:"passes,omitempty"`
	// RewakePasses is set by an endpoint run that hands its passes out from a worker
	// process (by update, not by a signal of its own): a pass that no gate reports used by
	// its Until may have been lost with that process, so TickPasses hands it out again
	// rather than forget it. A delivery that has no use for it refuses it, and the worker
	// reports the refusal (Refused), which forgets it.
	RewakePasses bool `json:"rewake_passes,omitempty"`
	// PassUse counts the passes used lately: the window follows it.
	PassUse PassUse `json:"pass_use,omitzero"`
	// Rate counts the grants for the window grants are for now (Target; Config.RateLimit),
	// while the limiter grants every attempt to a rate-limited endpoint (not RateLeased).
	Rate RateCount `json:"rate,omitzero"`
	// RateLeased is set when the limiter leases rate budgets to the holders (LeaseRates):
	// RateBudget splits each window's requests among them and the queue.
	RateLeased bool       `json:"rate_leased,omitempty"`
	RateBudget RateLedger `json:"rate_budget,omitzero"`
	// RatePasses is set, with RateLeased, when the limiter drains its queue through the
	// holders' rate shares (DrainRates, ratedrain.go): queued waiters are woken with passes
	// and the holders keep being lent shares while some wait.
	RatePasses bool `json:"rate_passes,omitempty"`
	// Disabled is set while the endpoint is disabled: it receives nothing.
	Disabled *Disablement `json:"disabled,omitempty"`
	// FailingSince is when the current spell of failures began (zero after a success).
	FailingSince time.Time `json:"failing_since,omitzero"`
	// Overflow remembers the deliveries turned away by a full queue, for NudgeDue.
	Overflow Overflow `json:"overflow,omitzero"`
}

// Grant is a permit of its own handed to one waiter (a delivery): for a probe, a half-open
// attempt, or a queued attempt whose turn has come. The waiter reports its own outcome.
// The endpoint workflow sends it with SignalPermit.
type Grant struct {
	Waiter string    `json:"waiter"`
	Ticket Ticket    `json:"ticket"`
	Until  time.Time `json:"until,omitzero"`
	// Window, for a rate-limited endpoint, is the start of the rate window the grant is
	// for: its request may start only within it (InWindow). Zero for any other endpoint.
	Window time.Time `json:"window,omitzero"`
	// Disabled says the endpoint is disabled: there is no permit, the waiter gives up.
	Disabled bool `json:"disabled,omitempty"`
	// Pass says the waiter holds no permit of its own: its worker's gate admits it ahead of
	// the queue, under the gate's lease (TickPasses). Until is when the pass stops counting.
	Pass bool `json:"pass,omitempty"`
	// Key names the attempt whose wait this permit or pass answers (Limiter.NoteKey; 0:
	// not named by its gate).
	Key uint32 `json:"key,omitempty"`
}

// Outcome is the result of one admitted attempt, as reported to the limiter.
type Outcome struct {
	At      time.Time         `json:"at,omitzero"`
	OK      bool              `json:"ok"`
	Latency duration.Duration `json:"latency"`
	Ticket  Ticket            `json:"ticket"`
	// Gone is set when the receiver answered 410 Gone (GoneStatus).
	Gone bool `json:"gone,omitempty"`
}

// LeaseRequest is a holder's (a worker process's) request for permits, carrying the
// outcomes of the attempts it ran since its last request.
type LeaseRequest struct {
	Holder string `json:"holder"`
	// InUse is how many attempts the holder has running now under its lease.
	InUse int `json:"in_use"`
	// Want is how many permits the holder would like to hold in all (at least InUse).
	Want     int       `json:"want"`
	Outcomes []Outcome `json:"outcomes,omitempty"`
	// Waiters are attempts at this holder that its lease could not admit. As many as the
	// renewed lease has room for are covered by it; each of the others is granted a permit
	// of its own, or queued. The workers' gates send none: they queue attempts with Wait.
	Waiters []string `json:"waiters,omitempty"`
	// RateWant is how many requests per rate window the holder would like to start, for
	// a limiter that leases rate budgets (Limiter.RateLeased; LocalRate.Want).
	RateWant int `json:"rate_want,omitempty"`
	// Flight is how many attempts the holder may admit under its lease while this request
	// is on its way (LocalLease.Flight): the endpoint keeps them counted until the
	// holder's next request (Ledger.Reserve). Nil reserves nothing.
	Flight *int `json:"flight,omitempty"`
	// Passed are the pass-holders (Grant.Pass) the holder admitted, or sent back to the
	// queue, since its last request: their places in the pass window come free.
	Passed []string `json:"passed,omitempty"`
	// Passing is how many pass-holders wait at the holder for room under its lease: the
	// lease may grow for them though others are queued.
	Passing int `json:"passing,omitempty"`
	// TTL is how long the lease lasts unless renewed; zero means the configured LeaseTTL.
	// Give the holder's attempt timeout plus a margin.
	TTL duration.Duration `json:"ttl,omitempty"`
}

// LeaseReply answers a LeaseRequest.
type LeaseReply struct {
	// Permits is the holder's lease (attempts it may have in flight) until Expires.
	Permits int       `json:"permits"`
	Expires time.Time `json:"expires,omitzero"`
	// Ticket goes with every outcome of attempts admitted under the lease.
	Ticket  Ticket        `json:"ticket"`
	Circuit CircuitState  `json:"circuit"`
	Waiters []WaiterReply `json:"waiters,omitempty"`
	// Rate are the holder's shares of the coming rate windows (Limiter.RateLeased);
	// RateExpect is what it may expect of a window not lent yet (RateLedger.Expect).
	Rate       []RateShare `json:"rate,omitempty"`
	RateExpect int         `json:"rate_expect,omitempty"`
}

// WaiterOutcome is what became of a waiter in a LeaseReply.
type WaiterOutcome string

// Waiter outcomes.
const (
	// WaiterCovered: the holder's renewed lease has room for it; admit it under the lease.
	WaiterCovered WaiterOutcome = "covered"
	// WaiterGranted: the waiter holds a permit of its own until Until and runs under Ticket.
	WaiterGranted WaiterOutcome = "granted"
	// WaiterQueued: the waiter waits in the queue at Position (1 = next) and is woken later.
	WaiterQueued WaiterOutcome = "queued"
	// WaiterRefused: the queue is full; ask again at RetryAt.
	WaiterRefused WaiterOutcome = "refused"
)

// WaiterReply says what became of one waiter.
type WaiterReply struct {
	Waiter  string        `json:"waiter"`
	Outcome WaiterOutcome `json:"outcome"`
	// Ticket, Until and Window: the permit of a granted waiter (Grant).
	Ticket Ticket    `json:"ticket,omitzero"`
	Until  time.Time `json:"until,omitzero"`
	Window time.Time `json:"window,omitzero"`
	// Position is a queued waiter's place in the queue (1 = next).
	Position int `json:"position,omitempty"`
	// Reason says why it was not granted; RetryAt is when that may change (for a full queue:
	// when to ask again).
	Reason  string    `json:"reason,omitempty"`
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// NewLimiter returns a limiter with a closed circuit and no permits out. Check c first.
func NewLimiter(c LimiterConfig) Limiter {
	return Limiter{Config: c, Breaker: NewBreaker(c.Breaker), Capacity: NewCapacity(c.Capacity), Ledger: NewLedger()}
}

// Reconfigure changes the breaker and cap settings, keeping the state.
func (g *Limiter) Reconfigure(c LimiterConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := g.Breaker.Reconfigure(c.Breaker); err != nil {
		return err
	}
	if err := g.Capacity.Reconfigure(c.Capacity); err != nil {
		return err
	}
	g.Config = c
	return nil
}

// Cap is the concurrency cap in force now.
func (g *Limiter) Cap() int { return max(g.Capacity.Cap(), 1) }

// Lease records the holder's outcomes and answers its request: while the circuit is
// closed and nobody waits, it gets up to Want permits within the cap; otherwise its lease
// only covers the attempts it has running. Each of its waiters is granted a permit of its
// own when one may go now (the probe of an open circuit, a half-open trickle attempt, or
// a free permit while closed), or else queued behind those already waiting.
//
// While the request was on its way, the holder went on admitting against the lease it
// had, up to its Flight: a lease cut below that keeps the difference counted toward the
// cap until the holder next renews (Ledger.Reserve).
func (g *Limiter) Lease(now time.Time, r LeaseRequest) LeaseReply {
	g.Record(now, r.Outcomes)
	g.expire(now)
	g.Passed(now, r.Passed)
	want := max(r.Want, r.InUse)
	closed := g.Breaker.State() == CircuitClosed && g.Disabled == nil
	if !closed || (len(g.Ledger.Waiting) > 0 && r.Passing == 0 && len(r.Passed) == 0) || (g.Config.RateLimit > 0 && !g.RateLeased) {
		// No new permits: the queue (or the breaker, or the endpoint being disabled) comes
		// first, and a rate-limited endpoint grants each attempt on its own. A holder
		// draining the queue (pass-holders waiting for room, or passes used since its last
		// request) keeps and grows its lease: its pass-holders are the front of the queue.
		want = r.InUse
	}
	capNow := g.Cap()
	if !closed {
		capNow = 0
	}
	// A cap that shrank below what is leased takes effect as holders renew: a holder keeps
	// what it runs and gives back its part of the excess.
	if over := g.Ledger.InUse(now) - capNow; over > 0 {
		if l, ok := g.Ledger.Lease(r.Holder); ok && l.Expires.After(now) {
			want = min(want, max(r.InUse, l.Permits-over))
		}
	}
	ttl := r.TTL.Std()
	if ttl <= 0 {
		ttl = g.Config.LeaseTTL.Std()
	}
	ttl = min(ttl, MaxLeaseTTL)
	l := g.Ledger.Lend(r.Holder, want, capNow, ttl, now)
	if r.Flight != nil {
		g.Ledger.Reserve(r.Holder, max(r.InUse, *r.Flight), now.Add(ttl))
	}
	reply := LeaseReply{Permits: l.Permits, Expires: l.Expires, Circuit: g.Breaker.State()}
	reply.Rate, reply.RateExpect = g.lendRate(now, r, closed), g.rateExpect(r.Holder, now)
	if t, ok := g.Breaker.Ticket(); ok {
		reply.Ticket = t
	}
	room := l.Permits - r.InUse
	for _, w := range r.Waiters {
		if g.Disabled != nil {
			reply.Waiters = append(reply.Waiters, WaiterReply{Waiter: w, Outcome: WaiterRefused, Reason: "endpoint disabled: " + g.Disabled.Reason,
				RetryAt: now.Add(time.Minute)})
			continue
		}
		if room > 0 && g.single(w) < 0 {
			room--
			g.Ledger.Remove(w)
			reply.Waiters = append(reply.Waiters, WaiterReply{Waiter: w, Outcome: WaiterCovered})
			continue
		}
		reply.Waiters = append(reply.Waiters, g.waiter(now, w, ttl, false))
	}
	return reply
}

// waiter grants w a permit of its own now, or queues it. A full queue refuses it, unless
// overflow is set: then it is queued past MaxQueue.
func (g *Limiter) waiter(now time.Time, w string, ttl time.Duration, overflow bool) WaiterReply {
	if i := g.single(w); i >= 0 && !g.Grants[i].usable(now) {
		// Granted for a rate window it can no longer start in, unused: that window's count
		// stays spent, and the waiter asks as if anew.
		g.drop(now, i)
	}
	if i := g.single(w); i >= 0 {
		// Already granted (the wake may not have reached it yet): renew and repeat it.
		if t := g.Grants[i].Ticket; t.Kind != TicketNormal && t.Epoch == g.Breaker.Epoch && g.Breaker.ownsSlot(t) {
			g.Breaker.SlotAt = now // the probe or trickle waiter is alive: keep its slot
		}
		l := g.Ledger.Lend(w, 1, g.Cap(), ttl, now)
		if l.Permits > 0 {
			g.Grants[i].Until = l.Expires
			s := g.Grants[i]
			return WaiterReply{Waiter: w, Outcome: WaiterGranted, Ticket: s.Ticket, Until: s.Until, Window: s.Window}
		}
	}
	if g.Ledger.Queued(w) { // asking again: rare, so its place may take a scan
		return g.queued(now, w, slices.Index(g.Ledger.Waiting, w)+1)
	}
	if len(g.Ledger.Waiting) == 0 {
		if s, ok := g.admitOne(now, w, ttl); ok {
			return WaiterReply{Waiter: w, Outcome: WaiterGranted, Ticket: s.Ticket, Until: s.Until, Window: s.Window}
		}
	}
	if len(g.Ledger.Waiting) >= g.Config.MaxQueue && !overflow {
		return WaiterReply{Waiter: w, Outcome: WaiterRefused, Reason: fmt.Sprintf("the queue is full (%d waiting)", len(g.Ledger.Waiting)),
			RetryAt: now.Add(time.Minute)}
	}
	g.Ledger.Enqueue(w)
	return g.queued(now, w, len(g.Ledger.Waiting))
}

func (g *Limiter) queued(now time.Time, w string, pos int) WaiterReply {
	r := WaiterReply{Waiter: w, Outcome: WaiterQueued, Position: pos}
	r.Reason, r.RetryAt = g.holdReason(now)
	return r
}

// holdReason says why attempts wait now.
func (g *Limiter) holdReason(now time.Time) (string, time.Time) {
	switch g.Breaker.State() {
	case CircuitOpen:
		return fmt.Sprintf("circuit open after %s", g.Breaker.TripReason()), g.Breaker.NextProbeAt()
	case CircuitHalfOpen:
		return "circuit half-open: one attempt at a time", time.Time{}
	}
	if g.Config.RateLimit > 0 {
		return fmt.Sprintf("endpoint rate limit of %d requests per second: each attempt waits for its turn", g.Config.RateLimit), time.Time{}
	}
	return fmt.Sprintf("endpoint at its concurrency cap of %d", g.Cap()), time.Time{}
}

// admitOne grants w one permit if an attempt may go now: the cap has room, the rate window
// too (for a rate-limited endpoint), and the breaker admits it.
func (g *Limiter) admitOne(now time.Time, w string, ttl time.Duration) (Grant, bool) {
	if g.Ledger.Free(g.Cap(), now) < 1 || !g.rateOpen(now) {
		return Grant{}, false
	}
	adm := g.Breaker.Admit(now)
	if !adm.OK {
		return Grant{}, false
	}
	l := g.Ledger.Lend(w, 1, g.Cap(), ttl, now)
	s := Grant{Waiter: w, Ticket: adm.Ticket, Until: l.Expires}
	if g.Config.RateLimit > 0 {
		s.Window = g.takeRate(now)
	}
	g.Grants = append(slices.Clip(g.Grants), s)
	return s, true
}

// Tick returns the permits due now, expiring leases first: queued waiters woken in order
// while the circuit is closed and the cap has room, or the single probe or half-open
// attempt otherwise.
func (g *Limiter) Tick(now time.Time) []Grant {
	g.expire(now)
	if g.Disabled != nil {
		return g.disabledWakes(now)
	}
	var wakes []Grant
	for len(g.Ledger.Waiting) > 0 {
		w := g.Ledger.Waiting[0]
		s, ok := g.admitOne(now, w, g.Config.LeaseTTL.Std())
		if !ok {
			break
		}
		s.Key = g.Ledger.FirstKey()
		g.NoteKey(w, s.Key)
		g.Ledger.Remove(w)
		wakes = append(wakes, s)
		if s.Ticket.Kind != TicketNormal {
			break // one probe or trickle attempt at a time
		}
	}
	return wakes
}

// Record feeds outcomes of admitted attempts to the breaker and the cap, oldest first.
func (g *Limiter) Record(now time.Time, outs []Outcome) {
	outs = slices.Clone(outs)
	slices.SortStableFunc(outs, func(a, b Outcome) int { return a.At.Compare(b.At) })
	for _, o := range outs {
		g.Breaker.Record(o.At, o.Ticket, o.OK)
		g.Capacity.Observe(o.At, o.Latency.Std())
		g.recordLifecycle(o)
	}
}

// Done takes the outcome of a waiter's own permit (nil if the attempt never ran) and
// returns the permit.
//
// An outcome says that the waiter's attempt is over: if the waiter is queued or holds
// another grant, it asked again since (its done came late, e.g. after a send that timed
// out at the gate), and that newer request stands. So an outcome never takes a waiter out
// of the queue, and returns a rate-limited grant only if its request started in that
// grant's second (InWindow). Without an outcome (a permit given back unused, or a wake that
// found the delivery gone) the waiter's grant and place go.
func (g *Limiter) Done(now time.Time, waiter string, o *Outcome) {
	i := g.single(waiter)
	if o != nil {
		g.Record(now, []Outcome{*o})
		if i >= 0 && !g.Grants[i].Window.IsZero() && !InWindow(g.Grants[i].Window, o.At) {
			return // the outcome of an earlier grant: this one is still to be used
		}
	} else if i >= 0 {
		g.Breaker.Release(now, g.Grants[i].Ticket)
	}
	if i >= 0 {
		g.Grants = slices.Delete(slices.Clone(g.Grants), i, i+1)
	}
	g.Ledger.Return(waiter, 1)
	if o == nil {
		g.Ledger.Remove(waiter)
		g.dropPass(waiter)
	}
}

// DoneDequeuing is Done as Herald 0.1.0 did it: any outcome takes the waiter's grant and
// its place in the queue, even one that came after the waiter asked again, which then
// waits on a queue that no longer holds it. Only endpoint runs started before the change
// (workflows.versionLateDones) use it.
func (g *Limiter) DoneDequeuing(now time.Time, waiter string, o *Outcome) {
	i := g.single(waiter)
	if o != nil {
		g.Record(now, []Outcome{*o})
	} else if i >= 0 {
		g.Breaker.Release(now, g.Grants[i].Ticket)
	}
	if i >= 0 {
		g.Grants = slices.Delete(slices.Clone(g.Grants), i, i+1)
	}
	g.Ledger.Return(waiter, 1)
	g.Ledger.Remove(waiter)
}

// drop takes back grant i, unused: its permit returns, and a probe or half-open slot it
// held frees up.
func (g *Limiter) drop(now time.Time, i int) {
	s := g.Grants[i]
	g.Breaker.Release(now, s.Ticket)
	g.Grants = slices.Delete(slices.Clone(g.Grants), i, i+1)
	g.Ledger.Return(s.Waiter, 1)
}

// Reset closes the circuit by hand.
func (g *Limiter) Reset(now time.Time) { g.Breaker.Reset(now) }

// NextDeadline returns the next time Tick may have something to do without any message
// arriving (a lease expiring, the probe falling due, a stuck probe timing out), or zero.
func (g *Limiter) NextDeadline(now time.Time) time.Time {
	var next time.Time
	take := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, l := range g.Ledger.Held {
		take(l.Expires)
	}
	if len(g.Ledger.Waiting) > 0 && g.Disabled != nil {
		take(now) // the waiters left are sent away at the next tick
	} else if len(g.Ledger.Waiting) > 0 && g.Breaker.State() == CircuitClosed && !g.rateDrains() && !g.rateOpen(now) {
		take(g.nextRateOpen(now)) // waiters held back by the rate limit: the next window's grants
	}
	if len(g.Ledger.Waiting) > 0 && g.Disabled == nil {
		if g.Breaker.SlotBusy {
			take(g.Breaker.SlotAt.Add(g.Breaker.Config.ProbeTimeout.Std()))
		} else if due := g.Breaker.NextProbeAt(); due.After(now) {
			take(due)
		}
	}
	if r := g.recovery(); r != nil {
		take(r.NextAt) // the next probe of an endpoint disabled for failing
	}
	take(g.passDeadline()) // a pass that expires makes room in the window
	take(g.nudgeDeadline(now))
	if !next.IsZero() && next.Before(now) {
		next = now
	}
	return next
}

// expire drops expired leases and the waiter grants they carried.
func (g *Limiter) expire(now time.Time) {
	g.Ledger.Expire(now)
	kept := g.Grants[:0:0]
	for _, s := range g.Grants {
		if s.Until.After(now) {
			kept = append(kept, s)
		} else {
			g.Breaker.Release(now, s.Ticket)
		}
	}
	g.Grants = kept
}

func (g *Limiter) single(w string) int {
	return slices.IndexFunc(g.Grants, func(s Grant) bool { return s.Waiter == w })
}

// Wait takes a waiter that its worker's gate could not admit: it is granted a permit of
// its own at once when one may go now (nobody queued, the breaker admits, the cap has
// room), or given its granted permit again if it already holds one (the first signal may
// not have reached it), or else queued at the back. ok reports a permit to hand over.
//
// A full queue takes it too: its gate, which looked before sending it (Snapshot.QueueFull),
// told the delivery it is queued, and nothing would tell it otherwise. So the queue may
// pass MaxQueue by the waiters sent while the gates' snapshots were behind.
func (g *Limiter) Wait(now time.Time, waiter string) (w Grant, ok bool) {
	return g.wait(now, waiter, true)
}

// WaitKey names a delivery's wait for its endpoint, for the waits its gate sends
// (herald.WaitRequest.Keys): attempt number of round, after taken permits or passes. Sent
// again by a retried workflow task, a wait has the same key; a delivery that took the
// permit granted for it and waits again (the permit could not be used, its hand-back may
// not have arrived) has a new one. A hash, never 0: two waits of one delivery share a key
// about once in two billion, and then it waits for its recheck.
func WaitKey(round, number, taken int) uint32 {
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "%d/%d/%d", round, number, taken)
	return h.Sum32() | 1<<31
}

// Answered reports whether waiter holds, at now, a permit or a pass granted for the attempt
// named key (not 0): a wait from it with that key is the same wait again (its attempt ran
// once more, its workflow task retried after a worker died), and the signal that carries
// the permit is on its way, or already in its delivery's history. A wait with another key
// is a new one: the delivery took that permit already, and its report of it may not have
// come yet.
func (g *Limiter) Answered(now time.Time, waiter string, key uint32) bool {
	if key == 0 {
		return false
	}
	if slices.ContainsFunc(g.Passes, func(p Grant) bool { return p.Waiter == waiter && p.Key == key && p.Until.After(now) }) {
		return true
	}
	i := g.single(waiter)
	return i >= 0 && g.Grants[i].Key == key && g.Grants[i].usable(now)
}

// usable reports whether a request may still start under s at now: it is for no rate
// window, or for one not over yet.
func (s Grant) usable(now time.Time) bool {
	return s.Window.IsZero() || now.Before(s.Window) || InWindow(s.Window, now)
}

// Renew extends the lease of the permit waiter holds, as a wait from it does, and hands
// nothing over (Answered said the permit is on its way).
func (g *Limiter) Renew(now time.Time, waiter string) {
	if i := g.single(waiter); i >= 0 {
		if l := g.Ledger.Lend(waiter, 1, g.Cap(), g.Config.LeaseTTL.Std(), now); l.Permits > 0 {
			g.Grants[i].Until = l.Expires
		}
	}
}

// NoteKey records key, the attempt waiter's last wait was for, where the wait left it: on
// the permit it was granted, or on its place in the queue; a grant made later from the
// queue carries it (Tick, TickPasses).
func (g *Limiter) NoteKey(waiter string, key uint32) {
	if i := g.single(waiter); i >= 0 {
		g.Grants[i].Key = key
		return
	}
	g.Ledger.SetKey(waiter, key)
}

// WaitRefusingWhenFull is Wait as Herald 0.1.0 did it: a waiter that comes to a full queue
// is dropped, and its delivery waits for a permit nobody will send. Only endpoint runs
// started before the change (workflows.versionQueueOverflow) use it.
func (g *Limiter) WaitRefusingWhenFull(now time.Time, waiter string) (w Grant, ok bool) {
	return g.wait(now, waiter, false)
}

func (g *Limiter) wait(now time.Time, waiter string, overflow bool) (w Grant, ok bool) {
	g.expire(now)
	// A pass-holder its gate could not admit asks again: it keeps its place, at the front.
	passed := g.dropPass(waiter)
	if g.Disabled != nil {
		g.Ledger.Remove(waiter)
		return Grant{Waiter: waiter, Until: now, Disabled: true}, true
	}
	r := g.waiter(now, waiter, g.Config.LeaseTTL.Std(), overflow)
	if passed && r.Outcome == WaiterQueued {
		g.Ledger.ToFront(waiter)
	}
	if r.Outcome != WaiterGranted {
		return Grant{}, false
	}
	return Grant{Waiter: waiter, Ticket: r.Ticket, Until: r.Until, Window: r.Window}, true
}

// QueueFull reports whether the queue holds MaxQueue waiters or more.
func (g *Limiter) QueueFull() bool { return len(g.Ledger.Waiting) >= g.Config.MaxQueue }
