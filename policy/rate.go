package policy

import (
	"fmt"
	"time"
)

// Rate limits of an endpoint, in requests per second.
const (
	// MaxRateLimit is the highest rate limit an endpoint may ask for. Every attempt to a
	// rate-limited endpoint is granted by its endpoint workflow (a few history events each),
	// so the limit is for receivers that ask to be spared, not for throughput.
	MaxRateLimit = 1000
	// RateWindow is the length of a rate window: a limit of N allows N requests to start
	// per aligned window (a second of the Unix clock: 12:00:00.000 to 12:00:00.999…).
	RateWindow = time.Second
	// RateSendMargin: a request starts in the first RateWindow-RateSendMargin of its window,
	// never in the last RateSendMargin, so that it still arrives within the same second at
	// a receiver whose clock agrees with the sender's, if it takes less than the margin to
	// get there.
	RateSendMargin = 100 * time.Millisecond
	// RateLateGrant: no grant is made in the last RateLateGrant of a window, where it would
	// likely reach its delivery too late to be used; the waiter is granted at the start of
	// the next window instead.
	RateLateGrant = 400 * time.Millisecond
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

// RateCount counts the requests granted in the current rate window. It is a value that
// round-trips through encoding/json (continue-as-new); change it only through its methods.
type RateCount struct {
	// Window is the start of the window counted; Granted how many requests it was given.
	Window  time.Time `json:"window,omitzero"`
	Granted int       `json:"granted,omitempty"`
}

// Open reports whether a request may be granted at now under limit requests per second
// (0: no limit): the window has room, and is not in its last RateLateGrant.
func (r RateCount) Open(now time.Time, limit int) bool {
	if limit <= 0 {
		return true
	}
	w := WindowOf(now)
	if now.Sub(w) >= RateWindow-RateLateGrant {
		return false
	}
	return !w.Equal(r.Window) || r.Granted < limit
}

// Take counts one request granted at now and returns the window it is for. Call it only
// when Open says so.
func (r *RateCount) Take(now time.Time) time.Time {
	w := WindowOf(now)
	if !w.Equal(r.Window) {
		r.Window, r.Granted = w, 0
	}
	r.Granted++
	return w
}

// NextOpen returns when a request may next be granted, for a limiter that may not grant one
// at now: the start of the next window.
func (r RateCount) NextOpen(now time.Time) time.Time { return WindowOf(now).Add(RateWindow) }
