package policy

import (
	"fmt"
	"testing"
	"time"
)

// TestOverflowNudges: a limiter whose queue was full nudges the deliveries turned away once
// the queue is half empty, as many as it has room for, at most every NudgeEvery, and stops
// once a nudge that began NudgeSettle after the queue was last full found fewer than asked.
func TestOverflowNudges(t *testing.T) {
	c := DefaultLimiterConfig()
	c.MaxQueue = 10
	g := NewLimiter(c)
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		g.Ledger.Enqueue(fmt.Sprintf("w%d", i))
	}
	if g.NudgeDue(now) != 0 {
		t.Fatal("a nudge due before the queue was ever seen full")
	}
	g.NoteFull(now)
	if g.NudgeDue(now) != 0 || !g.Overflow.FullAt.Equal(now) {
		t.Fatalf("full queue: due %d, full at %s; want none due, full now", g.NudgeDue(now), g.Overflow.FullAt)
	}
	if !g.Holds("w3") || g.Holds("nobody") {
		t.Error("Holds: want w3 held, nobody not")
	}
	for i := range 4 {
		g.Ledger.Remove(fmt.Sprintf("w%d", i))
	}
	now = now.Add(time.Second)
	g.NoteFull(now) // not full: keeps when it last was
	if n := g.NudgeDue(now); n != 0 {
		t.Errorf("6 of 10 queued: %d due, want none (more than half full)", n)
	}
	g.Ledger.Remove("w4")
	if n := g.NudgeDue(now); n != 5 {
		t.Fatalf("5 of 10 queued: %d due, want 5 (the room)", n)
	}
	// A nudge that found all it asked: another may come, NudgeEvery later.
	g.Nudged(now.Add(time.Second), now, 5, 5, true)
	if g.NudgeDue(now.Add(5*time.Second)) != 0 || g.NudgeDue(now.Add(NudgeEvery+time.Second)) != 5 {
		t.Error("after a nudge: want none within NudgeEvery and 5 after")
	}
	if d := g.NextDeadline(now.Add(2 * time.Second)); !d.Equal(now.Add(time.Second + NudgeEvery)) {
		t.Errorf("next deadline %s, want the next nudge's time", d)
	}
	// Found fewer than asked, but too soon after the queue was full: a gate's stale
	// snapshot may still turn one away, so the overflow stays.
	g.Nudged(now.Add(12*time.Second), now.Add(11*time.Second), 5, 2, true)
	if g.Overflow.FullAt.IsZero() {
		t.Fatal("overflow forgotten by a nudge that began within NudgeSettle of the full queue")
	}
	// A failed nudge does not end it either.
	later := g.Overflow.FullAt.Add(NudgeSettle + time.Second)
	g.Nudged(later, later, 5, 0, false)
	if g.Overflow.FullAt.IsZero() {
		t.Fatal("overflow forgotten by a failed nudge")
	}
	g.Nudged(later.Add(NudgeEvery), later.Add(NudgeEvery), 5, 2, true)
	if !g.Overflow.FullAt.IsZero() || g.NudgeDue(later.Add(time.Hour)) != 0 || !g.nudgeDeadline(later).IsZero() {
		t.Errorf("overflow %+v after a settled nudge found fewer than asked: want it forgotten", g.Overflow)
	}
	// Disabled endpoints nudge nobody.
	g.NoteFull(later) // not full now: stays forgotten
	for i := range 10 {
		g.Ledger.Enqueue(fmt.Sprintf("v%d", i))
	}
	g.NoteFull(later)
	for i := range 10 {
		g.Ledger.Remove(fmt.Sprintf("v%d", i))
	}
	g.Disabled = &Disablement{}
	if g.NudgeDue(later.Add(time.Hour)) != 0 {
		t.Error("a disabled endpoint nudges")
	}
}
