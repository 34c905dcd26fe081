package starter

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// A delivery that is not a dead letter is described by what it waits for, never by a
// zero time (0001-01-01).
func TestStillRunningNeverPrintsAZeroTime(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		st   herald.Status
		want string
	}{
		{herald.Status{NextAttemptAt: at}, "next attempt at 2026-11-30T12:00:00Z"},
		{herald.Status{Waiting: &herald.Waiting{Hold: herald.Hold{Reason: "the circuit is open"}}}, "held: the circuit is open"},
		{herald.Status{}, "its ladder is still running"},
	} {
		got := stillRunning(tc.st)
		if !strings.Contains(got, tc.want) || strings.Contains(got, "0001") {
			t.Errorf("stillRunning(%+v) = %q, want it to say %q", tc.st, got, tc.want)
		}
	}
}
