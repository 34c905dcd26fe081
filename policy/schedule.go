package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/duration"
)

// ParseDelays parses "30s,2m,10m" style schedules (for CLI flags) into delays, with clear errors.
//
// Each item is a Go duration (see time.ParseDuration) and must be positive;
// spaces around items are allowed. The empty string is an error: a schedule
// needs at least one delay.
func ParseDelays(s string) ([]duration.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New(`delays: empty schedule; give comma-separated durations such as "30s,2m,10m"`)
	}
	items := strings.Split(s, ",")
	if len(items) > MaxAttempts-1 {
		return nil, fmt.Errorf("delays: %d waits; give at most %d (one per retry of the %d attempts allowed; the last one repeats)", len(items), MaxAttempts-1, MaxAttempts)
	}
	out := make([]duration.Duration, 0, len(items))
	for i, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("delays: item %d is empty; remove the extra comma in %q", i+1, s)
		}
		d, err := time.ParseDuration(item)
		if err != nil {
			return nil, fmt.Errorf("delays: item %d %q is not a duration; use forms like 30s, 2m, 1h30m: %w", i+1, item, err)
		}
		if d <= 0 {
			return nil, fmt.Errorf("delays: item %d is %s; every delay must be positive", i+1, d)
		}
		out = append(out, duration.Duration(d))
	}
	return out, nil
}

// FormatDelays is the inverse of ParseDelays: it writes "30s,2m,10m,1h30m", each
// delay as Duration.String writes it. An empty slice gives "".
func FormatDelays(d []duration.Duration) string {
	parts := make([]string, len(d))
	for i, v := range d {
		parts[i] = v.String()
	}
	return strings.Join(parts, ",")
}
