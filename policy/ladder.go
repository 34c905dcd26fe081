package policy

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/heraldhq/herald/duration"
)

// Limits on a Ladder, enforced by [Ladder.Validate].
const (
	// MaxAttempts is the most attempts a ladder may make for one event.
	MaxAttempts = 100
	// MaxDelay is the longest single delay a ladder may hold. It keeps a
	// ladder within the dead-letter retention window and its sums far from
	// overflow.
	MaxDelay = 30 * 24 * time.Hour
)

// Sources of a [NextAttempt] delay.
const (
	// SourceLadder means the delay came from the ladder (with jitter).
	SourceLadder = "ladder"
	// SourceRetryAfter means the delay came from the receiver's Retry-After.
	SourceRetryAfter = "retry_after"
)

// Ladder is a retry schedule: how many attempts and how long to wait between them.
//
// The first attempt goes at once; Delays[i] is the wait before attempt i+2.
// When Attempts exceeds len(Delays)+1 the last delay repeats; when it is
// smaller the unused delays are cut.
type Ladder struct {
	Delays   []duration.Duration `json:"delays"`   // wait before attempt 2, 3, ...
	Attempts int                 `json:"attempts"` // total attempts including the first
	Jitter   float64             `json:"jitter"`   // fraction, 0.2 = ±20%; 0 = none; must be in [0, 1)
}

// DefaultLadder returns Herald's default ladder: 8 attempts, the first at
// once, then after 30s, 2m, 10m, 30m, 1h, 3h and 8h (12h42m30s in all), each
// delay jittered by ±20%.
func DefaultLadder() Ladder {
	return Ladder{
		Delays: duration.Of(
			30*time.Second,
			2*time.Minute,
			10*time.Minute,
			30*time.Minute,
			1*time.Hour,
			3*time.Hour,
			8*time.Hour,
		),
		Attempts: 8,
		Jitter:   0.2,
	}
}

// Validate reports every problem with the ladder, joined, or nil when it is
// usable: Attempts in [1, MaxAttempts], each delay in [MinDelay, MaxDelay], at least
// one delay when Attempts > 1, and Jitter in [0, 1).
func (l Ladder) Validate() error {
	var errs []error
	if l.Attempts < 1 || l.Attempts > MaxAttempts {
		errs = append(errs, fmt.Errorf("ladder: attempts is %d; set it between 1 and %d (it counts the first attempt)", l.Attempts, MaxAttempts))
	}
	if l.Attempts > 1 && len(l.Delays) == 0 {
		errs = append(errs, fmt.Errorf("ladder: %d attempts but no delays; give at least one delay (the last one repeats)", l.Attempts))
	}
	for i, d := range l.Delays {
		switch {
		case d <= 0:
			errs = append(errs, fmt.Errorf("ladder: delay %d is %s; every delay must be positive", i+1, d))
		case d.Std() < MinDelay:
			errs = append(errs, fmt.Errorf("ladder: delay %d is %s; the shortest allowed is %s", i+1, d, MinDelay))
		case d.Std() > MaxDelay:
			errs = append(errs, fmt.Errorf("ladder: delay %d is %s; the longest allowed is %s", i+1, d, MaxDelay))
		}
	}
	if !(l.Jitter >= 0 && l.Jitter < 1) { // also rejects NaN
		errs = append(errs, fmt.Errorf("ladder: jitter %v is out of range; use a fraction in [0, 1), e.g. 0.2 for ±20%%, or 0 for none", l.Jitter))
	}
	return errors.Join(errs...)
}

// BaseDelay returns the ladder's un-jittered delay after failed attempt
// number failed (1-based), and false when no attempts remain. A failed below
// 1 counts as 1. A ladder without delays never retries; it does not panic.
func (l Ladder) BaseDelay(failed int) (time.Duration, bool) {
	if failed < 1 {
		failed = 1
	}
	if failed >= l.Attempts || len(l.Delays) == 0 {
		return 0, false
	}
	i := min(failed-1, len(l.Delays)-1)
	return l.Delays[i].Std(), true
}

// LadderOverride changes some fields of a Ladder, for per-endpoint
// configuration. A nil Delays, zero Attempts or nil Jitter keeps the base
// ladder's value.
type LadderOverride struct {
	Delays   []duration.Duration `json:"delays,omitempty"`   // replaces the schedule when non-nil
	Attempts int                 `json:"attempts,omitempty"` // replaces the attempt count when non-zero
	Jitter   *float64            `json:"jitter,omitempty"`   // replaces the jitter when non-nil; 0 turns it off
}

