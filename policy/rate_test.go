package policy

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestValidateRateLimit(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []string
	}{
		{0, nil}, {1, nil}, {MaxRateLimit, nil},
		{-1, []string{"rate limit -1", "1..10000", "0 means no rate limit"}},
		{MaxRateLimit + 1, []string{"rate limit 10001", "1..10000"}},
	} {
		wantErrContaining(t, fmt.Sprintf("ValidateRateLimit(%d)", c.n), ValidateRateLimit(c.n), c.want)
	}
	c := limiterTestConfig()
	c.RateLimit = -3
	wantErrContaining(t, "LimiterConfig.Validate()", c.Validate(), []string{"rate limit -3"})
}

func TestWindowOfAndInWindow(t *testing.T) {
	w := limiterEpoch // 12:00:00.000, an aligned second
	for _, c := range []struct {
		at     time.Duration
		window time.Time
		in     bool // in the window starting at w
	}{
		{0, w, true},
		{ms(1), w, true},
		{ms(899), w, true},
		{ms(900), w, false},
		{ms(999), w, false},
		{time.Second, w.Add(time.Second), false},
		{-1, w.Add(-time.Second), false},
		{ms(2500), w.Add(2 * time.Second), false},
	} {
		at := w.Add(c.at)
		if got := WindowOf(at); !got.Equal(c.window) {
			t.Errorf("WindowOf(epoch%+v) = %s, want %s", c.at, got, c.window)
		}
		if got := InWindow(w, at); got != c.in {
			t.Errorf("InWindow(epoch, epoch%+v) = %v, want %v", c.at, got, c.in)
		}
	}
	// Aligned to the Unix clock whatever the location.
	loc := time.FixedZone("odd", 5*3600+1800)
	at := time.Unix(1_700_000_123, 456_000_000).In(loc)
	if got := WindowOf(at); got.Unix() != 1_700_000_123 || got.Nanosecond() != 0 {
		t.Errorf("WindowOf(%s) = %s, want the second %d", at, got, 1_700_000_123)
	}
}

func TestTarget(t *testing.T) {
	for _, c := range []struct {
		at, want time.Duration // from limiterEpoch
	}{
		{0, 0}, {ms(499), 0}, {ms(500), time.Second}, {ms(999), time.Second}, {time.Second, time.Second},
		{time.Second + ms(500), 2 * time.Second},
	} {
		if got := Target(limiterEpoch.Add(c.at)); !got.Equal(limiterEpoch.Add(c.want)) {
			t.Errorf("Target(epoch+%s) = epoch+%s, want epoch+%s", c.at, got.Sub(limiterEpoch), c.want)
		}
		if got := NextOpen(limiterEpoch.Add(c.at)); !got.Equal(limiterEpoch.Add(c.want + RateAhead)) {
			t.Errorf("NextOpen(epoch+%s) = epoch+%s, want epoch+%s", c.at, got.Sub(limiterEpoch), c.want+RateAhead)
		}
	}
}

func TestRateCount(t *testing.T) {
	type step struct {
		at     time.Duration // from limiterEpoch
		open   bool          // want Open (then take one)
		window time.Duration // the window taken, from limiterEpoch
	}
	for _, c := range []struct {
		name  string
		limit int
		steps []step
	}{
		{"no limit is always open", 0, []step{{0, true, 0}, {ms(400), true, 0}, {ms(900), true, time.Second}}},
		{"two per second, then the next window from its middle", 2, []step{
			{0, true, 0}, {ms(100), true, 0}, {ms(200), false, 0},
			{ms(500), true, time.Second}, {ms(900), true, time.Second}, {time.Second, false, 0}, {time.Second + ms(499), false, 0},
			{time.Second + ms(500), true, 2 * time.Second},
		}},
		{"a late timer grants for the window it fires in", 5, []step{
			{ms(700), true, time.Second}, {3*time.Second + ms(200), true, 3 * time.Second},
		}},
		{"an idle window starts from zero", 1, []step{
			{0, true, 0}, {ms(10), false, 0}, {5*time.Second + ms(10), true, 5 * time.Second}, {5*time.Second + ms(20), false, 0},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r RateCount
			for i, s := range c.steps {
				now := limiterEpoch.Add(s.at)
				if got := r.Open(now, c.limit); got != s.open {
					t.Fatalf("step %d at +%s: Open = %v, want %v (count %+v)", i, s.at, got, s.open, r)
				}
				if s.open {
					if w := r.Take(now); !w.Equal(limiterEpoch.Add(s.window)) {
						t.Fatalf("step %d: Take = epoch+%s, want epoch+%s", i, w.Sub(limiterEpoch), s.window)
					}
				}
			}
		})
	}
}

