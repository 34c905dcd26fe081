package policy

import (
	"time"

	"github.com/heraldhq/herald/duration"
)

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
	// RateLeased, with RateLimit, says the limiter leases rate budgets to the gates
	// (Limiter.RateLeased): a gate admits attempts against the shares it holds (LocalRate).
	// Without it, each attempt waits for a grant of its own.
	RateLeased bool `json:"rate_leased,omitempty"`
	// RatePasses, with RateLeased, says the limiter drains its queue through the gates'
	// rate shares (Limiter.DrainRates): while some are queued, a gate's shares go to
	// pass-holders first (LocalLease.RateQueued).
	RatePasses bool `json:"rate_passes,omitempty"`
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
	s.RateLeased = g.RateLeased && s.RateLimit > 0
	s.RatePasses = s.RateLeased && g.RatePasses
	if t, ok := g.Breaker.Ticket(); ok {
		s.Ticket = t
	}
	if s.Circuit != CircuitClosed || s.Queue > 0 || s.Free == 0 || s.RateLimit > 0 {
		s.Reason, s.RetryAt = g.holdReason(now)
	}
	s.Failing = !g.FailingSince.IsZero()
	if d := g.Disabled; d != nil {
		s.Disabled, s.Reason, s.RetryAt = true, "endpoint disabled: "+d.Reason, time.Time{}
	}
	return s
}

// UnlimitedSnapshot is what an endpoint admits before it has a limiter (the moment
// between its first put and the limiter's creation): circuit closed, every permit free up
// to the highest cap an endpoint may have.
func UnlimitedSnapshot() Snapshot {
	return Snapshot{Circuit: CircuitClosed, Cap: MaxMaxInFlight, Free: MaxMaxInFlight}
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
