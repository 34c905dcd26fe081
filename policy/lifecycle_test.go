package policy

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func fail(at time.Time) Outcome    { return Outcome{At: at} }
func succeed(at time.Time) Outcome { return Outcome{At: at, OK: true} }

func TestLifecycleFailingSpell(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		name     string
		outs     []Outcome
		disable  time.Duration
		disabled bool
		since    time.Time
	}{
		{"one failure", []Outcome{fail(t0)}, 0, false, t0},
		{"failing just under 5 days", []Outcome{fail(t0), fail(t0.Add(5*day - time.Second))}, 0, false, t0},
		{"failing 5 days", []Outcome{fail(t0), fail(t0.Add(5 * day))}, 0, true, t0},
		{"a success in between starts again", []Outcome{fail(t0), succeed(t0.Add(day)), fail(t0.Add(2 * day)), fail(t0.Add(5 * day))}, 0, false, t0.Add(2 * day)},
		{"a success last ends the spell", []Outcome{fail(t0), succeed(t0.Add(day))}, 0, false, time.Time{}},
		{"own setting", []Outcome{fail(t0), fail(t0.Add(2 * time.Hour))}, 2 * time.Hour, true, t0},
		{"a 410 at once", []Outcome{{At: t0, Gone: true}}, 0, true, t0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewLimiter(DefaultLimiterConfig())
			g.Config.DisableAfter = duration.Duration(tc.disable)
			g.Record(t0, tc.outs)
			if (g.Disabled != nil) != tc.disabled || !g.FailingSince.Equal(tc.since) {
				t.Errorf("disabled %+v, failing since %s; want disabled %v, since %s", g.Disabled, g.FailingSince, tc.disabled, tc.since)
			}
			if s := g.Snapshot(t0); s.Disabled != tc.disabled || s.Failing != !tc.since.IsZero() {
				t.Errorf("snapshot disabled %v failing %v; want %v, %v", s.Disabled, s.Failing, tc.disabled, !tc.since.IsZero())
			}
		})
	}
}

func TestLifecycleDisabledSendsWaitersAway(t *testing.T) {
	g := NewLimiter(DefaultLimiterConfig())
	outs := failuresAt(t0, 5)
	for i := range outs {
		outs[i].Ticket = g.Snapshot(t0).Ticket
	}
	g.Record(t0, outs) // the circuit opens
	for _, w := range []string{"a", "b"} {
		if _, ok := g.Wait(t0, w); ok {
			t.Fatalf("waiter %s granted at an open circuit", w)
		}
	}
	g.Disable(t0, "")
	if g.Disabled.Cause != DisabledByHand || g.Disabled.Reason == "" {
		t.Errorf("disabled %+v, want by hand with a reason", g.Disabled)
	}
	if next := g.NextDeadline(t0); !next.Equal(t0) {
		t.Errorf("next deadline %s, want now: the waiters are to be sent away", next)
	}
	wakes := g.Tick(t0)
	if len(wakes) != 2 || !wakes[0].Disabled || !wakes[1].Disabled || wakes[0].Waiter != "a" || len(g.Ledger.Waiting) != 0 {
		t.Errorf("tick wakes %+v, queue %v; want a then b sent away, nobody queued", wakes, g.Ledger.Waiting)
	}
	if w, ok := g.Wait(t0, "c"); !ok || !w.Disabled || len(g.Ledger.Waiting) != 0 {
		t.Errorf("a new waiter gets %+v (%v), queue %v; want sent away at once", w, ok, g.Ledger.Waiting)
	}
	if r := g.Lease(t0, LeaseRequest{Holder: "h", Want: 10}); r.Permits != 0 {
		t.Errorf("a disabled endpoint leases %d permits, want 0", r.Permits)
	}
	g.Enable(t0.Add(time.Minute))
	if g.Disabled != nil || g.Breaker.State() != CircuitClosed || g.Snapshot(t0).Disabled {
		t.Errorf("after enable: disabled %+v, circuit %s; want enabled and closed", g.Disabled, g.Breaker.State())
	}
}

func TestLocalLeaseDisabled(t *testing.T) {
	var h LocalLease
	h.Heard(Snapshot{Circuit: CircuitClosed, Cap: 100, Free: 100, Disabled: true}, true, 10, 0)
	if h.Admit(true, false) || h.Spare != 0 {
		t.Errorf("a disabled endpoint admitted an attempt (spare %d)", h.Spare)
	}
	if k := h.Hold(); k != HoldDisabled {
		t.Errorf("hold %v, want HoldDisabled", k)
	}
	var f LocalLease
	f.Heard(Snapshot{Circuit: CircuitClosed, Cap: 100, Free: 100, Failing: true}, false, 0, 0)
	if !f.Worth([]Outcome{succeed(t0)}) {
		t.Error("a success during a failing spell is not worth telling")
	}
	f.Heard(Snapshot{Circuit: CircuitClosed, Cap: 100, Free: 100}, false, 0, 0)
	if f.Worth([]Outcome{succeed(t0)}) {
		t.Error("a fast success outside a failing spell is worth telling")
	}
}

func TestOnDisabled(t *testing.T) {
	if OnDisabled(0) != DisabledSkip || OnDisabled(1) != DisabledDeadLetter {
		t.Error("no attempt: skip; attempts made: dead letter")
	}
}

func failuresAt(at time.Time, n int) []Outcome {
	var os []Outcome
	for i := range n {
		os = append(os, fail(at.Add(-time.Duration(n-i)*time.Second)))
	}
	return os
}