// Apply returns l with the override's fields in place. The result shares no
// slice with l or o. Validate the result; Apply does not.
func (l Ladder) Apply(o LadderOverride) Ladder {
	out := Ladder{Delays: l.Delays, Attempts: l.Attempts, Jitter: l.Jitter}
	if o.Delays != nil {
		out.Delays = o.Delays
	}
	if o.Attempts != 0 {
		out.Attempts = o.Attempts
	}
	if o.Jitter != nil {
		out.Jitter = *o.Jitter
	}
	out.Delays = append([]duration.Duration(nil), out.Delays...)
	return out
}

// JitterKey returns the jitter key for one retry of one event:
// "<eventID>/<round>/<failed>", where round counts replays of the event from
// the dead-letter queue (0 for the original delivery) and failed is the
// attempt number that failed. Distinct events, rounds and attempts get
// distinct keys, so their jitter differs; the same inputs always give the
// same key, so workflow replay is stable.
func JitterKey(eventID string, round, failed int) string {
	return eventID + "/" + strconv.Itoa(round) + "/" + strconv.Itoa(failed)
}

// unitFraction maps key to a fraction in [0, 1), uniform over keys. It uses
// the first 53 bits of the key's SHA-256, so it is the same on every
// platform and Go version.
func unitFraction(key string) float64 {
	sum := sha256.Sum256([]byte(key))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}

// scaleDuration returns base multiplied by f, saturating at the largest Duration.
func scaleDuration(base time.Duration, f float64) time.Duration {
	d := float64(base) * f
	if d >= math.MaxInt64 { // float64(math.MaxInt64) is 2^63
		return math.MaxInt64
	}
	return time.Duration(d)
}

// NextAttempt is the decision after a failed attempt.
type NextAttempt struct {
	Retry     bool              `json:"retry"`                // false: the ladder is exhausted → dead letter
	Delay     duration.Duration `json:"delay,omitempty"`      // wait before the next attempt
	BaseDelay duration.Duration `json:"base_delay,omitempty"` // the ladder's un-jittered delay
	Source    string            `json:"source,omitempty"`     // "ladder" or "retry_after"
}

// Next decides what follows failed attempt number failed (1-based), given the Retry-After decision and a jitter key.
//
//   - Ladder exhausted: Retry is false whatever the Retry-After says; a
//     Retry-After never adds attempts.
//   - Retry-After honoured or capped: its Delay replaces the ladder's, even
//     when shorter, as the receiver asked. Jitter goes upward only: the wait
//     is in [ra.Delay, ra.Delay×(1+l.Jitter)], never earlier than asked, and
//     receivers that all answered "Retry-After: 60" at the same second are
//     not all retried at the same second. "Retry-After: 0" retries at once.
//   - Otherwise (none or ignored): the ladder's delay, jittered by ±l.Jitter.
//
// The same inputs always give the same decision.
func Next(l Ladder, failed int, ra RetryAfter, jitterKey string) NextAttempt {
	return NextAt(l, failed, ra, unitFraction(jitterKey))
}

// NextAt is Next with the place in the jitter window given: u in [0, 1) picks the delay
// from the window's start (u = 0: base×(1-j)) to its end (u → 1: base×(1+j)); for an
// honoured or capped Retry-After, from the asked delay up to it×(1+j). Next takes u from a
// hash of the event; a worker's gate takes it from Spread, so that the retries of
// attempts that failed together spread evenly instead of at random.
func NextAt(l Ladder, failed int, ra RetryAfter, u float64) NextAttempt {
	base, ok := l.BaseDelay(failed)
	if !ok {
		return NextAttempt{Retry: false, Source: SourceLadder}
	}
	u = min(max(u, 0), 1)
	j := 0.0
	if l.Jitter > 0 {
		j = min(l.Jitter, 1)
	}
	if (ra.Action == RetryAfterHonoured || ra.Action == RetryAfterCapped) && ra.Delay >= 0 {
		return NextAttempt{
			Retry:     true,
			Delay:     duration.Duration(max(ra.Delay.Std(), scaleDuration(ra.Delay.Std(), 1+j*u))),
			BaseDelay: duration.Duration(base),
			Source:    SourceRetryAfter,
		}
	}
	d := base
	if base > 0 && j > 0 {
		d = scaleDuration(base, 1-j+2*j*u)
	}
	return NextAttempt{Retry: true, Delay: duration.Duration(d), BaseDelay: duration.Duration(base), Source: SourceLadder}
}

// Spread returns the k-th place (k = 0, 1, 2, ...) of a sequence that fills [0, 1)
// evenly: 0, 1/2, 1/4, 3/4, 1/8, 5/8, ... (the base-2 van der Corput sequence). Any run of
// consecutive places is spread almost evenly, so n retries given places k..k+n-1 land about
// one per n-th of the jitter window, where n independent random places would bunch up.
func Spread(k uint64) float64 {
	f, scale := 0.0, 0.5
	for ; k > 0; k >>= 1 {
		if k&1 == 1 {
			f += scale
		}
		scale /= 2
	}
	return f
}
