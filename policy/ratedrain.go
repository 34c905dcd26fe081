package policy

import (
	"slices"
	"time"
)

// Draining a rate-limited endpoint's queue through the leased rate shares.
//
// A queued waiter granted one request of the queue's own budget (RateLedger.TakeOwn) costs
// the endpoint workflow a grant, a done and a workflow task each: a queue of thousands
// drains at that workflow's pace, far below a limit of a hundred a second. A limiter that
// drains rates (DrainRates) wakes its queue, while the circuit is closed, with passes
// (TickPasses, drain.go), as an endpoint with no rate limit does, and keeps lending the
// holders their shares while waiters are queued: each pass-holder is admitted by its
// worker's gate against a share of the second it starts in (AdmitRatePass) and a permit of
// the gate's lease. The limit holds as before: every request starts under a share, and the
// shares of a second (with what the queue's own grants took of it: the probe, half-open
// attempts) never add up to more than the limit.
//
// Fairness: the queue goes first. While the endpoint says waiters are queued, or
// pass-holders wait at the gate for a share, a gate admits no attempt without a pass on its
// shares (RateQueued): the attempt joins the back of the queue (or, when only this gate's
// pass-holders wait, is booked for a coming second). Pass-holders leave the queue in its
// order, at most RatePassWindow at once; at a gate they take the shares in the order they
// come, so the order is the queue's give or take the deliveries' own pace. A gate whose
// snapshot is behind (at most MaxConfigAge) may still admit a new attempt ahead of a queue
// that has just formed; the limit holds all the same.

// RatePassWindow is how many passes may be out at once at an endpoint limited to limit
// requests per second: one second's budget and half of the next (at least 4). A
// pass-holder waits at its gate, holding a worker slot, for a share of the second it
// may start in: with no more out than this, it waits less than RoomWait while the gates
// hold the limit's shares between them.
func RatePassWindow(limit int) int { return max(limit+limit/2, 4) }

// DrainRates makes a limiter that leases rate budgets (LeaseRates) drain its queue through
// the holders' shares from now on: queued waiters woken with passes while the circuit is
// closed, and shares lent while some are queued.
func (g *Limiter) DrainRates() {
	if g.RateLeased {
		g.RatePasses = true
	}
}

// rateDrains reports whether the limiter drains a rate-limited queue through the shares.
func (g *Limiter) rateDrains() bool {
	return g.Config.RateLimit > 0 && g.RateLeased && g.RatePasses
}

// RateQueued reports whether the gate's rate shares go to pass-holders first at an endpoint
// that drains its queue through them (Snapshot.RatePasses): some are queued there, or
// pass-holders wait at this gate for a share. An attempt without a pass is then not
// admitted on a share.
func (h *LocalLease) RateQueued() bool {
	return h.RateLeased() && h.Snapshot.RatePasses && (h.Snapshot.Queue > 0 || h.Passing > 0)
}

// AdmitPass takes room for a pass-holder (Grant.Pass) at now: a permit of the lease (Admit)
// and, at an endpoint that leases rate budgets, a request of a share holding now, whose
// window it returns (AdmitRatePass).
func (h *LocalLease) AdmitPass(now time.Time, leaseOpen, stopping bool) (window time.Time, ok bool) {
	if h.RateLeased() {
		return h.AdmitRatePass(now, leaseOpen, stopping)
	}
	return time.Time{}, h.Admit(leaseOpen, stopping)
}

// AdmitRatePass is AdmitRate for a pass-holder: it goes ahead of the attempts without a
// pass (RateQueued does not hold it back).
func (h *LocalLease) AdmitRatePass(now time.Time, leaseOpen, stopping bool) (time.Time, bool) {
	if !h.RateLeased() || !h.Rate.Has(now) || !h.admitRoom(leaseOpen, stopping) {
		return time.Time{}, false
	}
	return h.Rate.Take(now)
}

// NextRateShare is when a pass-holder with no share at now may find one: the start of the
// first window after now that this gate holds a share with requests left of (zero: none
// held, or not a rate-leased endpoint). It waits for it (within RoomWait) rather than for
// a renewal.
func (h *LocalLease) NextRateShare(now time.Time) time.Time {
	if !h.RateLeased() {
		return time.Time{}
	}
	i := slices.IndexFunc(h.Rate.Held, func(l LocalShare) bool { return l.Window.After(now) && l.Used < l.N })
	if i < 0 {
		return time.Time{}
	}
	return h.Rate.Held[i].Window
}

// RateDrainDue reports whether a limiter that leases rate budgets, and does not drain its
// queue through them yet (DrainRates), has a queue that would drain now: some are queued,
// the circuit is closed and the endpoint enabled. The endpoint workflow decides then
// whether to drain it that way (a change of the commands it issues).
func (g *Limiter) RateDrainDue() bool {
	return g.Config.RateLimit > 0 && g.RateLeased && !g.RatePasses && len(g.Ledger.Waiting) > 0 &&
		g.Disabled == nil && g.Breaker.State() == CircuitClosed
}

// AdmitWaiting admits, at now, an attempt that waits at the gate for room under the lease
// (HoldLease: the endpoint has permits nobody holds): Admit, or at an endpoint that leases
// rate budgets AdmitRate, which also takes a request of a share holding now and returns its
// window (Admit alone never admits a rate-limited endpoint's attempt).
func (h *LocalLease) AdmitWaiting(waiter string, now time.Time, leaseOpen, stopping bool) (time.Time, bool) {
	if h.RateLeased() {
		return h.AdmitRate(waiter, now, leaseOpen, stopping)
	}
	return time.Time{}, h.Admit(leaseOpen, stopping)
}

// RoomMayCome reports whether an attempt that found no room under the lease at now should
// keep waiting for the renewal it asked for (policy.RoomWait): the circuit is closed, no
// trip is on its way, nobody is queued, and at a rate-leased endpoint a share of this
// second is held. Otherwise the endpoint holds attempts back and the hold stands.
func (h *LocalLease) RoomMayCome(now time.Time) bool {
	return h.Snapshot.Circuit == CircuitClosed && !h.Tripped && h.Snapshot.Queue == 0 &&
		(!h.RateLeased() || h.Rate.Has(now))
}
