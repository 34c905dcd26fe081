package policy

import (
	"fmt"
	"time"
)

// Bounds on the waits operators and producers choose.
const (
	// MinDelay is the shortest ladder wait and the shortest probe delay: a receiver always
	// gets at least a second between a failure and the next request.
	MinDelay = time.Second
	// MinRetention is the shortest time a dead letter waits for a replay: long enough for a
	// human to notice.
	MinRetention = time.Hour
	// MaxAhead is the longest rotation grace and the furthest a replay may be scheduled.
	MaxAhead = 30 * 24 * time.Hour
)

// ValidateRetention checks how long dead letters wait for a replay.
func ValidateRetention(d time.Duration) error {
	if d < MinRetention {
		return fmt.Errorf("retention %s is under %s: dead letters must wait at least an hour for a replay", d, MinRetention)
	}
	return nil
}

// ValidateGrace checks how long a rotated-out secret keeps signing: 0 (not at all) to MaxAhead.
func ValidateGrace(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("rotation grace %s is negative: use 0 to stop the old secret at once, or a duration such as 24h", d)
	case d > MaxAhead:
		return fmt.Errorf("rotation grace %s is over 30 days (%s): use at most %s", d, MaxAhead, MaxAhead)
	}
	return nil
}

// ValidateReplayAt checks when a scheduled replay goes: at most MaxAhead after now (a time
// in the past means at once).
func ValidateReplayAt(at, now time.Time) error {
	if !at.IsZero() && at.Sub(now) > MaxAhead {
		return fmt.Errorf("replay time %s is %s away: a replay may be scheduled at most 30 days (%s) ahead",
			at.UTC().Format(time.RFC3339), at.Sub(now).Round(time.Second), MaxAhead)
	}
	return nil
}
