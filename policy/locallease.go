package policy

import "time"

// LocalLease is a worker's standing at one endpoint, as the worker's gate sees it: the lease of
// permits it holds, the endpoint as last heard (Snapshot), and the decisions of the fast
// path — admit, how many permits to ask for, when to stop at once, what a turned-away
// attempt should do, when to talk to the endpoint workflow — with no clock reading and no
// I/O; the gate supplies both. It is not safe for concurrent use: the gate locks around it.
type LocalLease struct {
	// Known is set once the endpoint has answered (a lease renewal or a snapshot query).
	Known bool
	// Snapshot is the endpoint as last heard.
	Snapshot Snapshot
	// Permits is the lease; InUse the attempts the gate runs now (leased or spare).
	Permits, InUse int
	// Spare is how many attempts the gate may run beyond its lease on the strength of the
	// last snapshot alone: a few of the permits nobody holds (SparePermits), and only while
	// the circuit is closed and nobody is queued. This is what lets a cold endpoint take a
	// delivery with no lease and no history event at the endpoint workflow.
	Spare int
	// Demand counts the attempts turned away for want of room since the last renewal: the
	// next renewal asks for them.
	Demand int
	// Peak is the most attempts in use since the last renewal; Used says whether any was
	// admitted since then.
	Peak int
	Used bool
	// Streak counts the current run of consecutive failures.
	Streak int
	// Tripped is set when Streak reached the breaker's threshold, until the endpoint
	// workflow has seen the tripping failure (TripSeq) and still says closed.
	Tripped bool
	// Seq counts the outcomes of the attempts the gate admitted; TripSeq is Seq at the trip;
	// Told is the Seq the endpoint workflow is known to have been given.
	Seq, TripSeq, Told int
	// Failures counts failed attempts: the next failure's place in Spread.
	Failures uint64
	// Renewing is set while a renewal is in flight; Flight then bounds admissions under
	// the lease, since the renewal may shrink it to what it asked for.
	Renewing bool
	Flight   int
	// Claim is what the last renewal asked the endpoint workflow to keep counted until
	// the next one (Ledger.Reserve): the attempts running when it was sent, or its
	// Flight if more. Zero after a renewal that got no answer.
	Claim int
	// Rate is the gate's rate budget, for an endpoint that leases them (RateLeased).
	Rate LocalRate
	// Holding counts the attempts waiting at the gate, inside their activities, for room
	// under the lease (at most RoomWait each); Passing is how many of them hold a pass
	// (Grant.Pass). Passed counts the passes used here and not yet reported.
	Holding, Passing, Passed int
}

// Settling says whether the last renewal lent fewer permits than it claimed: the endpoint
// workflow counts the difference until the next renewal, which goes, with or without a
// lease, as soon as what runs fits the lease (SettleNow) or at the next pass.
func (h *LocalLease) Settling() bool { return !h.Renewing && h.Permits < h.Claim }

// SparePermits is how many attempts a gate may run at an endpoint with cap capNow without
// holding a lease: a quarter of the cap, at most 4, none for a cap under 4. With W workers
// at once, the cap can be exceeded by at most W × SparePermits: the permits a gate runs as
// spares are free at the endpoint workflow, which may grant them too.
func SparePermits(capNow int) int { return min(4, capNow/4) }

// HoldKind says what an attempt the gate could not admit does instead.
type HoldKind int

// What a turned-away attempt does.
const (
	// HoldQueue: wait in the endpoint's durable queue for a permit of its own (the circuit
	// is not closed, others are queued, or the cap is full).
	HoldQueue HoldKind = iota + 1
	// HoldLease: the endpoint has room but this worker's lease does not yet: ask again
	// after the next renewal, which asks for more.
	HoldLease
	// HoldLater: the endpoint's queue is full: ask again later (Snapshot.RetryAt, or in a
	// minute).
	HoldLater
	// HoldDisabled: the endpoint is disabled; the attempt does not go, and does not wait
	// (OnDisabled says what the delivery does).
	HoldDisabled
	// HoldBooked: the endpoint's rate budget held by this gate has no request left now:
	// come back at the second the attempt is booked for (LocalLease.HoldRate).
	HoldBooked
)

// Heard takes what the endpoint workflow said: s, with the lease it granted when leased is
// set (a renewal), given seen, the Seq of outcomes it had been told when it answered. A
// tripped gate goes on once the endpoint workflow has seen the tripping failure (or the
// circuit has closed since) and says closed.
func (h *LocalLease) Heard(s Snapshot, leased bool, permits, seen int) {
	wasOpen := h.Known && h.Snapshot.Circuit != CircuitClosed
	h.Known, h.Snapshot = true, s
	if leased {
		h.Permits, h.Renewing = permits, false
	}
	h.Told = max(h.Told, seen)
	h.Spare = 0
	if s.Circuit == CircuitClosed && s.Queue == 0 && (s.RateLimit == 0 || s.RateLeased) && !s.Disabled {
		h.Spare = min(SparePermits(s.Cap), s.Free)
	}
	if s.Circuit == CircuitClosed && (wasOpen || (h.Tripped && seen >= h.TripSeq)) {
		h.Tripped, h.Streak = false, 0
	}
}

