package policy

import (
	"slices"
	"time"
)

// Draining a queue through the workers' leases.
//
// A queued delivery woken with a permit of its own (Tick) costs the endpoint workflow a
// round trip per attempt: the permit's signal, then its return (a done) before the permit
// can go to the next in line, so a backlog drains at the pace of that workflow's tasks
// whatever the cap and the receiver allow. While the circuit is closed, TickPasses wakes
// queued deliveries with a pass instead (Grant.Pass): no permit of its own, but the right
// to be admitted ahead of the queue by a worker's gate, under the gate's lease. The lease's
// permits turn over at the gate (an attempt finishes, the next pass-holder takes its
// permit) with no message to the endpoint workflow, which only keeps a window of passes out
// (PassWindow) and lets the next ones go as the gates report theirs used (LeaseRequest.Passed,
// carried by the renewals). The cap stays exact: every pass-holder's attempt runs on a
// leased permit. The order is the queue's, give or take the deliveries' own pace.

// PassTTL is how long a pass counts toward the window unless its gate reports it used: a
// delivery that got its pass but never reached a gate (its worker died) stops holding up
// the queue after it. A pass-holder that comes after it is still admitted ahead of the queue.
const PassTTL = 30 * time.Second

// RoomWait bounds how long an attempt waits inside its activity, at its worker's gate, for
// room under the gate's lease (a renewal on its way, or a permit of the lease coming free)
// before it falls back to a durable wait. It holds a worker slot meanwhile, so it is short.
const RoomWait = 2 * time.Second

// PassReportDelay is how long a gate lets the passes its pass-holders used gather before
// it reports them with a renewal: one renewal (an update and a workflow task of the
// endpoint workflow) carries every pass used meanwhile, where a report per pass cost the
// endpoint workflow a task per woken delivery. The window (PassWindow, at least twice the
// cap) covers the passes used and not yet reported. A renewal that asks for room for
// pass-holders waiting at the gate goes at once.
const PassReportDelay = 250 * time.Millisecond

// PassWindow is how many passes may be out at once at an endpoint with cap capNow, before
// any was used: twice the cap (at least 4; a pass-holder waits at its gate for one attempt's
// length), and no more than the cap plus 64 (a slow endpoint's pass-holders would hold worker
// slots for nothing). Once passes are used, the window is what the gates used in the last
// second, twice over (Limiter.passWindow), up to MaxPassWindow.
func PassWindow(capNow int) int {
	capNow = max(capNow, 1)
	return min(max(2*capNow, 4), capNow+64)
}

// MaxPassWindow bounds the passes out at once, however fast the gates use them.
const MaxPassWindow = 1000

// PassUse counts the passes the gates reported used, per aligned second of the endpoint
// workflow's clock: the window follows what the gates can take (Limiter.passWindow).
type PassUse struct {
	Second time.Time `json:"second,omitzero"`
	This   int       `json:"this,omitempty"`
	Last   int       `json:"last,omitempty"`
}

// add counts n passes used at now.
func (u *PassUse) add(now time.Time, n int) {
	sec := now.Truncate(time.Second)
	switch {
	case sec.Equal(u.Second):
	case sec.Equal(u.Second.Add(time.Second)):
		u.Last, u.This, u.Second = u.This, 0, sec
	default:
		u.Last, u.This, u.Second = 0, 0, sec
	}
	u.This += n
}

// rate is the passes used per second lately: the larger of the last second's and this one's.
func (u PassUse) rate(now time.Time) int {
	sec := now.Truncate(time.Second)
	switch {
	case sec.Equal(u.Second):
		return max(u.This, u.Last)
	case sec.Equal(u.Second.Add(time.Second)):
		return u.This
	}
	return 0
}

// passWindow is how many passes may be out at now: PassWindow(cap), or twice what the gates
// used in the last second if more, at most MaxPassWindow, and for a rate-limited endpoint
// at most RatePassWindow.
func (g *Limiter) passWindow(now time.Time) int {
	w := min(max(PassWindow(g.Cap()), 2*g.PassUse.rate(now)), MaxPassWindow)
	if g.Config.RateLimit > 0 {
		w = min(w, RatePassWindow(g.Config.RateLimit))
	}
	return w
}

// Drainable reports whether queued waiters would be woken with passes (TickPasses) rather
// than with permits of their own: some are queued, the circuit is closed, the endpoint is
// enabled and has no rate limit, or drains its rate-limited queue through the holders'
// shares (DrainRates; otherwise each of a rate-limited endpoint's waiters is granted).
func (g *Limiter) Drainable() bool {
	return len(g.Ledger.Waiting) > 0 && g.Disabled == nil && (g.Config.RateLimit == 0 || g.rateDrains()) &&
		g.Breaker.State() == CircuitClosed
}

