package policy

import (
	"fmt"
	"time"

	"github.com/heraldhq/herald/duration"
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
	// MaxRetention is the longest time a dead letter waits for a replay.
	MaxRetention = 365 * 24 * time.Hour
	// MaxWindow is the longest window the breaker counts failures in, and the longest
	// latency window and change interval of the adaptive cap.
	MaxWindow = 24 * time.Hour
	// MaxProbeWait is the longest probe delay of an open circuit (and its maximum).
	MaxProbeWait = 7 * 24 * time.Hour
	// MaxProbeTimeout is the longest a probe may go without an outcome before its slot is
	// released.
	MaxProbeTimeout = time.Hour
	// MaxLatency is the highest p99 latency the adaptive cap may be told to react to.
	MaxLatency = 10 * time.Minute
)

// ValidateAtMost checks that setting (named as the API names it, e.g. "probe_timeout") is
// at most limit.
func ValidateAtMost(setting string, d, limit time.Duration) error {
	if d > limit {
		return fmt.Errorf("%s %s is over the limit of %s: use at most %s", setting, duration.Duration(d), duration.Duration(limit), duration.Duration(limit))
	}
	return nil
}

// ValidateRetention checks how long dead letters wait for a replay.
func ValidateRetention(d time.Duration) error {
	if d < MinRetention {
		return fmt.Errorf("retention %s is under %s: dead letters must wait at least an hour for a replay", d, MinRetention)
	}
	return ValidateAtMost("retention", d, MaxRetention)
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

// The upper bounds of the settings an endpoint put may give. They are checked where a put
// is refused (herald.Overrides.ValidateChange), not where stored settings are applied, so
// that an endpoint stored before a bound existed keeps working.

// CheckBounds checks the upper bounds of the durations the override sets.
func (o BreakerOverride) CheckBounds() error {
	return firstError(
		ValidateAtMost("consecutive_window", o.ConsecutiveWindow.Std(), MaxWindow),
		ValidateAtMost("volume_window", o.VolumeWindow.Std(), MaxWindow),
		ValidateAtMost("probe_delay", o.ProbeDelay.Std(), MaxProbeWait),
		ValidateAtMost("max_probe_delay", o.MaxProbeDelay.Std(), MaxProbeWait),
		ValidateAtMost("probe_timeout", o.ProbeTimeout.Std(), MaxProbeTimeout),
	)
}

// CheckBounds checks the length of the schedule the override sets: at most one delay per
// retry (MaxAttempts-1).
func (o LadderOverride) CheckBounds() error {
	if n := len(o.Delays); n > MaxAttempts-1 {
		return fmt.Errorf("ladder: delays lists %d waits: use at most %d (one per retry of the %d attempts allowed; the last one repeats)", n, MaxAttempts-1, MaxAttempts)
	}
	return nil
}

// CheckBounds checks the upper bounds of the rules: neither over MaxDelay.
func (r RetryAfterRules) CheckBounds() error {
	return firstError(
		ValidateAtMost("honour_below", r.HonourBelow.Std(), MaxDelay),
		ValidateAtMost("ignore_above", r.IgnoreAbove.Std(), MaxDelay),
	)
}

// CheckBounds checks the upper bounds of the durations of the cap's settings (its counts
// are bounded by Validate).
func (c CapacityConfig) CheckBounds() error {
	return firstError(
		ValidateAtMost("slow_p99", c.SlowP99.Std(), MaxLatency),
		ValidateAtMost("recover_p99", c.RecoverP99.Std(), MaxLatency),
		ValidateAtMost("window", c.Window.Std(), MaxWindow),
		ValidateAtMost("min_change_interval", c.MinChangeInterval.Std(), MaxWindow),
	)
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
