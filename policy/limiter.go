package policy

import (
	"encoding/json"
	"errors"
	"fmt"
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
	Ledger   Ledger        `json:"permits"`
	// Grants are the one-permit grants to woken waiters, with the ticket each runs under.
	Grants []Grant `json:"singles,omitempty"`
	// Rate counts the grants for the window grants are for now (Target; Config.RateLimit).
	Rate RateCount `json:"rate,omitzero"`
	// Lifecycle is set when the limiter also decides the endpoint's lifecycle (lifecycle.go):
	// a 410 or a long failing spell disables it. Limiters of runs from before leave it unset.
	Lifecycle bool `json:"lifecycle,omitempty"`
	// KeepFlight is set when the limiter counts what a holder may run while its renewal is
	// in flight (Lease): without it, a renewal that cuts a lease frees permits the holder
	// is still using. Limiters of runs from before leave it unset.
	KeepFlight bool `json:"keep_flight,omitempty"`
	// Disabled is set while the endpoint is disabled: it receives nothing.
	Disabled *Disablement `json:"disabled,omitempty"`
	// FailingSince is when the current spell of failures began (zero after a success).
	FailingSince time.Time `json:"failing_since,omitzero"`
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
	// of its own, or queued. Only gates of the version before Wait send them (they waited
	// for the answer inside an attempt); today's gates queue attempts with Wait.
	Waiters []string `json:"waiters,omitempty"`
	// Flight is how many attempts the holder may admit under its lease while this request
	// is on its way (LocalLease.Flight): the endpoint keeps them counted until the
	// holder's next request (Limiter.KeepFlight). Gates from before it send none.
	Flight *int `json:"flight,omitempty"`
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

// WaiterReply says what became of one waiter. Its JSON also carries the booleans
// "covered", "granted" and "queued" that gates before the outcome field read, and a reply
// that has only those decodes to the same outcome.
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

// waiterReplyJSON is WaiterReply on the wire: the outcome, and the booleans it replaced.
type waiterReplyJSON struct {
	waiterReplyFields
	Covered bool `json:"covered,omitempty"`
	Granted bool `json:"granted,omitempty"`
	Queued  bool `json:"queued,omitempty"`
}

// waiterReplyFields has WaiterReply's fields without its methods.
type waiterReplyFields WaiterReply

// MarshalJSON writes the outcome and, for gates of the version before it, its boolean.
func (r WaiterReply) MarshalJSON() ([]byte, error) {
	return json.Marshal(waiterReplyJSON{waiterReplyFields: waiterReplyFields(r),
		Covered: r.Outcome == WaiterCovered, Granted: r.Outcome == WaiterGranted, Queued: r.Outcome == WaiterQueued})
}

// UnmarshalJSON reads the outcome, or derives it from the booleans of a reply without one.
func (r *WaiterReply) UnmarshalJSON(b []byte) error {
	var v waiterReplyJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = WaiterReply(v.waiterReplyFields)
	if r.Outcome == "" {
		switch {
		case v.Covered:
			r.Outcome = WaiterCovered
		case v.Granted:
			r.Outcome = WaiterGranted
		case v.Queued:
			r.Outcome = WaiterQueued
		default:
			r.Outcome = WaiterRefused
		}
	}
	return nil
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
// had, up to its Flight: with KeepFlight, a lease cut below that keeps the difference
// counted toward the cap until the holder next renews (Ledger.Reserve). A gate from
// before Flight existed is answered as before (it does not renew to give a reservation
// back, so one would last until its lease expired).
func (g *Limiter) Lease(now time.Time, r LeaseRequest) LeaseReply {
	g.Record(now, r.Outcomes)
	g.expire(now)
	want := max(r.Want, r.InUse)
	closed := g.Breaker.State() == CircuitClosed && g.Disabled == nil
	if !closed || len(g.Ledger.Waiting) > 0 || g.Config.RateLimit > 0 {
		// No new permits: the queue (or the breaker, or the endpoint being disabled) comes
		// first, and a rate-limited endpoint grants each attempt on its own.
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
	if g.KeepFlight && r.Flight != nil {
		g.Ledger.Reserve(r.Holder, max(r.InUse, *r.Flight), now.Add(ttl))
	}
	reply := LeaseReply{Permits: l.Permits, Expires: l.Expires, Circuit: g.Breaker.State()}
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
		reply.Waiters = append(reply.Waiters, g.waiter(now, w, ttl))
	}
	return reply
}

// waiter grants w a permit of its own now, or queues it.
func (g *Limiter) waiter(now time.Time, w string, ttl time.Duration) WaiterReply {
	if i := g.single(w); i >= 0 && !g.Grants[i].Window.IsZero() && !now.Before(g.Grants[i].Window) && !InWindow(g.Grants[i].Window, now) {
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
	if len(g.Ledger.Waiting) >= g.Config.MaxQueue {
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
	if g.Ledger.Free(g.Cap(), now) < 1 || !g.Rate.Open(now, g.Config.RateLimit) {
		return Grant{}, false
	}
	adm := g.Breaker.Admit(now)
	if !adm.OK {
		return Grant{}, false
	}
	l := g.Ledger.Lend(w, 1, g.Cap(), ttl, now)
	s := Grant{Waiter: w, Ticket: adm.Ticket, Until: l.Expires}
	if g.Config.RateLimit > 0 {
		s.Window = g.Rate.Take(now)
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
func (g *Limiter) Done(now time.Time, waiter string, o *Outcome) {
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
	} else if len(g.Ledger.Waiting) > 0 && g.Breaker.State() == CircuitClosed && !g.Rate.Open(now, g.Config.RateLimit) {
		take(NextOpen(now)) // waiters held back by the rate limit: the next window's grants
	}
	if len(g.Ledger.Waiting) > 0 && g.Disabled == nil {
		if g.Breaker.SlotBusy {
			take(g.Breaker.SlotAt.Add(g.Breaker.Config.ProbeTimeout.Std()))
		} else if due := g.Breaker.NextProbeAt(); due.After(now) {
			take(due)
		}
	}
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

// LimiterView is the limiter as people see it. herald.EndpointState embeds it: these are
// fields of an endpoint's state on the wire.
type LimiterView struct {
	// Circuit is the circuit breaker's state.
	Circuit CircuitView `json:"circuit"`
	// InFlight is how many permits are out (attempts running or leased to workers).
	InFlight int `json:"in_flight"`
	// Cap is the current concurrency cap; MaxInFlight the configured one (the cap is
	// lower while the endpoint is slow).
	Cap         int `json:"cap"`
	MaxInFlight int `json:"max_in_flight"`
	// RateLimit is the most requests that may start per aligned second (0: no limit).
	RateLimit int `json:"rate_limit,omitempty"`
	// Leases are the blocks of permits held by workers and waiting deliveries.
	Leases []Lease `json:"leases,omitempty"`
	// Queue is how many deliveries wait for a permit or for the circuit to close.
	Queue int `json:"queue"`
	// P50 and P99 are attempt latencies over the recent window.
	P50 duration.Duration `json:"p50"`
	P99 duration.Duration `json:"p99"`
	Lifecycle
}

// CircuitView is the circuit breaker as people see it.
type CircuitView struct {
	// State is closed, open or half_open.
	State CircuitState `json:"state"`
	// Since is when the circuit entered State.
	Since time.Time `json:"since,omitzero"`
	// Reason says what tripped it, e.g. "5 consecutive failures".
	Reason string `json:"reason,omitempty"`
	// TrippedAt is when it last opened.
	TrippedAt time.Time `json:"tripped_at,omitzero"`
	// NextProbeAt is when the next probe may go (open only).
	NextProbeAt time.Time `json:"next_probe_at,omitzero"`
}

// Lifecycle is an endpoint's lifecycle as people see it. herald.EndpointState embeds it
// through LimiterView.
type Lifecycle struct {
	// Disabled is set while the endpoint is disabled: why, and since when.
	Disabled *Disablement `json:"disabled,omitempty"`
	// FailingSince is when the current spell of failed attempts began (none: zero).
	FailingSince time.Time `json:"failing_since,omitzero"`
}

// View summarizes the limiter at now.
func (g *Limiter) View(now time.Time) LimiterView {
	var live []Lease
	for _, l := range g.Ledger.Held {
		if l.Expires.After(now) {
			live = append(live, l)
		}
	}
	return LimiterView{
		Circuit: CircuitView{
			State:       g.Breaker.State(),
			Since:       g.Breaker.Since(),
			Reason:      g.Breaker.TripReason(),
			TrippedAt:   g.Breaker.TrippedAt,
			NextProbeAt: g.Breaker.NextProbeAt(),
		},
		InFlight:    g.Ledger.InUse(now),
		Cap:         g.Cap(),
		MaxInFlight: g.Capacity.Config.MaxInFlight,
		RateLimit:   g.Config.RateLimit,
		Leases:      live,
		Queue:       len(g.Ledger.Waiting),
		P50:         duration.Duration(g.Capacity.Percentile(now, 0.5)),
		P99:         duration.Duration(g.Capacity.Percentile(now, 0.99)),
		Lifecycle:   Lifecycle{Disabled: g.Disabled, FailingSince: g.FailingSince},
	}
}

// MaxConfigAge is the oldest a worker's knowledge of an endpoint (its configuration, its
// circuit) may be when an attempt starts; the gate asks again past it.
const MaxConfigAge = time.Second

// ConfigSettle is how long a change to a registered endpoint waits before it returns:
// past MaxConfigAge, with a margin for clocks that run at slightly different rates, so
// that every attempt that starts after the change has returned uses it, on any worker.
const ConfigSettle = MaxConfigAge + MaxConfigAge/10

// UnreachableRecheck is how long a delivery waits before it asks again when its endpoint
// workflow could not be reached.
const UnreachableRecheck = 10 * time.Second

// QueueFullRecheck is how long a delivery that found the endpoint's queue full waits before
// it asks again: a minute past the probe (retryAt, if any), and never longer than a queued
// delivery would (MaxQueuedWait), so that a circuit closed by hand early lets it go soon.
func QueueFullRecheck(retryAt, now time.Time) time.Duration {
	return min(HoldRecheck(false, retryAt, now)+time.Minute, MaxQueuedWait)
}

// NotStartedRecheck is how long a delivery waits before it makes again an attempt that
// could not start (no worker slot in time, the worker stopping).
const NotStartedRecheck = 10 * time.Second

// MaxQueuedWait is how long a queued attempt waits for its permit before it asks again, in
// case the permit's signal was lost.
const MaxQueuedWait = 10 * time.Minute

// HoldRecheck is how long an attempt held back by its endpoint waits before asking again
// if no permit reaches it: a queued one is signalled when its turn comes and asks again
// only after MaxQueuedWait, or just after retryAt (the probe time) if that is sooner; one
// that could not be queued asks again just after retryAt, or in a second.
func HoldRecheck(queued bool, retryAt, now time.Time) time.Duration {
	again := MaxQueuedWait
	if !queued {
		again = time.Second
	}
	if !retryAt.IsZero() && retryAt.After(now) && (!queued || retryAt.Sub(now) < again) {
		again = retryAt.Sub(now) + time.Second
	}
	return again
}

// Snapshot is what a worker's gate knows of an endpoint between messages: enough to admit
// attempts on its own (closed, nobody queued, room under the cap) and to say why an attempt
// must wait otherwise. The endpoint workflow answers it to a query (no history event) and
// with every lease renewal.
type Snapshot struct {
	Circuit CircuitState `json:"circuit"`
	// Ticket goes with the outcomes of attempts admitted while closed.
	Ticket Ticket `json:"ticket"`
	// Cap is the concurrency cap in force; Free the permits nobody holds.
	Cap  int `json:"cap"`
	Free int `json:"free"`
	// Queue is how many attempts wait in the endpoint's queue; QueueFull is set when no
	// more can be queued.
	Queue     int  `json:"queue"`
	QueueFull bool `json:"queue_full,omitempty"`
	// Threshold is how many consecutive failures trip the breaker.
	Threshold int `json:"threshold"`
	// Slow is the latency from which an attempt counts toward slowing the cap down.
	Slow duration.Duration `json:"slow"`
	// RateLimit, when set, is the endpoint's rate limit in requests per second: the gate
	// admits no attempt on its own (no lease, no spare permits); each waits for a grant.
	RateLimit int `json:"rate_limit,omitempty"`
	// Reason says why attempts wait now (empty while they need not); RetryAt is when the
	// next probe is due, for an open circuit.
	Reason  string    `json:"reason,omitempty"`
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Disabled is set while the endpoint is disabled: nothing is admitted or queued.
	Disabled bool `json:"disabled,omitempty"`
	// Failing is set during a spell of failed attempts: a success is then worth telling
	// the endpoint workflow at once, as it ends the spell (see DisableAfter).
	Failing bool `json:"failing,omitempty"`
}

// RateTurn says whether an attempt that waits for a grant is only taking its turn at a
// rate-limited endpoint (closed, nobody else queued): the normal path of each of its
// attempts, not a hold to show in listings.
func (s Snapshot) RateTurn() bool {
	return s.RateLimit > 0 && s.Circuit == CircuitClosed && s.Queue == 0
}

// Snapshot returns what a gate needs to know of the limiter at now. It changes nothing (a
// query handler calls it).
func (g *Limiter) Snapshot(now time.Time) Snapshot {
	s := Snapshot{
		Circuit:   g.Breaker.State(),
		Cap:       g.Cap(),
		Free:      g.Ledger.Free(g.Cap(), now),
		Queue:     len(g.Ledger.Waiting),
		QueueFull: len(g.Ledger.Waiting) >= g.Config.MaxQueue,
		Threshold: g.Config.Breaker.ConsecutiveFailures,
		Slow:      g.Capacity.Config.RecoverP99,
		RateLimit: g.Config.RateLimit,
	}
	if t, ok := g.Breaker.Ticket(); ok {
		s.Ticket = t
	}
	if s.Circuit != CircuitClosed || s.Queue > 0 || s.Free == 0 || s.RateLimit > 0 {
		s.Reason, s.RetryAt = g.holdReason(now)
	}
	if g.Lifecycle {
		s.Failing = !g.FailingSince.IsZero()
	}
	if d := g.Disabled; d != nil {
		s.Disabled, s.Reason, s.RetryAt = true, "endpoint disabled: "+d.Reason, time.Time{}
	}
	return s
}

// Coarse is s with the numbers that change with every lease and every waiter rounded to
// what a gate decides by: Free at most one more than the spare permits (room for spares,
// and more), Queue 0 or 1 (nobody, or somebody waits). A workflow can publish it, and
// publish it again only when it changes, which is rarely while an endpoint is quiet.
func (s Snapshot) Coarse() Snapshot {
	s.Free = min(s.Free, SparePermits(s.Cap)+1)
	s.Queue = min(s.Queue, 1)
	return s
}

// Wait takes a waiter that its worker's gate could not admit: it is granted a permit of
// its own at once when one may go now (nobody queued, the breaker admits, the cap has
// room), or given its granted permit again if it already holds one (the first signal may
// not have reached it), or else queued at the back. ok reports a permit to hand over.
func (g *Limiter) Wait(now time.Time, waiter string) (w Grant, ok bool) {
	g.expire(now)
	if g.Disabled != nil {
		g.Ledger.Remove(waiter)
		return Grant{Waiter: waiter, Until: now, Disabled: true}, true
	}
	r := g.waiter(now, waiter, g.Config.LeaseTTL.Std())
	if r.Outcome != WaiterGranted {
		return Grant{}, false
	}
	return Grant{Waiter: waiter, Ticket: r.Ticket, Until: r.Until, Window: r.Window}, true
}