// rateLimiter is the test limiter (cap 4, queue 10) with a rate limit of n per second.
func rateLimiter(n int) Limiter {
	c := limiterTestConfig()
	c.RateLimit = n
	return NewLimiter(c)
}

// TestLimiterRateLimit walks a rate-limited limiter through a burst: waiters granted at
// most the limit per window, each grant for its target window, the others queued and woken
// from the middle of the window for the next; no lease beyond what a holder runs; a grant
// whose window passed unused taken back and the waiter queued again.
func TestLimiterRateLimit(t *testing.T) {
	g := rateLimiter(2)
	g.Config.Capacity.MaxInFlight = 10
	g.Capacity = NewCapacity(g.Config.Capacity)
	now := limiterEpoch.Add(ms(100))
	var granted []Grant
	for i := range 5 {
		if s, ok := g.Wait(now, fmt.Sprintf("w%d", i)); ok {
			granted = append(granted, s)
		}
	}
	if len(granted) != 2 || granted[0].Waiter != "w0" || granted[1].Waiter != "w1" {
		t.Fatalf("granted %+v, want w0 and w1", granted)
	}
	for _, s := range granted {
		if !s.Window.Equal(limiterEpoch) {
			t.Errorf("grant %s for window %s, want %s", s.Waiter, s.Window, limiterEpoch)
		}
	}
	if !slices.Equal(g.Ledger.Waiting, []string{"w2", "w3", "w4"}) {
		t.Fatalf("queue %v, want w2 w3 w4", g.Ledger.Waiting)
	}
	if next := g.NextDeadline(now); !next.Equal(limiterEpoch.Add(RateAhead)) {
		t.Errorf("NextDeadline = %s, want the middle of the window %s", next, limiterEpoch.Add(RateAhead))
	}
	if s := g.Snapshot(now); s.RateLimit != 2 || s.Reason == "" {
		t.Errorf("snapshot %+v: want the rate limit and a reason", s)
	}
	if wakes := g.Tick(now.Add(ms(300))); len(wakes) != 0 {
		t.Errorf("woke %v within the spent window", wakes)
	}
	// A holder gets no new permits: every attempt of a rate-limited endpoint is granted.
	if r := g.Lease(now, LeaseRequest{Holder: "h", InUse: 0, Want: 8}); r.Permits != 0 {
		t.Errorf("lease of %d permits to an idle holder of a rate-limited endpoint", r.Permits)
	}
	if r := g.Lease(now, LeaseRequest{Holder: "h", InUse: 1, Want: 8}); r.Permits > 1 {
		t.Errorf("lease of %d permits to a holder running 1", r.Permits)
	}
	// w0 asks again within its window (its permit signal may be lost): the same grant.
	if s, ok := g.Wait(limiterEpoch.Add(ms(400)), "w0"); !ok || !s.Window.Equal(limiterEpoch) {
		t.Errorf("w0 asking again in its window: %+v, %v; want its grant for %s", s, ok, limiterEpoch)
	}
	// From the middle of the window, two more are woken for the next, in order.
	next := limiterEpoch.Add(time.Second)
	wakes := g.Tick(limiterEpoch.Add(RateAhead))
	if len(wakes) != 2 || wakes[0].Waiter != "w2" || wakes[1].Waiter != "w3" {
		t.Fatalf("woke %+v at the middle of the window, want w2 and w3", wakes)
	}
	for _, s := range wakes {
		if !s.Window.Equal(next) {
			t.Errorf("woken %s for window %s, want %s", s.Waiter, s.Window, next)
		}
	}
	// w1 asks again after its window, unused: taken back, and w1 waits behind w4.
	late := next.Add(ms(10))
	if s, ok := g.Wait(late, "w1"); ok {
		t.Errorf("w1 granted %+v in a spent window", s)
	}
	if !slices.Equal(g.Ledger.Waiting, []string{"w4", "w1"}) {
		t.Errorf("queue %v, want w4 w1", g.Ledger.Waiting)
	}
	if g.single("w1") >= 0 {
		t.Errorf("w1's missed grant kept")
	}
	wakes = g.Tick(next.Add(RateAhead))
	if len(wakes) != 2 || wakes[0].Waiter != "w4" || wakes[1].Waiter != "w1" || !wakes[0].Window.Equal(next.Add(time.Second)) {
		t.Fatalf("woke %+v in the middle of the second window, want w4 and w1 for the third", wakes)
	}
	// Round trip through JSON (continue-as-new) keeps the count and the windows.
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back Limiter
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Rate != g.Rate || back.Config.RateLimit != 2 || !slices.EqualFunc(back.Grants, g.Grants, func(a, b Grant) bool {
		return a.Waiter == b.Waiter && a.Window.Equal(b.Window)
	}) {
		t.Errorf("after JSON: rate %+v grants %+v, want %+v %+v", back.Rate, back.Grants, g.Rate, g.Grants)
	}
}

