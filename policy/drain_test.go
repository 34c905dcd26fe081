package policy

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// drainLimiter is a closed limiter with cap capN, every permit leased to holder "busy", and
// n waiters queued behind it (w00, w01, ...).
func drainLimiter(t *testing.T, capN, n int) (*Limiter, time.Time) {
	t.Helper()
	c := DefaultLimiterConfig()
	c.Capacity.MaxInFlight = capN
	g := NewLimiter(c)
	now := limiterEpoch
	if r := g.Lease(now, LeaseRequest{Holder: "busy", InUse: capN, Want: capN}); r.Permits != capN {
		t.Fatalf("lease: %d permits, want %d", r.Permits, capN)
	}
	for i := range n {
		if _, ok := g.Wait(now, fmt.Sprintf("w%02d", i)); ok {
			t.Fatalf("waiter %d granted with the cap full", i)
		}
	}
	if q := len(g.Ledger.Waiting); q != n {
		t.Fatalf("queue %d, want %d", q, n)
	}
	return &g, now
}

func waiters(gs []Grant) []string {
	var ws []string
	for _, g := range gs {
		ws = append(ws, g.Waiter)
	}
	return ws
}

func names(from, to int) []string {
	var ws []string
	for i := from; i < to; i++ {
		ws = append(ws, fmt.Sprintf("w%02d", i))
	}
	return ws
}

// TestTickPassesWindowInOrder: passes go out in the queue's order, at most PassWindow at
// once, whatever the permits leased; each one reported used lets the next in line go.
func TestTickPassesWindowInOrder(t *testing.T) {
	g, now := drainLimiter(t, 2, 20)
	win := PassWindow(2)
	if win != 4 {
		t.Fatalf("PassWindow(2) = %d, want 4", win)
	}
	if got := g.TickPasses(now); len(got) != 0 {
		t.Fatalf("every permit leased, no drain under way: %v woken, want none", waiters(got))
	}
	g.Lease(now, LeaseRequest{Holder: "busy", InUse: 0, Want: 0}) // a permit is free: the drain starts
	got := g.TickPasses(now)
	if w := waiters(got); !slices.Equal(w, names(0, win)) {
		t.Fatalf("first passes %v, want %v", w, names(0, win))
	}
	for _, p := range got {
		if !p.Pass || !p.Until.Equal(now.Add(PassTTL)) || p.Ticket != (Ticket{}) {
			t.Fatalf("pass %+v: want Pass, Until now+PassTTL, no ticket", p)
		}
	}
	if more := g.TickPasses(now); len(more) != 0 {
		t.Fatalf("window full, yet %v woken", waiters(more))
	}
	if g.Ledger.InUse(now) != 0 {
		t.Fatalf("passes took permits: in use %d", g.Ledger.InUse(now))
	}
	// A holder reports three passes used: the next go, in order, and the window follows
	// the use (twice the passes used in the last second: 6, one still out).
	g.Lease(now, LeaseRequest{Holder: "a", InUse: 2, Want: 2, Passed: []string{"w00", "w02", "w01"}})
	if w := waiters(g.TickPasses(now)); !slices.Equal(w, names(win, win+5)) {
		t.Fatalf("after 3 passed: %v, want %v", w, names(win, win+5))
	}
	if q := len(g.Ledger.Waiting); q != 20-win-5 {
		t.Fatalf("queue %d, want %d", q, 20-win-5)
	}
	// Every pass used, and the cap leased to the holder that used them: it is draining,
	// so the rest go (a window of 12 for the 6 used in this second).
	later := now.Add(2 * time.Second)
	g.Lease(later, LeaseRequest{Holder: "a", InUse: 2, Want: 2, Passed: names(3, 9)})
	if w := waiters(g.TickPasses(later)); !slices.Equal(w, names(9, 20)) {
		t.Fatalf("6 used, none out: %v, want %v", w, names(9, 20))
	}
}

