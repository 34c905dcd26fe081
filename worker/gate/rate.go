package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// acquireRate admits an attempt to a rate-limited endpoint whose endpoint workflow leases
// rate budgets: against a share of the current second this gate holds and a permit of the
// cap, with no round trip. An attempt that finds no share now is booked for a coming
// second (policy.LocalRate.Book) and waits for it on a durable timer. Called with e.mu
// held; it unlocks it.
func (g *Gate) acquireRate(ctx context.Context, e *gateEntry, waiter string) (*Admission, *herald.Hold, error) {
	now := time.Now()
	if w, ok := e.h.AdmitRate(waiter, now, now.Before(e.until), e.stopping.Load()); ok {
		lead := w.After(now)
		if lead && !g.startWaiting() {
			// Admitted on the next window's share, but as many attempts wait in their
			// activities as the gate allows: this one comes back on a durable timer.
			at := e.h.Unlead(waiter, w, now)
			limit := e.h.Snapshot.RateLimit
			e.mu.Unlock()
			return nil, bookedHold(limit, at, now), nil
		}
		a := &Admission{Endpoint: e.ep, Ticket: e.h.Snapshot.Ticket, Window: w, entry: e}
		grow := e.h.Growing()
		e.mu.Unlock()
		if grow {
			g.kick(e)
		}
		if !lead {
			return a, nil, nil
		}
		// Admitted in a window's send margin on the next window's share: its request
		// starts as that window begins, at most policy.RateSendMargin from now. The wait
		// holds a local-activity slot, so it counts against the gate's bound (BoundHolding).
		err := untilWindow(ctx, w)
		g.holding.Add(-1)
		if err != nil {
			e.mu.Lock()
			e.h.Release()
			e.h.Rate.Untake(w)
			e.mu.Unlock()
			return nil, nil, err
		}
		return a, nil, nil
	}
	kind, at := e.h.HoldRate(waiter, now)
	snap, tripped := e.h.Snapshot, e.h.Tripped
	first := kind == policy.HoldBooked && !e.h.Rate.Asked && !e.h.Renewing
	e.mu.Unlock()
	if kind != policy.HoldBooked {
		return g.hold(ctx, e, waiter, kind, snap, tripped)
	}
	if first {
		g.kick(e) // no share heard yet: ask for one now, not at the next pass
	}
	return nil, bookedHold(snap.RateLimit, at, now), nil
}

// bookedHold is the hold of an attempt booked at now to come back at at, for a coming
// second of an endpoint limited to limit requests per second.
func bookedHold(limit int, at, now time.Time) *herald.Hold {
	return &herald.Hold{
		Reason: fmt.Sprintf("endpoint rate limit of %d requests per second: its turn is the second from %s", limit,
			policy.WindowOf(at).UTC().Format("15:04:05")),
		Brief: true, RetryAt: at, Recheck: herald.Duration(max(at.Sub(now), time.Millisecond)),
	}
}

// lateShare answers an attempt admitted on a rate share whose request could not start
// within the share's second: its room and the request of the share go back, and it comes
// back at the second it is booked for.
func (g *Gate) lateShare(a *Admission, start time.Time) *herald.Hold {
	defer g.unref(a.entry)
	e := a.entry
	e.mu.Lock()
	e.h.Release()
	e.h.Rate.Untake(a.Window)
	at := e.h.Rate.Book(e.h.Snapshot.RateLimit, a.Waiter, start)
	e.mu.Unlock()
	return &herald.Hold{Reason: windowReason(a.Window, start), Brief: true, RetryAt: at,
		Recheck: herald.Duration(max(at.Sub(start), time.Millisecond))}
}
