package policy

import "time"

// Overflow is what the limiter remembers of the deliveries its workers' gates turned away
// because its queue was full (Snapshot.QueueFull). It cannot name them: holding their ids
// is what the queue's bound (LimiterConfig.MaxQueue) forbids. Each waits on its own
// recheck (QueueFullRecheck, up to MaxQueuedWait), and is found again through visibility
// when the queue has room (NudgeDue): without that, a backlog larger than the queue drains
// its first MaxQueue deliveries and then idles until the others' rechecks.
type Overflow struct {
	// FullAt is when the queue was last seen full (NoteFull); zero when no delivery is
	// known to wait for room.
	FullAt time.Time `json:"full_at,omitzero"`
	// NudgeAfter is when the next nudge may start.
	NudgeAfter time.Time `json:"nudge_after,omitzero"`
}

// Nudge timing. A nudge that found fewer deliveries than it asked for ends the overflow only
// if it began NudgeSettle after the queue was last full: a gate's snapshot may be a second
// old when it turns a delivery away, and the delivery's waiting status reaches visibility
// some time after that.
const (
	// NudgeEvery is the least time between two nudges of one endpoint's overflow.
	NudgeEvery = 10 * time.Second
	// NudgeSettle is how long after the queue was last full a nudge must begin for its
	// count to end the overflow.
	NudgeSettle = 30 * time.Second
	// NudgeWindow is how many of an endpoint's newest waiting deliveries one nudge looks at.
	NudgeWindow = 10000
)

// Overflowing reports whether deliveries may wait for room: the queue is full now, or was,
// and the deliveries it turned away may not all have been nudged back yet.
func (g *Limiter) Overflowing() bool {
	return g.QueueFull() || !g.Overflow.FullAt.IsZero()
}

// NoteFull records that the queue is full now, if it is: its workers' gates turn
// deliveries away from here on, until a snapshot says otherwise.
func (g *Limiter) NoteFull(now time.Time) {
	if g.QueueFull() {
		g.Overflow.FullAt = now
	}
}

// NudgeDue returns how many of the deliveries turned away by a full queue to nudge now
// (0: none): as many as the queue has room for, once it is half empty again, at most one
// nudge every NudgeEvery, and none while the endpoint is disabled.
func (g *Limiter) NudgeDue(now time.Time) int {
	if g.Overflow.FullAt.IsZero() || g.Disabled != nil || now.Before(g.Overflow.NudgeAfter) {
		return 0
	}
	n := len(g.Ledger.Waiting)
	if 2*n > g.Config.MaxQueue {
		return 0
	}
	return g.Config.MaxQueue - n
}

// NudgeStarted records a nudge that begins at now: none other starts before NudgeEvery.
func (g *Limiter) NudgeStarted(now time.Time) {
	g.Overflow.NudgeAfter = now.Add(NudgeEvery)
}

// Nudged records a nudge that began at began, asked for asked deliveries and found found
// (ok is false when it failed): the next may start NudgeEvery from now, and none is needed
// once one that began NudgeSettle after the queue was last full found fewer than it asked.
func (g *Limiter) Nudged(now, began time.Time, asked, found int, ok bool) {
	g.Overflow.NudgeAfter = now.Add(NudgeEvery)
	if ok && found < asked && began.Sub(g.Overflow.FullAt) >= NudgeSettle {
		g.Overflow = Overflow{}
	}
}

// nudgeDeadline is when the loop must look at the overflow again (zero: no need): the next
// nudge's earliest time, while deliveries may wait for room.
func (g *Limiter) nudgeDeadline(now time.Time) time.Time {
	if g.Overflow.FullAt.IsZero() || !g.Overflow.NudgeAfter.After(now) {
		return time.Time{}
	}
	return g.Overflow.NudgeAfter
}

// Holds reports whether the limiter holds waiter: queued, granted a permit, or let go
// with a pass.
func (g *Limiter) Holds(waiter string) bool {
	if g.Ledger.Queued(waiter) || g.single(waiter) >= 0 {
		return true
	}
	for _, p := range g.Passes {
		if p.Waiter == waiter {
			return true
		}
	}
	return false
}