// TestLeaseGrowsForPassHolders: while others are queued, a lease grows only for a holder
// whose pass-holders wait for room, and never past the cap.
func TestLeaseGrowsForPassHolders(t *testing.T) {
	g, now := drainLimiter(t, 4, 30)
	// "busy" gives its permits back: 4 free, 30 queued.
	g.Lease(now, LeaseRequest{Holder: "busy", InUse: 0, Want: 0})
	if r := g.Lease(now, LeaseRequest{Holder: "a", InUse: 0, Want: 4}); r.Permits != 0 {
		t.Fatalf("a holder without pass-holders got %d permits while others are queued", r.Permits)
	}
	g.TickPasses(now)
	if r := g.Lease(now, LeaseRequest{Holder: "a", InUse: 0, Want: 10, Passing: 3}); r.Permits != 4 {
		t.Fatalf("pass-holders waiting: %d permits, want the cap 4", r.Permits)
	}
	if r := g.Lease(now, LeaseRequest{Holder: "b", InUse: 0, Want: 10, Passing: 5}); r.Permits != 0 {
		t.Fatalf("b got %d permits with the cap leased to a", r.Permits)
	}
	if n := g.Ledger.InUse(now); n > 4 {
		t.Fatalf("in use %d over the cap 4", n)
	}
}

// TestPassesExpireAndWaitAgain: a pass not reported used stops counting after PassTTL
// (NextDeadline wakes the loop for it); a pass-holder that asks to wait again loses its
// pass and is queued at the back.
func TestPassesExpireAndWaitAgain(t *testing.T) {
	g, now := drainLimiter(t, 1, 6)
	win := PassWindow(1)
	g.Lease(now, LeaseRequest{Holder: "busy", InUse: 0, Want: 0})
	g.TickPasses(now)
	if len(g.Passes) != win {
		t.Fatalf("%d passes, want %d", len(g.Passes), win)
	}
	if next := g.NextDeadline(now); next.After(now.Add(PassTTL)) {
		t.Fatalf("next deadline %s after the passes expire", next.Sub(now))
	}
	// w00 came back to its gate too late for room: it queues again, keeping its place at
	// the front.
	if _, ok := g.Wait(now, "w00"); ok {
		t.Fatal("w00 granted with the cap full")
	}
	if len(g.Passes) != win-1 || g.Ledger.Waiting[0] != "w00" {
		t.Fatalf("passes %v, queue %v: want w00's pass gone and w00 first", waiters(g.Passes), g.Ledger.Waiting)
	}
	later := now.Add(PassTTL)
	woken := g.TickPasses(later)
	if w := waiters(woken); !slices.Equal(w, []string{"w00", "w04", "w05"}) {
		t.Fatalf("after the passes expired: %v, want w00 w04 w05", w)
	}
}

// TestTickPassesOnlyWhileClosed: an open circuit wakes its probe with a permit of its own,
// as Tick does; a rate-limited endpoint grants each attempt.
func TestTickPassesOnlyWhileClosed(t *testing.T) {
	g, now := drainLimiter(t, 2, 3)
	g.Lease(now, LeaseRequest{Holder: "busy", InUse: 0, Want: 0})
	tk, _ := g.Breaker.Ticket()
	for i := range g.Config.Breaker.ConsecutiveFailures {
		g.Record(now, []Outcome{{At: now.Add(time.Duration(i) * time.Millisecond), OK: false, Ticket: tk}})
	}
	if g.Breaker.State() != CircuitOpen {
		t.Fatalf("circuit %s, want open", g.Breaker.State())
	}
	if g.Drainable() {
		t.Fatal("drainable with the circuit open")
	}
	probe := g.TickPasses(g.Breaker.NextProbeAt())
	if len(probe) != 1 || probe[0].Pass || probe[0].Ticket.Kind != TicketProbe {
		t.Fatalf("open circuit woke %+v, want one probe with a permit of its own", probe)
	}
	g.Done(g.Breaker.NextProbeAt(), probe[0].Waiter, nil)

	r := DefaultLimiterConfig()
	r.RateLimit = 5
	rl := NewLimiter(r)
	rl.Ledger.Enqueue("x")
	if rl.Drainable() {
		t.Fatal("a rate-limited endpoint drains with passes")
	}
}