// Admit takes room for one attempt if the gate may let it go on its own: known, closed,
// not tripped, not rate-limited (each attempt to a rate-limited endpoint waits for a grant
// of its own), and a permit of the lease (while its admission window, leaseOpen, lasts) or
// a spare one free.
func (h *LocalLease) Admit(leaseOpen, stopping bool) bool {
	return h.Snapshot.RateLimit == 0 && h.admitRoom(leaseOpen, stopping)
}

// admitRoom is Admit but for the rate limit: room under the cap (AdmitRate adds a request
// of a rate share).
func (h *LocalLease) admitRoom(leaseOpen, stopping bool) bool {
	if !h.Known || h.Tripped || stopping || h.Snapshot.Circuit != CircuitClosed || h.Snapshot.Disabled {
		return false
	}
	leased := h.Permits
	if h.Renewing {
		leased = min(leased, h.Flight)
	}
	if !leaseOpen {
		leased = 0
	}
	if h.InUse >= leased+h.Spare {
		return false
	}
	h.InUse++
	h.Peak = max(h.Peak, h.InUse)
	h.Used = true
	return true
}

// Growing says whether the gate should ask for a lease now, before any attempt is turned
// away: every permit it may use on its own (the lease, the spare ones) is taken, and the
// endpoint has more free.
func (h *LocalLease) Growing() bool {
	s := h.Snapshot
	return !h.Renewing && h.InUse >= h.Permits+h.Spare && s.Circuit == CircuitClosed && s.Queue == 0 && s.Free > h.Spare &&
		(s.RateLimit == 0 || s.RateLeased) && !s.Disabled
}

// Hold says what an attempt that Admit turned away does: queue when the endpoint holds
// attempts back (circuit not closed, others queued, this gate tripped, the cap full, a rate
// limit), wait
// for a bigger lease when the endpoint has permits nobody holds, or ask again later when
// the queue is full. An attempt that waits for a bigger lease counts as demand for the next
// renewal.
func (h *LocalLease) Hold() HoldKind {
	s := h.Snapshot
	closedAndFree := s.Circuit == CircuitClosed && !h.Tripped && s.Queue == 0 && s.Free > h.Spare && (s.RateLimit == 0 || s.RateLeased)
	switch {
	case s.Disabled:
		return HoldDisabled
	case closedAndFree:
		h.Demand++
		return HoldLease
	case s.QueueFull:
		return HoldLater
	default:
		return HoldQueue
	}
}

// Finish records the outcome of an attempt the gate admitted (own is false) or of one that
// ran on a permit of its own (own is true: its permit goes back to the endpoint workflow
// directly). It returns a failed attempt's place in the retry window (Spread) and whether
// this failure trips the gate: stop admitting and tell the endpoint workflow now.
func (h *LocalLease) Finish(ok, own bool) (spread float64, failed, trip bool) {
	if !own {
		h.InUse--
		h.Seq++
	}
	if ok {
		h.Streak = 0
	} else {
		h.Streak++
		spread, failed = Spread(h.Failures), true
		h.Failures++
	}
	if limit := h.Snapshot.Threshold; !h.Tripped && limit > 0 && h.Streak >= limit {
		h.Tripped, h.TripSeq, trip = true, h.Seq, true
	}
	return spread, failed, trip
}

// SettleNow says whether to renew at once rather than at the next pass: the endpoint
// keeps counting a flight beyond the lease (Settling), and what runs now fits the lease.
func (h *LocalLease) SettleNow() bool { return h.Settling() && h.InUse <= h.Permits }

// Release gives back the room of an admitted attempt that never got an answer.
func (h *LocalLease) Release() { h.InUse-- }

// Want is how many permits to ask for: what runs, and while the endpoint is busy (or
// attempts were turned away) room to grow to twice the peak. The endpoint workflow grants
// only what the cap leaves free, and nothing more while others wait; a rate-limited
// endpoint's gate asks for no more than it runs.
func (h *LocalLease) Want(stopping bool) int {
	if (h.Used || h.Demand > 0 || h.Holding > 0) && !stopping && (h.Snapshot.RateLimit == 0 || h.Snapshot.RateLeased) {
		return max(h.InUse+h.Demand+h.Holding, 2*h.Peak)
	}
	return h.InUse
}

// StartRenewal marks a renewal asking for want permits as in flight and returns the
// outcome count it carries. Attempts turned away for want of room count as in use until
// the next renewal: they come back for the permits this one asks for, and the lease must
// not look idle (and be given back) before they do.
func (h *LocalLease) StartRenewal(want int) (sentSeq int) {
	h.Renewing, h.Flight = true, min(h.Permits, want)
	h.Claim = max(h.InUse, h.Flight)
	h.Peak, h.Used, h.Demand = h.InUse+h.Demand, h.Demand > 0, 0
	return h.Seq
}

// RenewFailed ends a renewal that got no answer. The endpoint workflow may still take it
// and cut the lease to what it asked for, so the lease is taken to be what the gate was
// allowed while the renewal was in flight.
func (h *LocalLease) RenewFailed() {
	h.Renewing, h.Claim = false, 0
	h.Permits = min(h.Permits, h.Flight)
}

