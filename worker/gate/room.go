package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// An attempt that finds no room under this worker's lease while the endpoint has room (a
// hot endpoint whose first lease is on its way), or that holds a pass (policy.Grant.Pass:
// woken from the endpoint's queue to be admitted under a lease), waits here, inside its
// activity, for a renewal to answer or a permit of the lease to come free, at most
// policy.RoomWait, rather than on a durable timer of a second or more.

// changedLocked returns the channel closed at e's next change (a renewal answered, an
// attempt finished or released). Call with e.mu held.
func (e *gateEntry) changedLocked() <-chan struct{} {
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	return e.changed
}

// notifyLocked wakes the attempts waiting for room at e. Call with e.mu held.
func (e *gateEntry) notifyLocked() {
	if e.changed != nil {
		close(e.changed)
		e.changed = nil
	}
}

// awaitRoom waits, at most until deadline, for e to change; it reports false once the
// deadline has passed or ctx is done.
func awaitRoom(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool {
	left := time.Until(deadline)
	if left <= 0 {
		return false
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// admitWaiting retries admission of waiter's attempt that found no room while the endpoint
// has some (policy.HoldLease): it asks for a renewal and waits for room, at most
// policy.RoomWait, unless as many attempts wait already as the endpoint's cap
// (policy.MaxHolding) or, all endpoints together, half the worker's slots
// (Gate.BoundHolding). At an endpoint that leases rate budgets the attempt also takes a
// request of a share holding now (policy.LocalLease.AdmitWaiting). It returns nil when
// there was none in time: the caller's hold stands.
func (g *Gate) admitWaiting(ctx context.Context, e *gateEntry, waiter string) *Admission {
	deadline := time.Now().Add(g.roomWait)
	if !g.startHolding(e) {
		g.kick(e) // the renewal asks for the room, whether the attempt waits here or not
		return nil
	}
	defer g.stopHolding(e)
	// The channel of e's next change is taken before the renewal is asked for, and again in
	// the same lock as each look: a renewal that answers at once still wakes this attempt.
	// A renewal that answered after the caller looked, before this lock, changed e already:
	// look once now, or the attempt would wait for a change that may not come.
	e.mu.Lock()
	ch := e.changedLocked()
	a := e.admitWaitingLocked(waiter, time.Now())
	e.mu.Unlock()
	if a != nil {
		return a
	}
	g.kick(e)
	for {
		if !awaitRoom(ctx, ch, deadline) {
			return nil
		}
		e.mu.Lock()
		now := time.Now()
		if a := e.admitWaitingLocked(waiter, now); a != nil {
			e.mu.Unlock()
			return a
		}
		mayCome := e.h.RoomMayCome(now)
		ch = e.changedLocked()
		e.mu.Unlock()
		if !mayCome {
			return nil // the endpoint holds attempts back now: the hold stands
		}
	}
}

// admitWaitingLocked admits waiter's waiting attempt at now if e's lease has room for it
// (policy.LocalLease.AdmitWaiting), nil if not. e.mu is held.
func (e *gateEntry) admitWaitingLocked(waiter string, now time.Time) *Admission {
	w, ok := e.h.AdmitWaiting(waiter, now, now.Before(e.until), e.stopping.Load())
	if !ok {
		return nil
	}
	return &Admission{Endpoint: e.ep, Ticket: e.h.Snapshot.Ticket, Window: w, entry: e}
}

// startHolding counts one more attempt waiting here for room at e, unless the gate's bound
// over all endpoints (Gate.BoundHolding) or e's own (policy.LocalLease.StartHolding) is
// reached; stopHolding takes a counted one off.
func (g *Gate) startHolding(e *gateEntry) bool {
	if !g.startWaiting() {
		return false
	}
	e.mu.Lock()
	ok := e.h.StartHolding()
	e.mu.Unlock()
	if !ok {
		g.holding.Add(-1)
	}
	return ok
}

// startWaiting counts one more attempt waiting in its activity at this gate, all endpoints
// together, and reports true, unless the gate's bound (Gate.BoundHolding) is reached. The
// caller takes it off g.holding when the wait ends.
func (g *Gate) startWaiting() bool {
	n := g.holding.Add(1)
	if g.maxHolding > 0 && n > g.maxHolding {
		g.holding.Add(-1)
		return false
	}
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	return true
}

// HoldingPeak is the most attempts that waited in their activities at this gate at once
// (for room under a lease, or for the rate window they were admitted to), all endpoints
// together: at most policy.MaxHoldingAll of the worker's slots.
func (g *Gate) HoldingPeak() int64 { return g.peak.Load() }

func (g *Gate) stopHolding(e *gateEntry) {
	e.mu.Lock()
	e.h.Holding--
	e.mu.Unlock()
	g.holding.Add(-1)
}

// acquirePass admits a pass-holder (permit.Pass) under the lease, ahead of the endpoint's
// queue, waiting for room at most policy.RoomWait; the pass is reported used with the
// next renewal. At a rate-limited endpoint that drains its queue through the rate shares,
// it also takes a request of a share holding now (policy.LocalLease.AdmitPass), waiting
// for the next second this gate holds a share of if it has none left now. Without room in
// time, or if the endpoint holds attempts back now (the circuit opened again), it queues
// the waiter again.
func (g *Gate) acquirePass(ctx context.Context, e *gateEntry, waiter string) (*Admission, *herald.Hold, error) {
	deadline := time.Now().Add(g.roomWait)
	e.mu.Lock()
	e.h.Holding++
	e.h.Passing++
	e.mu.Unlock()
	kicked, refreshed := false, false
	for {
		e.mu.Lock()
		now := time.Now()
		if w, ok := e.h.AdmitPass(now, now.Before(e.until), e.stopping.Load()); ok {
			e.h.Holding--
			e.h.Passing--
			e.h.Passed++
			e.passed = append(e.passed, waiter)
			a := &Admission{Endpoint: e.ep, Ticket: e.h.Snapshot.Ticket, Window: w, entry: e}
			e.mu.Unlock()
			g.reportPasses(e) // its place in the window comes free once reported
			return a, nil, nil
		}
		snap, tripped := e.h.Snapshot, e.h.Tripped
		ch := e.changedLocked()
		// A share of a coming second: look again as it begins, if before the deadline.
		wake := deadline
		if next := e.h.NextRateShare(now); !next.IsZero() && next.Before(wake) {
			wake = next
		}
		e.mu.Unlock()
		held := snap.Disabled || tripped || snap.Circuit != policy.CircuitClosed
		if held && !refreshed && !tripped {
			// Passes go out only while the circuit is closed: what this gate knows may be
			// older than the pass (a reset a moment ago). Read it again, once.
			refreshed = true
			e.mu.Lock()
			e.learned = time.Time{}
			e.mu.Unlock()
			if g.fresh(ctx, e) == nil {
				continue
			}
		}
		if !held && !kicked {
			kicked = true
			g.kick(e) // a renewal that says this worker's pass-holders wait for room
		}
		if !held && (awaitRoom(ctx, ch, wake) || (ctx.Err() == nil && time.Now().Before(deadline))) {
			continue // a change, or the second of a share has begun
		}
		e.mu.Lock()
		e.h.Holding--
		e.h.Passing--
		e.mu.Unlock()
		if snap.Disabled {
			return nil, disabledHold(snap), nil
		}
		reason := snap.Reason
		if !held {
			reason = fmt.Sprintf("woken from the endpoint's queue, but this worker's lease (or rate share) had no room within %s", g.roomWait)
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		// Waiting again takes the pass back (policy.Limiter.Wait).
		return nil, g.waitAgain(ctx, e, waiter, snap, reason), nil
	}
}
