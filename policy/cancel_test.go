package policy

import (
	"strings"
	"testing"
	"time"
)

func TestOnCancel(t *testing.T) {
	for p, want := range map[Phase]CancelAction{
		PhaseScheduled: CancelNow, PhaseWaitingRetry: CancelNow, PhaseWaitingEndpoint: CancelNow, PhaseDeadLetter: CancelNow,
		PhaseInFlight: CancelAfterAttempt, PhaseDelivered: CancelRefused, PhaseEnded: CancelRefused, 0: CancelRefused,
	} {
		if got := OnCancel(p); got != want {
			t.Errorf("OnCancel(%d) = %d, want %d", p, got, want)
		}
	}
}

func TestCheckDeliverAt(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		at   time.Time
		want time.Time
		err  string
	}{
		{"none", time.Time{}, time.Time{}, ""},
		{"in ten minutes", now.Add(10 * time.Minute), now.Add(10 * time.Minute), ""},
		{"within the skew", now.Add(-30 * time.Second), time.Time{}, ""},
		{"now", now, time.Time{}, ""},
		{"past the skew", now.Add(-2 * time.Minute), time.Time{}, "2m0s in the past"},
		{"90 days", now.Add(MaxScheduleAhead), now.Add(MaxScheduleAhead), ""},
		{"past 90 days", now.Add(MaxScheduleAhead + time.Second), time.Time{}, "at most 90 days ahead"},
	} {
		got, err := CheckDeliverAt(tc.at, now)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
		if !got.Equal(tc.want) {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if ScheduledWait(now.Add(time.Hour), now) != time.Hour || ScheduledWait(now, now) != 0 || ScheduledWait(time.Time{}, now) != 0 {
		t.Error("ScheduledWait")
	}
}
