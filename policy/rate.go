package policy

import (
	"fmt"
	"time"
)

// Rate limits of an endpoint, in requests per second.
const (
	// MaxRateLimit is the highest rate limit an endpoint may ask for. The workers' gates
	// admit a rate-limited endpoint's attempts against budgets leased with their renewals
	// (RateLedger), so what the limit costs the endpoint workflow does not grow with it;
	// what bounds it is the cap: N requests a second of a receiver answering in L take
	// N × L permits, and MaxMaxInFlight (500) permits carry 10,000/s at 50 ms. Past that the
	// cap, not the limit, is what holds an endpoint back. An endpoint gets min(its limit,
	// what the engine carries: about 200 deliveries/s on 2 cores, more on a cluster).
	MaxRateLimit = 10000
	// RateWindow is the length of a rate window: a limit of N allows N requests to start
	// per aligned window (a second of the Unix clock: 12:00:00.000 to 12:00:00.999…).
	RateWindow = time.Second
	// RateSendMargin: a request starts in the first RateWindow-RateSendMargin of its window,
	// never in the last RateSendMargin, so that it still arrives within the same second at
	// a receiver whose clock agrees with the sender's, if it takes less than the margin to
	// get there.
	RateSendMargin = 100 * time.Millisecond
	// RateAhead: from this far into a window on, grants are for the next window, whose
	// requests wait in their worker (at most RateWindow-RateAhead) for it to begin. A grant
	// made later in a window would often reach its delivery after the window's send
	// margin; and the endpoint workflow's timers, which may fire late, never leave the
	// queue stuck in the part of a window where nothing may be granted.
	RateAhead = 500 * time.Millisecond
)

// ValidateRateLimit checks a rate limit in requests per second: 0 (none) or 1..MaxRateLimit.
func ValidateRateLimit(n int) error {
	if n < 0 || n > MaxRateLimit {
		return fmt.Errorf("rate limit %d is outside 1..%d requests per second (0 means no rate limit)", n, MaxRateLimit)
	}
	return nil
}

// WindowOf returns the start of the aligned rate window holding t.
func WindowOf(t time.Time) time.Time { return t.Truncate(RateWindow) }

// InWindow reports whether a request may start at t under a grant for the rate window that
// starts at window: t is in the window, before its last RateSendMargin. A gate sends a
// request under a grant only when the request's own timestamp (the one it signs) is.
func InWindow(window, t time.Time) bool {
	return !t.Before(window) && t.Before(window.Add(RateWindow-RateSendMargin))
}

// RateCount counts the requests granted for the rate window grants are for now (Target).
// It is a value that round-trips through encoding/json (continue-as-new); change it only
// through its methods.
type RateCount struct {
	// Window is the start of the window counted; Granted how many requests it was given.
	Window  time.Time `json:"window,omitzero"`
	Granted int       `json:"granted,omitempty"`
}

// Target is the window a grant made at now is for: the current one until RateAhead into
// it, the next one after. It never goes back as now goes on.
func Target(now time.Time) time.Time {
	w := WindowOf(now)
	if now.Sub(w) >= RateAhead {
		w = w.Add(RateWindow)
	}
	return w
}

// Open reports whether a request may be granted at now under limit requests per second
// (0: no limit): the target window (Target) has room.
func (r RateCount) Open(now time.Time, limit int) bool {
	return limit <= 0 || !Target(now).Equal(r.Window) || r.Granted < limit
}

// Take counts one request granted at now and returns the window it is for. Call it only
// when Open says so.
func (r *RateCount) Take(now time.Time) time.Time {
	w := Target(now)
	if !w.Equal(r.Window) {
		r.Window, r.Granted = w, 0
	}
	r.Granted++
	return w
}

// NextOpen returns when a request may next be granted, for a limiter that may not grant one
// at now: when the target moves on to the next window.
func NextOpen(now time.Time) time.Time { return Target(now).Add(RateAhead) }
