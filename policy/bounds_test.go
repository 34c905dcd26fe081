package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

func TestBounds(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		err  error
		want string // substring of the error; empty for valid
	}{
		{"retention 1h", ValidateRetention(time.Hour), ""},
		{"retention 30 days", ValidateRetention(720 * time.Hour), ""},
		{"retention 59m", ValidateRetention(59 * time.Minute), "under 1h"},
		{"retention 0", ValidateRetention(0), "retention 0s is under"},
		{"grace 0", ValidateGrace(0), ""},
		{"grace 30 days", ValidateGrace(MaxAhead), ""},
		{"grace over 30 days", ValidateGrace(MaxAhead + time.Second), "over 30 days"},
		{"grace negative", ValidateGrace(-time.Second), "negative"},
		{"replay now", ValidateReplayAt(time.Time{}, now), ""},
		{"replay in the past", ValidateReplayAt(now.Add(-time.Hour), now), ""},
		{"replay in 30 days", ValidateReplayAt(now.Add(MaxAhead), now), ""},
		{"replay in 31 days", ValidateReplayAt(now.Add(MaxAhead+24*time.Hour), now), "at most 30 days"},
		{"ladder delay 1s", Ladder{Delays: duration.Of(time.Second), Attempts: 2}.Validate(), ""},
		{"ladder delay 999ms", Ladder{Delays: duration.Of(time.Second, 999*time.Millisecond), Attempts: 3}.Validate(), "delay 2 is 999ms; the shortest allowed is 1s"},
		{"probe delay 1s", BreakerConfig{ConsecutiveFailures: 1, ConsecutiveWindow: duration.Duration(time.Minute), VolumeFailures: 1, VolumeWindow: duration.Duration(time.Minute),
			ProbeDelay: duration.Duration(time.Second), MaxProbeDelay: duration.Duration(time.Second), ProbeTimeout: duration.Duration(time.Minute)}.Validate(), ""},
		{"probe delay 500ms", BreakerConfig{ConsecutiveFailures: 1, ConsecutiveWindow: duration.Duration(time.Minute), VolumeFailures: 1, VolumeWindow: duration.Duration(time.Minute),
			ProbeDelay: duration.Duration(500 * time.Millisecond), MaxProbeDelay: duration.Duration(time.Second), ProbeTimeout: duration.Duration(time.Minute)}.Validate(), "probe delay 500ms is under 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switch {
			case tt.want == "" && tt.err != nil:
				t.Fatalf("error %v, want none", tt.err)
			case tt.want != "" && (tt.err == nil || !strings.Contains(tt.err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", tt.err, tt.want)
			}
		})
	}
}