// TestDrainModelNeverAboveCap drives a limiter and two gates through a drain: the gates
// lease permits for their pass-holders, admit them, report them, and return permits as
// attempts end. The attempts running never pass the cap, every waiter runs once, and the
// order of admission follows the queue's within a window.
func TestDrainModelNeverAboveCap(t *testing.T) {
	const capN, n = 3, 60
	g, now := drainLimiter(t, capN, n)
	g.Lease(now, LeaseRequest{Holder: "busy", InUse: 0, Want: 0})
	type gate struct {
		name    string
		permits int
		running []string
		waiting []string // pass-holders here
		passed  []string
	}
	gates := []*gate{{name: "a"}, {name: "b"}}
	var order []string
	maxWin := 0
	for step := 0; len(order) < n && step < 10000; step++ {
		now = now.Add(10 * time.Millisecond)
		maxWin = max(maxWin, g.passWindow(now))
		for i, p := range g.TickPasses(now) {
			gt := gates[(step+i)%len(gates)]
			gt.waiting = append(gt.waiting, p.Waiter)
		}
		for _, gt := range gates {
			// An attempt ends each step.
			if len(gt.running) > 0 {
				gt.running = gt.running[1:]
			}
			r := g.Lease(now, LeaseRequest{Holder: gt.name, InUse: len(gt.running), Want: len(gt.running) + len(gt.waiting),
				Passed: gt.passed, Passing: len(gt.waiting)})
			gt.passed, gt.permits = nil, r.Permits
			for len(gt.waiting) > 0 && len(gt.running) < gt.permits {
				w := gt.waiting[0]
				gt.waiting = gt.waiting[1:]
				gt.running = append(gt.running, w)
				gt.passed = append(gt.passed, w)
				order = append(order, w)
			}
			total := 0
			for _, o := range gates {
				total += len(o.running)
			}
			if total > capN {
				t.Fatalf("step %d: %d running, cap %d", step, total, capN)
			}
		}
	}
	if len(order) != n {
		t.Fatalf("%d of %d waiters ran", len(order), n)
	}
	seen := map[string]bool{}
	for i, w := range order {
		if seen[w] {
			t.Fatalf("%s ran twice", w)
		}
		seen[w] = true
		var k int
		fmt.Sscanf(w, "w%d", &k)
		if d := k - i; d > maxWin || -d > maxWin {
			t.Fatalf("%s ran %dth: further from its place than the pass window", w, i)
		}
	}
}

// TestPassesHandedOutAgain: with RewakePasses, a pass no gate reported used by its Until is
// handed out again to the same waiter, without a new place in the window; one reported used
// is not. A refusal forgets the pass it names, not a later one nor the waiter's new place
// in the queue; without RewakePasses an expired pass is only forgotten.
func TestPassesHandedOutAgain(t *testing.T) {
	g, now := drainLimiter(t, 2, 10)
	g.RewakePasses = true
	g.Lease(now, LeaseRequest{Holder: "busy", InUse: 0, Want: 0})
	first := g.TickPasses(now)
	if w := waiters(first); !slices.Equal(w, names(0, 4)) {
		t.Fatalf("first passes %v, want %v", w, names(0, 4))
	}
	g.Passed(now.Add(time.Second), []string{"w00"})
	// w01 refuses its first pass late, after it was handed out again: nothing changes.
	expired := now.Add(PassTTL)
	again := g.TickPasses(expired)
	if w := waiters(again[:3]); !slices.Equal(w, names(1, 4)) {
		t.Fatalf("at PassTTL: %v handed out again first, want %v (w00 was used)", waiters(again), names(1, 4))
	}
	for _, p := range again[:3] {
		if !p.Pass || !p.Until.Equal(expired.Add(PassTTL)) {
			t.Fatalf("pass handed out again: %+v, want a pass until %s", p, expired.Add(PassTTL))
		}
	}
	g.Refused("w01", first[1].Until)
	if !g.holdsPass("w01") {
		t.Fatal("a refusal of w01's first pass forgot the one handed out since")
	}
	g.Refused("w01", again[0].Until)
	if g.holdsPass("w01") {
		t.Fatal("w01 refused its pass, and still holds it")
	}
	// w02 asked again (its gate found no room) before its refusal came: its place stays.
	if _, ok := g.Wait(expired, "w02"); ok {
		t.Fatal("w02 granted a permit of its own")
	}
	g.Refused("w02", again[1].Until)
	if !g.Ledger.Queued("w02") {
		t.Fatal("a refusal of w02's pass took its new place in the queue")
	}

	plain, now := drainLimiter(t, 2, 10)
	plain.Lease(now, LeaseRequest{Holder: "busy", InUse: 0, Want: 0})
	plain.TickPasses(now)
	for _, p := range plain.TickPasses(now.Add(PassTTL)) {
		if slices.Contains(names(0, 4), p.Waiter) {
			t.Fatalf("without RewakePasses, expired pass of %s handed out again", p.Waiter)
		}
	}
}

// holdsPass reports whether waiter holds a pass.
func (g *Limiter) holdsPass(waiter string) bool {
	return slices.ContainsFunc(g.Passes, func(p Grant) bool { return p.Waiter == waiter })
}
