package policy

import (
	"fmt"
	"time"
)

// Scheduled sends: a producer may ask for an event to be delivered later (deliver_at).
// The delivery starts at once, durable, and waits on a timer before its first attempt.

// Bounds of a scheduled send.
const (
	// MaxScheduleAhead is the furthest ahead a send may be scheduled: 90 days, as long as
	// the longest disable-after, so that a scheduled delivery never outlives the
	// retention of what a person would look for.
	MaxScheduleAhead = 90 * 24 * time.Hour
	// ScheduleSkew is how far in the past a deliver_at may be and still be taken as "now":
	// the producer's clock and Herald's may differ by this much.
	ScheduleSkew = time.Minute
)

// CheckDeliverAt checks a send's deliver_at against now and returns when the first
// attempt goes: the zero time for at once (no deliver_at, or one up to ScheduleSkew in
// the past), else at itself. A time further in the past, or more than MaxScheduleAhead
// ahead, is an error that says which bound it broke.
func CheckDeliverAt(at, now time.Time) (time.Time, error) {
	switch {
	case at.IsZero():
		return time.Time{}, nil
	case at.Before(now.Add(-ScheduleSkew)):
		return time.Time{}, fmt.Errorf("deliver_at %s is %s in the past (now %s): give a future time, or leave it out to deliver at once",
			at.UTC().Format(time.RFC3339), now.Sub(at).Round(time.Second), now.UTC().Format(time.RFC3339))
	case at.After(now.Add(MaxScheduleAhead)):
		return time.Time{}, fmt.Errorf("deliver_at %s is more than %d days ahead (now %s): schedule at most %d days ahead",
			at.UTC().Format(time.RFC3339), int(MaxScheduleAhead/(24*time.Hour)), now.UTC().Format(time.RFC3339), int(MaxScheduleAhead/(24*time.Hour)))
	case !at.After(now):
		return time.Time{}, nil
	}
	return at, nil
}

// ScheduledWait is how long a delivery scheduled for at waits at now before its first
// attempt: zero when at is zero or due.
func ScheduledWait(at, now time.Time) time.Duration {
	if at.IsZero() || !at.After(now) {
		return 0
	}
	return at.Sub(now)
}