// TickPasses is Tick for an endpoint that drains its queue through the workers' leases:
// while the circuit is closed (and there is no rate limit, or the gates' rate shares drain
// the queue: DrainRates) it takes waiters off the front of the queue, in order, each with a
// pass (Grant.Pass, until PassTTL), as long as fewer than its window of passes are out
// (passWindow); a drain starts (no pass out, none used lately) only once a permit is free;
// otherwise (the probe, half-open attempts, a rate limit granted per waiter, a disabled
// endpoint) it is Tick.
func (g *Limiter) TickPasses(now time.Time) []Grant {
	again := g.expirePasses(now)
	if !g.Drainable() {
		return append(again, g.Tick(now)...)
	}
	g.expire(now)
	if len(g.Passes) == 0 && g.Ledger.Free(g.Cap(), now) == 0 && g.PassUse.rate(now) == 0 {
		// Every permit is leased and no gate is draining (no pass out, none used lately): a
		// pass-holder would find no room. The drain starts once a permit is free (a lease
		// given back, or expired).
		return again
	}
	wakes := again
	for win := g.passWindow(now); len(g.Ledger.Waiting) > 0 && len(g.Passes) < win; {
		w := g.Ledger.Waiting[0]
		p := Grant{Waiter: w, Until: now.Add(PassTTL), Pass: true, Key: g.Ledger.FirstKey()}
		g.Ledger.Remove(w)
		g.Passes = append(slices.Clip(g.Passes), p)
		wakes = append(wakes, p)
	}
	return wakes
}

// Passed takes the passes a gate reports used at now (its pass-holders admitted under its
// lease): each frees a place in the window, and counts toward its size.
func (g *Limiter) Passed(now time.Time, waiters []string) {
	if len(waiters) == 0 {
		return
	}
	g.PassUse.add(now, len(waiters))
	if len(g.Passes) == 0 {
		return
	}
	g.Passes = slices.DeleteFunc(slices.Clone(g.Passes), func(p Grant) bool { return slices.Contains(waiters, p.Waiter) })
}

// Refused forgets waiter's pass if it is the one good until until: its delivery refused it
// (it was not waiting for one) or is gone. A pass handed out since, or the waiter's place
// in the queue if it asked again meanwhile, stays.
func (g *Limiter) Refused(waiter string, until time.Time) {
	if i := slices.IndexFunc(g.Passes, func(p Grant) bool { return p.Waiter == waiter && p.Until.Equal(until) }); i >= 0 {
		g.Passes = slices.Delete(slices.Clone(g.Passes), i, i+1)
	}
}

// dropPass forgets waiter's pass, if it holds one (it asked to wait again, or its delivery
// is gone), and reports whether it did.
func (g *Limiter) dropPass(waiter string) bool {
	if i := slices.IndexFunc(g.Passes, func(p Grant) bool { return p.Waiter == waiter }); i >= 0 {
		g.Passes = slices.Delete(slices.Clone(g.Passes), i, i+1)
		return true
	}
	return false
}

// expirePasses forgets the passes whose time is over, or, with RewakePasses, hands them
// out again (until PassTTL from now) and returns them.
func (g *Limiter) expirePasses(now time.Time) []Grant {
	if !slices.ContainsFunc(g.Passes, func(p Grant) bool { return !p.Until.After(now) }) {
		return nil
	}
	if !g.RewakePasses {
		g.Passes = slices.DeleteFunc(slices.Clone(g.Passes), func(p Grant) bool { return !p.Until.After(now) })
		return nil
	}
	var again []Grant
	g.Passes = slices.Clone(g.Passes)
	for i, p := range g.Passes {
		if !p.Until.After(now) {
			g.Passes[i].Until = now.Add(PassTTL)
			again = append(again, g.Passes[i])
		}
	}
	return again
}

// passDeadline is when the first pass expires while waiters wait for a place in the
// window, or at all with RewakePasses (zero: no such deadline).
func (g *Limiter) passDeadline() time.Time {
	if len(g.Passes) == 0 || len(g.Ledger.Waiting) == 0 && !g.RewakePasses {
		return time.Time{}
	}
	first := g.Passes[0].Until
	for _, p := range g.Passes[1:] {
		if p.Until.Before(first) {
			first = p.Until
		}
	}
	return first
}
