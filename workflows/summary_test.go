package workflows

import (
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

func TestWaitSummary(t *testing.T) {
	probe := time.Date(2026, 3, 2, 12, 8, 0, 0, time.UTC)
	for _, tt := range []struct {
		hold herald.Hold
		want string
	}{
		{herald.Hold{Reason: "circuit open after 5 consecutive failures", RetryAt: probe, Circuit: policy.CircuitOpen, Queued: true, Position: 3},
			"waiting: circuit open after 5 consecutive failures, probe at 12:08:00Z (behind 2 or more)"},
		// The probe time comes from the circuit's state, not from the words of the reason.
		{herald.Hold{Reason: "2 consecutive failures at this worker: the circuit breaker decides; the queue is full", RetryAt: probe, Circuit: policy.CircuitOpen},
			"waiting: 2 consecutive failures at this worker: the circuit breaker decides; the queue is full, probe at 12:08:00Z"},
		{herald.Hold{Reason: "circuit open in a reason only", RetryAt: probe, Circuit: policy.CircuitClosed},
			"waiting: circuit open in a reason only"},
		{herald.Hold{Reason: "endpoint at its concurrency cap of 4", Queued: true, Position: 1, Circuit: policy.CircuitClosed},
			"waiting: endpoint at its concurrency cap of 4"},
	} {
		if got := waitSummary(&tt.hold); got != tt.want {
			t.Errorf("waitSummary(%+v) = %q, want %q", tt.hold, got, tt.want)
		}
	}
}

func TestRetryReason(t *testing.T) {
	l := policy.DefaultLadder()
	ra := policy.RetryAfter{Raw: "120", Action: policy.RetryAfterHonoured}
	if got := retryReason(policy.NextAttempt{Source: policy.SourceRetryAfter}, ra, l); got != "Retry-After 120 honoured" {
		t.Errorf("retry-after reason = %q", got)
	}
	if got := retryReason(policy.NextAttempt{Source: policy.SourceLadder, BaseDelay: duration.Duration(time.Minute)}, ra, l); got != "ladder 1m ±20%" {
		t.Errorf("ladder reason = %q", got)
	}
}