// TestLimiterRateAhead: a waiter arriving from the middle of a window on is granted for
// the next window; with that window's budget spent, the queue waits for the middle of it.
func TestLimiterRateAhead(t *testing.T) {
	g := rateLimiter(1)
	mid := limiterEpoch.Add(RateAhead)
	s, ok := g.Wait(mid, "a")
	if !ok || !s.Window.Equal(limiterEpoch.Add(time.Second)) {
		t.Fatalf("granted %+v, %v at the middle of a window; want a grant for the next", s, ok)
	}
	if _, ok := g.Wait(mid.Add(ms(10)), "b"); ok {
		t.Fatalf("b granted beyond the next window's budget")
	}
	if next := g.NextDeadline(mid.Add(ms(10))); !next.Equal(limiterEpoch.Add(time.Second + RateAhead)) {
		t.Errorf("NextDeadline = epoch+%s, want epoch+%s", next.Sub(limiterEpoch), time.Second+RateAhead)
	}
	if wakes := g.Tick(limiterEpoch.Add(time.Second + RateAhead)); len(wakes) != 1 || !wakes[0].Window.Equal(limiterEpoch.Add(2*time.Second)) {
		t.Errorf("woke %+v at the middle of the next window", wakes)
	}
}

// TestLimiterRateAndCap: the cap still holds under a rate limit; a grant's permit returns
// with Done, and the rate window still counts it.
func TestLimiterRateAndCap(t *testing.T) {
	g := rateLimiter(10) // cap 4
	now := limiterEpoch
	n := 0
	for i := range 6 {
		if _, ok := g.Wait(now, fmt.Sprintf("w%d", i)); ok {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("%d granted with a cap of 4 and a rate of 10", n)
	}
	g.Done(now.Add(ms(10)), "w0", &Outcome{At: now, OK: true, Ticket: g.Grants[0].Ticket})
	if wakes := g.Tick(now.Add(ms(20))); len(wakes) != 1 || wakes[0].Waiter != "w4" {
		t.Errorf("woke %+v once a permit came back, want w4", wakes)
	}
	if g.Rate.Granted != 5 {
		t.Errorf("window counts %d grants, want 5", g.Rate.Granted)
	}
}

// TestLimiterRateProperties drives a rate-limited limiter with random arrivals, asks,
// completions, lease requests and clock steps, and checks after every step: never more
// grants for one window than the limit; each grant for the window it was made in; no lease
// beyond what its holder runs; the queue without duplicates; and, once arrivals stop, every
// waiter granted.
func TestLimiterRateProperties(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		limit := 1 + rng.Intn(6)
		g := rateLimiter(limit)
		g.Config.MaxQueue = 1000
		now := limiterEpoch.Add(time.Duration(rng.Intn(1000)) * time.Millisecond)
		perWindow := map[time.Time]int{}
		granted := map[string]Grant{}
		state := map[string]string{} // waiter → queued, granted, done
		var ids []string
		record := func(s Grant) {
			if old, ok := granted[s.Waiter]; ok && old.Window.Equal(s.Window) {
				return // the same grant repeated: counted once
			}
			if s.Window.IsZero() || !s.Window.Equal(Target(now)) {
				t.Fatalf("seed %d: grant %+v at %s, want its window %s", seed, s, now, Target(now))
			}
			perWindow[s.Window]++
			if perWindow[s.Window] > limit {
				t.Fatalf("seed %d: %d grants for window %s, limit %d", seed, perWindow[s.Window], s.Window, limit)
			}
			granted[s.Waiter], state[s.Waiter] = s, "granted"
		}
		steps := 300
		for i := 0; ; i++ {
			arriving := i < steps
			switch op := rng.Intn(6); {
			case op == 0 && arriving:
				w := fmt.Sprintf("w%d", len(ids))
				ids = append(ids, w)
				state[w] = "queued"
				if s, ok := g.Wait(now, w); ok {
					record(s)
				}
			case op == 1:
				for _, s := range g.Tick(now) {
					record(s)
				}
			case op == 2 && len(ids) > 0:
				// A granted waiter finishes, or asks again (late, or its signal lost).
				w := ids[rng.Intn(len(ids))]
				if state[w] != "granted" {
					continue
				}
				if rng.Intn(3) == 0 {
					if s, ok := g.Wait(now, w); ok {
						record(s)
					} else {
						state[w] = "queued"
						delete(granted, w)
					}
					continue
				}
				g.Done(now, w, &Outcome{At: now, OK: true, Latency: duration.Duration(ms(5)), Ticket: granted[w].Ticket})
				state[w] = "done"
			case op == 3:
				inUse := rng.Intn(3)
				r := g.Lease(now, LeaseRequest{Holder: "h", InUse: inUse, Want: 10})
				if r.Permits > inUse {
					t.Fatalf("seed %d: lease of %d permits to a holder running %d", seed, r.Permits, inUse)
				}
			default:
				now = now.Add(time.Duration(rng.Intn(400)) * time.Millisecond)
				if next := g.NextDeadline(now); !next.IsZero() && next.Before(now) {
					t.Fatalf("seed %d: next deadline %s before now %s", seed, next, now)
				}
			}
			if seen := map[string]bool{}; true {
				for _, w := range g.Ledger.Waiting {
					if seen[w] || state[w] != "queued" {
						t.Fatalf("seed %d: queue %v has %s (%s) wrongly", seed, g.Ledger.Waiting, w, state[w])
					}
					seen[w] = true
				}
			}
			if i >= steps {
				// Drain: finish what is granted, follow the deadlines until nobody waits.
				for w, st := range state {
					if st == "granted" {
						g.Done(now, w, nil)
						state[w] = "done"
					}
				}
				if len(g.Ledger.Waiting) == 0 {
					break
				}
				if i > steps+10*len(ids)+100 {
					t.Fatalf("seed %d: %d still waiting after the arrivals stopped", seed, len(g.Ledger.Waiting))
				}
				if next := g.NextDeadline(now); next.After(now) {
					now = next
				}
			}
		}
	}
}