// Action is what the gate's periodic pass does for one endpoint.
type Action int

// Actions of the periodic pass.
const (
	// Wait: nothing to do now.
	Wait Action = iota
	// Renew the lease (an update to the endpoint workflow), carrying the outcomes.
	Renew
	// Report the outcomes (a signal to the endpoint workflow): no lease to renew.
	Report
	// Drop the local lease: nothing held, nothing running, nothing worth keeping.
	Drop
)

// Background says what the gate's periodic pass does. outcomes are the finished attempts
// not yet told; closing says the lease's admission window is about to close. A lease is
// renewed when there is something to report, a busy lease to extend, permits to give back
// (Settling among them) or attempts that wanted room. Without a lease, outcomes are reported only when they can
// change a decision (Worth); a delivered fast attempt alone costs the endpoint workflow
// nothing.
// stale says the untold outcomes are too old to matter (see Stale).
func (h *LocalLease) Background(outcomes []Outcome, closing, stopping, stale bool) Action {
	if h.Renewing {
		return Wait
	}
	if h.Settling() || h.Waiting() {
		return Renew
	}
	idle := h.InUse == 0 && !h.Used
	if h.Permits > 0 || h.Demand > 0 {
		if len(outcomes) > 0 || (h.Used && closing) || idle || stopping || h.Demand > 0 {
			return Renew
		}
		return Wait
	}
	if h.Worth(outcomes) || (stopping && len(outcomes) > 0) {
		return Report
	}
	if idle && (len(outcomes) == 0 || stale) {
		return Drop
	}
	return Wait
}

// Waiting says whether the next renewal has news the endpoint workflow waits for now:
// attempts waiting at the gate for room (renew at once, when no renewal is in flight), or
// passes used (each frees a place in the endpoint's pass window; reported together within
// PassReportDelay, or by the periodic pass).
func (h *LocalLease) Waiting() bool { return h.Holding > 0 || h.Passed > 0 }

// AfterTell says what follows a call that told the endpoint workflow of toldPassing
// pass-holders waiting for room (renewed: the call was a renewal, not a report): renew
// again now when more pass-holders wait for room than it told of, or when anything waits
// after a report (Waiting); otherwise report soon, within PassReportDelay, when passes
// were used while it was on its way.
func (h *LocalLease) AfterTell(toldPassing int, renewed bool) (now, soon bool) {
	now = h.Passing > toldPassing || (!renewed && h.Waiting())
	return now, !now && h.Passed > 0
}

// MaxHolding bounds the attempts without a pass that one gate keeps waiting for room at one
// endpoint inside their activities (HoldLease, at most RoomWait each): the endpoint's cap
// (at least 1). More than the cap could not all run when room comes anyway; the others
// wait on a durable timer of one renewal interval, so one hot endpoint cannot take all of a
// worker's local-activity slots for its waits. Pass-holders are bounded by the pass window.
func MaxHolding(capNow int) int { return max(capNow, 1) }

// MaxHoldingAll bounds the attempts without a pass that one gate keeps waiting in their
// activities, all endpoints together: for room (HoldLease), or for the coming second an
// attempt to a rate-limited endpoint was admitted to in a second's send margin (a lead,
// see LocalLease.Unlead). Half of the worker's local-activity slots (at least 1), so that
// attempts that can run find a slot however many endpoints are hot at once.
func MaxHoldingAll(slots int) int { return max(slots/2, 1) }

// StartHolding counts one more attempt waiting at the gate for room (Holding) and reports
// true, unless MaxHolding attempts without a pass wait already: then the attempt does not
// wait here (its hold stands).
func (h *LocalLease) StartHolding() bool {
	if h.Holding-h.Passing >= MaxHolding(h.Snapshot.Cap) {
		return false
	}
	h.Holding++
	return true
}

// MaxUntold is how many outcomes a gate keeps before it reports them anyway.
const MaxUntold = 64

// Worth says whether outcomes can change a decision at the endpoint workflow and so are
// worth a message: a failure (the breaker), a slow attempt (the cap), a tripped gate
// waiting to be heard, a full buffer, or a success that ends a failing spell (Snapshot.Failing:
// the endpoint counts toward being disabled). Fast successes alone are not; they go with the
// next message, so the latency window sees them whenever a slow one arrives.
func (h *LocalLease) Worth(outcomes []Outcome) bool {
	if len(outcomes) == 0 {
		return false
	}
	if h.Tripped || len(outcomes) >= MaxUntold {
		return true
	}
	for _, o := range outcomes {
		if !o.OK || (h.Snapshot.Slow > 0 && o.Latency >= h.Snapshot.Slow) || h.Snapshot.Failing {
			return true
		}
	}
	return false
}

// Stale says whether untold fast outcomes are too old to matter to the latency window
// (older than window at now): the gate may drop them with the local lease.
func Stale(outcomes []Outcome, now time.Time, window time.Duration) bool {
	return len(outcomes) == 0 || now.Sub(outcomes[0].At) > window
}
