package policy

// Holding is a worker's lease of permits at one endpoint, as the worker's gate sees it:
// the decisions of the fast path (admit, how many permits to ask for, when to stop at
// once, when to renew), with no clock reading and no I/O; the gate supplies both. It is
// not safe for concurrent use: the gate locks around it.
type Holding struct {
	// Known is set once a lease request has been answered.
	Known bool
	// Permits is the lease; InUse the attempts running under it.
	Permits, InUse int
	// Peak is the most attempts in use since the last renewal; Used says whether any was
	// admitted since then.
	Peak int
	Used bool
	// Circuit and Ticket are the endpoint's as of the last renewal.
	Circuit CircuitState
	Ticket  Ticket
	// Limit is how many consecutive failures stop admission at once (the breaker's
	// trigger); Streak counts the current run.
	Limit, Streak int
	// Tripped is set when Streak reached Limit, until the endpoint workflow has seen the
	// tripping failure (TripSeq) and still says closed.
	Tripped bool
	// Seq counts the outcomes reported under the lease; TripSeq is Seq at the trip.
	Seq, TripSeq int
	// Failures counts failed attempts: the next failure's place in Spread.
	Failures uint64
	// Renewing is set while a renewal is in flight; Flight then bounds admissions, since
	// the renewal may shrink the lease to what it asked for.
	Renewing bool
	Flight   int
}

// Admit takes a permit for one attempt if the lease allows it: known, closed, not tripped,
// a permit free, and the admission window open (open, from the gate's clock).
func (h *Holding) Admit(open, stopping bool) bool {
	limit := h.Permits
	if h.Renewing {
		limit = min(limit, h.Flight)
	}
	if !h.Known || h.Tripped || stopping || h.Circuit != CircuitClosed || h.InUse >= limit || !open {
		return false
	}
	h.InUse++
	h.Peak = max(h.Peak, h.InUse)
	h.Used = true
	return true
}

// Finish records an attempt's outcome. leased is true for an attempt admitted under the
// lease (its permit comes back here); false for one that ran on a permit of its own. It
// returns a failed attempt's place in the retry window (Spread) and whether this failure
// trips the gate: stop admitting and tell the endpoint workflow now.
func (h *Holding) Finish(ok, leased bool) (spread float64, failed, trip bool) {
	if leased {
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
	if !h.Tripped && h.Limit > 0 && h.Streak >= h.Limit {
		h.Tripped, h.TripSeq, trip = true, h.Seq, true
	}
	return spread, failed, trip
}

// Release returns the permit of a leased attempt that never got an answer.
func (h *Holding) Release() { h.InUse-- }

// Want is how many permits to ask for: what runs, and while the endpoint is busy (or
// attempts wait for a permit) room to grow to twice the peak. The endpoint workflow grants
// only what the cap leaves free, and nothing more while others wait.
func (h *Holding) Want(waiting int, stopping bool) int {
	if (h.Used || waiting > 0) && !stopping {
		return max(h.InUse+waiting, 2*h.Peak)
	}
	return h.InUse
}

// StartRenewal marks a renewal asking for want permits as in flight and returns the
// outcome count it carries.
func (h *Holding) StartRenewal(want int) (sentSeq int) {
	h.Renewing, h.Flight = true, min(h.Permits, want)
	h.Peak, h.Used = h.InUse, false
	return h.Seq
}

// Renewed takes the endpoint workflow's answer to the renewal that carried sentSeq
// outcomes. A tripped gate goes on once the endpoint workflow has seen the tripping
// failure (or the circuit has closed since) and says closed.
func (h *Holding) Renewed(permits int, t Ticket, c CircuitState, limit, sentSeq int) {
	wasOpen := h.Circuit != CircuitClosed
	h.Known, h.Renewing = true, false
	h.Permits, h.Ticket, h.Circuit, h.Limit = permits, t, c, limit
	if c == CircuitClosed && (wasOpen || (h.Tripped && sentSeq >= h.TripSeq)) {
		h.Tripped, h.Streak = false, 0
	}
}

// RenewFailed ends a renewal that got no answer.
func (h *Holding) RenewFailed() { h.Renewing = false }

// Background says what the gate's periodic pass should do: renew (there are outcomes to
// report, a busy lease whose admission window is closing, or permits to give back), or
// drop the holding (nothing held, nothing running, nothing to report).
func (h *Holding) Background(pending, closing, stopping bool) (renew, drop bool) {
	if h.Renewing {
		return false, false
	}
	idle := h.InUse == 0 && !h.Used
	renew = pending || (h.Used && closing) || (h.Permits > 0 && (idle || stopping))
	drop = !pending && idle && h.Permits == 0
	return renew, drop
}