// TestLocalLeaseRateLimited: a gate admits nothing on its own for a rate-limited endpoint
// (no spare permits, no lease use), queues every attempt, never asks to grow, and asks for
// no more permits than it runs.
func TestLocalLeaseRateLimited(t *testing.T) {
	snap := Snapshot{Circuit: CircuitClosed, Cap: 100, Free: 100, Threshold: 5, RateLimit: 5}
	var h LocalLease
	h.Heard(snap, true, 10, 0) // a lease granted before the limit was set
	if h.Spare != 0 {
		t.Errorf("spare permits %d for a rate-limited endpoint", h.Spare)
	}
	if h.Admit(true, false) {
		t.Errorf("admitted an attempt on its own under a rate limit")
	}
	if k := h.Hold(); k != HoldQueue {
		t.Errorf("Hold = %v, want HoldQueue", k)
	}
	if h.Demand != 0 || h.Growing() {
		t.Errorf("demand %d, growing %v: a rate-limited gate asks for no lease", h.Demand, h.Growing())
	}
	h.InUse = 2 // attempts admitted before the limit was heard
	if w := h.Want(false); w != 2 {
		t.Errorf("Want = %d, want the 2 running", w)
	}
	full := snap
	full.QueueFull = true
	h.Heard(full, false, 0, 0)
	if k := h.Hold(); k != HoldLater {
		t.Errorf("Hold with a full queue = %v, want HoldLater", k)
	}
	// The same endpoint without the limit: spares and admission as before.
	open := snap
	open.RateLimit = 0
	var u LocalLease
	u.Heard(open, false, 0, 0)
	if u.Spare != SparePermits(100) || !u.Admit(false, false) {
		t.Errorf("without a rate limit: spare %d, admit refused", u.Spare)
	}
}
