package policy

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// rateEpoch is an aligned second.
var rateEpoch = limiterEpoch

func shareOf(ss []RateShare, w time.Time) int {
	for _, s := range ss {
		if s.Window.Equal(w) {
			return s.N
		}
	}
	return 0
}

func TestRateLedgerLendsWithinTheLimit(t *testing.T) {
	var r RateLedger
	now := rateEpoch.Add(ms(100))
	w0 := rateEpoch
	// Alone, a holder is lent what it wants of the current window and the next two.
	a := r.Lend("a", 60, 100, false, now)
	if len(a) != RateHorizon+1 || shareOf(a, w0) != 60 || shareOf(a, w0.Add(2*time.Second)) != 60 {
		t.Fatalf("a alone = %v, want 60 of each of 3 windows", a)
	}
	// Another holder wanting everything gets what is left, never more than the limit.
	b := r.Lend("b", 100, 100, false, now.Add(ms(10)))
	if shareOf(b, w0) != 40 || shareOf(b, w0.Add(time.Second)) != 40 {
		t.Fatalf("b = %v, want 40 of each window", b)
	}
	for k := range 3 {
		w := w0.Add(time.Duration(k) * time.Second)
		if n := r.Lent(w); n != 100 {
			t.Errorf("window %d lent %d, want 100", k, n)
		}
	}
	// A third window's first asks split evenly between holders that want it all.
	later := w0.Add(time.Second + ms(200))
	a = r.Lend("a", 100, 100, false, later)
	w3 := w0.Add(3 * time.Second)
	if shareOf(a, w3) != 50 {
		t.Fatalf("a's first share of window 3 = %d (%v), want the even split 50", shareOf(a, w3), a)
	}
	b = r.Lend("b", 100, 100, false, later.Add(ms(5)))
	if shareOf(b, w3) != 50 || r.Lent(w3) != 100 {
		t.Fatalf("b's share of window 3 = %d, lent %d; want 50 of 100", shareOf(b, w3), r.Lent(w3))
	}
	// Shares are only ever added: a smaller want keeps what is held.
	a = r.Lend("a", 1, 100, false, later.Add(ms(10)))
	if shareOf(a, w3) != 50 {
		t.Errorf("a's share after asking for less = %d, want 50 kept", shareOf(a, w3))
	}
}

func TestRateLedgerTopsUpWhatOthersDoNotWant(t *testing.T) {
	var r RateLedger
	now := rateEpoch.Add(ms(600)) // past RateAhead: nothing of the current window
	r.Lend("b", 10, 100, false, now)
	a := r.Lend("a", 100, 100, false, now.Add(ms(1)))
	if shareOf(a, rateEpoch) != 0 {
		t.Errorf("lent %d of a window more than RateAhead old", shareOf(a, rateEpoch))
	}
	// b wants 10: a may take the other 90 at once.
	if got := shareOf(a, rateEpoch.Add(time.Second)); got != 90 {
		t.Errorf("a's share = %d, want 90 (b wants only 10)", got)
	}
}

func TestRateLedgerHoldsWhileQueued(t *testing.T) {
	var r RateLedger
	now := rateEpoch.Add(ms(100))
	a := r.Lend("a", 5, 10, false, now)
	held := r.Lend("a", 10, 10, true, now.Add(ms(300)))
	if fmt.Sprint(held) != fmt.Sprint(a) {
		t.Errorf("while queued: %v, want what was held %v", held, a)
	}
	// The queue's own grants take what is left of the current window, before RateAhead.
	for range 5 {
		if _, ok := r.TakeOwn(10, now.Add(ms(350))); !ok {
			t.Fatal("TakeOwn refused with room left")
		}
	}
	if _, ok := r.TakeOwn(10, now.Add(ms(360))); ok || r.Lent(rateEpoch) != 10 {
		t.Errorf("TakeOwn past the limit: lent %d of 10", r.Lent(rateEpoch))
	}
	if _, ok := r.TakeOwn(10, rateEpoch.Add(time.Second+RateAhead)); ok {
		t.Error("TakeOwn granted RateAhead into a window")
	}
	if got := NextOwnOpen(now); !got.Equal(rateEpoch.Add(time.Second)) {
		t.Errorf("NextOwnOpen = %s", got)
	}
}

func TestLimiterLeasesRatesAndPermits(t *testing.T) {
	c := limiterTestConfig()
	c.Capacity.MaxInFlight = 20
	c.RateLimit = 10
	g := NewLimiter(c)
	now := rateEpoch.Add(ms(100))
	// Before LeaseRates: no permits for a rate-limited endpoint, no shares.
	r := g.Lease(now, LeaseRequest{Holder: "w", Want: 5, RateWant: 10})
	if r.Permits != 0 || len(r.Rate) != 0 || g.Snapshot(now).RateLeased {
		t.Fatalf("before LeaseRates: %+v", r)
	}
	// A grant of the old kind is counted when the limiter switches.
	if _, ok := g.Wait(now, "d1"); !ok {
		t.Fatal("the first waiter was not granted")
	}
	g.LeaseRates()
	r = g.Lease(now, LeaseRequest{Holder: "w", Want: 5, RateWant: 10})
	if r.Permits != 5 || shareOf(r.Rate, rateEpoch) != 9 || shareOf(r.Rate, rateEpoch.Add(time.Second)) != 10 {
		t.Fatalf("after LeaseRates: permits %d, shares %v; want 5 and 9, 10, 10", r.Permits, r.Rate)
	}
	if !g.Snapshot(now).RateLeased {
		t.Error("the snapshot does not say the limiter leases rates")
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back Limiter
	if err := json.Unmarshal(b, &back); err != nil || !back.RateLeased || back.RateBudget.Lent(rateEpoch) != 10 {
		t.Fatalf("round trip: %v, leased %v, lent %d", err, back.RateLeased, back.RateBudget.Lent(rateEpoch))
	}
	// The window is all lent: a waiter is queued, and the next deadline is the next window.
	if _, ok := back.Wait(now, "d2"); ok {
		t.Fatal("a waiter was granted past the limit")
	}
	if got := back.NextDeadline(now); !got.Equal(rateEpoch.Add(time.Second)) {
		t.Errorf("NextDeadline = %s, want the next window", got)
	}
}

func TestLocalRateAdmitsOnItsShares(t *testing.T) {
	h := LocalLease{Known: true, Snapshot: Snapshot{Circuit: CircuitClosed, Cap: 100, Free: 100, RateLimit: 3, RateLeased: true}, Spare: 4}
	now := rateEpoch.Add(ms(50))
	if _, ok := h.AdmitRate("", now, false, false); ok {
		t.Fatal("admitted with no share")
	}
	kind, at := h.HoldRate("", now)
	if kind != HoldBooked || !WindowOf(at).Equal(rateEpoch.Add(time.Second)) {
		t.Fatalf("HoldRate = %v at %s, want booked for the next second", kind, at)
	}
	if h.RateWant(false, now) != 1 {
		t.Errorf("want %d after one attempt turned away, want 1", h.RateWant(false, now))
	}
	h.Rate.Asking()
	h.Rate.Heard([]RateShare{{rateEpoch, 2}, {rateEpoch.Add(time.Second), 3}}, 3, now)
	for i := range 2 {
		w, ok := h.AdmitRate("", now, false, false)
		if !ok || !w.Equal(rateEpoch) {
			t.Fatalf("attempt %d: %v %s", i, ok, w)
		}
	}
	if _, ok := h.AdmitRate("", now, false, false); ok {
		t.Fatal("admitted past the share")
	}
	// Not within the send margin of its window.
	if _, ok := h.AdmitRate("", rateEpoch.Add(time.Second+ms(950)), false, false); ok {
		t.Fatal("admitted in a window's send margin")
	}
	// Booked: an eighth more than the expected share of each coming window (3, then 3).
	h.Rate.Booked = nil
	var wins []int64
	for range 8 {
		_, at := h.HoldRate("", now)
		wins = append(wins, WindowOf(at).Sub(rateEpoch).Milliseconds()/1000)
	}
	if fmt.Sprint(wins) != "[1 1 1 1 2 2 2 2]" {
		t.Errorf("booked windows %v, want 4 in each (share 3 plus 1)", wins)
	}
	if !h.Rate.Holding(now) || h.RateAction(Drop, false, now) == Drop {
		t.Error("a gate with booked attempts dropped its entry")
	}
	// A snapshot that does not lease rates: nothing admitted on shares.
	h.Snapshot.RateLeased = false
	if _, ok := h.AdmitRate("", now.Add(time.Second), false, false); ok || h.Admit(true, false) {
		t.Error("admitted at a rate-limited endpoint that grants each attempt")
	}
}

// rmEvent is one step of the rate model.
type rmEvent struct {
	at   time.Time
	seq  int
	kind string // "attempt", "pass", "renew", "reply"
	d    int    // the delivery
	gate int
	req  LeaseRequest
	rep  LeaseReply
}

type rmQueue []*rmEvent

func (q rmQueue) Len() int { return len(q) }
func (q rmQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q rmQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *rmQueue) Push(x any)   { *q = append(*q, x.(*rmEvent)) }
func (q *rmQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// TestRateBudgetModel drives 1 to 3 gates and one limiter that leases rate budgets, with
// deliveries arriving in bursts, renewals and replies delayed by up to 400 ms, gate passes
// at any phase of the second, booked attempts whose timers fire up to 300 ms late and may
// come back to another gate, and the limiter continuing as new through JSON. In every
// aligned second, the attempts admitted by all gates stay within the limit, and every
// delivery is admitted in the end. Its attempts never fill the cap, so the endpoint's queue
// never forms here: TestRateQueueModel (ratedrain_test.go) adds it.
func TestRateBudgetModel(t *testing.T) {
	slowest, sum, slowSeed := 0.0, 0.0, int64(0) // runs' lengths over deliveries/limit seconds
	defer func() {
		t.Logf("runs took %.2f× deliveries/limit seconds on average, %.2f× at most (seed %d)", sum/200, slowest, slowSeed)
	}()
	for seed := int64(1); seed <= 200; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		limit := 1 + rnd.Intn(30)
		gates := 1 + rnd.Intn(3)
		deliveries := limit * (3 + rnd.Intn(8))
		c := limiterTestConfig()
		c.Capacity.MaxInFlight = 500
		c.RateLimit = limit
		lim := NewLimiter(c)
		lim.LeaseRates()
		gs := make([]*LocalLease, gates)
		renewing := make([]bool, gates)
		for i := range gs {
			gs[i] = &LocalLease{}
			gs[i].Heard(lim.Snapshot(rateEpoch), false, 0, 0)
		}
		var q rmQueue
		seq := 0
		push := func(e *rmEvent) { seq++; e.seq = seq; heap.Push(&q, e) }
		delay := func() time.Duration { return time.Duration(rnd.Intn(400)) * time.Millisecond }
		for d := range deliveries {
			at := rateEpoch.Add(time.Duration(rnd.Intn(3000)) * time.Millisecond)
			if rnd.Intn(2) == 0 {
				at = rateEpoch.Add(ms(200)) // a burst
			}
			push(&rmEvent{at: at, kind: "attempt", d: d, gate: rnd.Intn(gates)})
		}
		for i := range gs {
			push(&rmEvent{at: rateEpoch.Add(time.Duration(rnd.Intn(1000)) * time.Millisecond), kind: "pass", gate: i})
		}
		admitted := map[time.Time]int{}
		done := 0
		end := rateEpoch.Add(time.Duration(deliveries/limit+30) * time.Second)
		for q.Len() > 0 && done < deliveries {
			e := heap.Pop(&q).(*rmEvent)
			if e.at.After(end) {
				break
			}
			h := gs[e.gate]
			switch e.kind {
			case "attempt":
				waiter := fmt.Sprint("d", e.d)
				if w, ok := h.AdmitRate(waiter, e.at, true, false); ok {
					if !InWindow(w, startAt(w, e.at)) {
						t.Fatalf("seed %d: admitted at %s for window %s", seed, e.at, w)
					}
					admitted[w]++
					done++
					h.Finish(true, false)
					continue
				}
				kind, at := h.HoldRate(waiter, e.at)
				next := e.at.Add(time.Second)
				if kind == HoldBooked {
					next = at.Add(time.Duration(rnd.Intn(300)) * time.Millisecond)
				}
				g := e.gate
				if rnd.Intn(5) == 0 {
					g = rnd.Intn(gates)
				}
				push(&rmEvent{at: next, kind: "attempt", d: e.d, gate: g})
			case "pass":
				push(&rmEvent{at: e.at.Add(time.Second), kind: "pass", gate: e.gate})
				if renewing[e.gate] || h.RateAction(Wait, false, e.at) != Renew {
					continue
				}
				renewing[e.gate] = true
				req := LeaseRequest{Holder: fmt.Sprint("g", e.gate), InUse: h.InUse, Want: h.Want(false), RateWant: h.RateWant(false, e.at)}
				h.Rate.Asking()
				h.StartRenewal(req.Want)
				push(&rmEvent{at: e.at.Add(delay()), kind: "renew", gate: e.gate, req: req})
			case "renew":
				if rnd.Intn(10) == 0 { // continue as new
					b, err := json.Marshal(lim)
					if err != nil {
						t.Fatal(err)
					}
					lim = Limiter{}
					if err := json.Unmarshal(b, &lim); err != nil {
						t.Fatal(err)
					}
				}
				rep := lim.Lease(e.at, e.req)
				for _, s := range rep.Rate {
					if n := lim.RateBudget.Lent(s.Window); n > limit {
						t.Fatalf("seed %d: window %s lent %d, limit %d", seed, s.Window, n, limit)
					}
				}
				push(&rmEvent{at: e.at.Add(delay()), kind: "reply", gate: e.gate, rep: rep})
			case "reply":
				renewing[e.gate] = false
				h.Heard(lim.Snapshot(e.at), true, e.rep.Permits, h.Seq)
				h.Rate.Heard(e.rep.Rate, e.rep.RateExpect, e.at)
			}
		}
		lastWindow := rateEpoch
		for w, n := range admitted {
			if w.After(lastWindow) {
				lastWindow = w
			}
			if n > limit {
				t.Errorf("seed %d: %d admitted in the second from %s, limit %d", seed, n, w.Format("15:04:05"), limit)
			}
		}
		if done < deliveries {
			for i, g := range gs {
				t.Logf("gate %d: %+v", i, *g)
			}
			t.Logf("ledger %+v", lim.RateBudget)
			t.Errorf("seed %d: %d of %d deliveries admitted by %s (limit %d, %d gates)", seed, done, deliveries, end.Format("15:04:05"), limit, gates)
		}
		ideal := float64(deliveries) / float64(limit)
		took := (lastWindow.Sub(rateEpoch).Seconds() + 1) / ideal
		sum += took
		if took > slowest {
			slowest, slowSeed = took, seed
			t.Logf("seed %d: limit %d, %d gates, %d deliveries: %.2f×", seed, limit, gates, deliveries, took)
		}
	}
}

func TestLocalRateLearnsHowLateBookingsComeBack(t *testing.T) {
	var r LocalRate
	now := rateEpoch.Add(ms(100))
	for i := range 8 {
		w := fmt.Sprint("d", i)
		at := r.Book(10, w, now)
		r.Back(w, at.Add(ms(400)))
	}
	if r.Late < ms(300) || r.Late > ms(400) {
		t.Fatalf("Late = %s after 8 bookings back 400ms late, want about 360ms", r.Late)
	}
	r.Back("stranger", now) // never booked: changes nothing
	late := r.Late
	at := r.Book(10, "x", now)
	if at.Sub(now) < RateTimerFloor {
		t.Errorf("told to come back in %s, under the timer floor", at.Sub(now))
	}
	if place := at.Add(late); place.Sub(WindowOf(place)) > RateBookLatest {
		t.Errorf("its place is %s into its window, past RateBookLatest", place.Sub(WindowOf(place)))
	}
	if len(r.Due) != 1 {
		t.Errorf("%d bookings due, want 1", len(r.Due))
	}
	r.prune(at.Add(time.Minute))
	if len(r.Due) != 0 {
		t.Errorf("a booking a minute overdue is kept")
	}
}

func TestLocalRateLeadsIntoTheNextWindow(t *testing.T) {
	h := LocalLease{Known: true, Snapshot: Snapshot{Circuit: CircuitClosed, Cap: 100, Free: 100, RateLimit: 10, RateLeased: true}, Spare: 4}
	next := rateEpoch.Add(time.Second)
	h.Rate.Heard([]RateShare{{rateEpoch, 1}, {next, 2}}, 2, rateEpoch)
	if w, ok := h.AdmitRate("", rateEpoch.Add(ms(100)), false, false); !ok || !w.Equal(rateEpoch) {
		t.Fatalf("first attempt: %v %s, want the current window", ok, w)
	}
	// The current window's share is used up, and its send margin has not begun: booked.
	if _, ok := h.AdmitRate("", rateEpoch.Add(ms(850)), false, false); ok {
		t.Fatal("admitted on the next window's share before the send margin")
	}
	// In the send margin: the next window's share, the request starting as it begins.
	for i := range 2 {
		at := rateEpoch.Add(ms(950))
		w, ok := h.AdmitRate("", at, false, false)
		if !ok || !w.Equal(next) {
			t.Fatalf("attempt %d in the margin: %v %s, want the next window", i, ok, w)
		}
		if start := startAt(w, at); !start.Equal(next) || !InWindow(w, start) {
			t.Fatalf("starts at %s, want %s", start, next)
		}
	}
	// The next window's share is used up too: booked, for a later window.
	if _, ok := h.AdmitRate("", rateEpoch.Add(ms(960)), false, false); ok {
		t.Fatal("admitted past the next window's share")
	}
	if kind, at := h.HoldRate("", rateEpoch.Add(ms(960))); kind != HoldBooked || !at.After(next) {
		t.Errorf("HoldRate = %v at %s, want booked after %s", kind, at, next)
	}
	if got := startAt(rateEpoch, rateEpoch.Add(ms(300))); !got.Equal(rateEpoch.Add(ms(300))) {
		t.Errorf("StartAt within the window = %s, want at once", got)
	}
}

func TestLocalRateWantsOverdueBookings(t *testing.T) {
	var r LocalRate
	now := rateEpoch.Add(ms(100))
	at := r.Book(10, "d1", now)
	booked := WindowOf(at)
	if got := r.Want(10, now); got != 1 {
		t.Fatalf("want %d with one attempt booked, want 1", got)
	}
	// Its window is over and it has not come back (a late timer, a busy worker): still
	// asked for.
	late := booked.Add(2 * time.Second)
	if got := r.Want(10, late); got != 1 {
		t.Errorf("want %d with one booking overdue, want 1", got)
	}
	if got := r.Want(10, at.Add(RateOverdue+time.Second)); got != 0 {
		t.Errorf("want %d with a booking overdue past RateOverdue, want 0", got)
	}
	r.Back("d1", late)
	if got := r.Want(10, late); got != 0 {
		t.Errorf("want %d once the booking came back, want 0", got)
	}
}

// startAt is when a request admitted at now on a share of window starts: at once, or, on a
// lead (admitted in the send margin on the next window's share), as that window begins
// (the gate waits for it: untilWindow).
func startAt(window, now time.Time) time.Time {
	if now.Before(window) {
		return window
	}
	return now
}

// A lead the gate may not wait for (its bound of waits is reached) goes back: its room and
// the next window's request, which the next attempt in the margin then takes, and the
// attempt is booked for a coming second on a durable timer.
func TestUnleadGivesTheLeadBackAndBooks(t *testing.T) {
	h := LocalLease{Known: true, Snapshot: Snapshot{Circuit: CircuitClosed, Cap: 100, Free: 100, RateLimit: 10, RateLeased: true}, Spare: 4}
	next := rateEpoch.Add(time.Second)
	h.Rate.Heard([]RateShare{{next, 1}}, 1, rateEpoch)
	at := rateEpoch.Add(ms(950))
	w, ok := h.AdmitRate("d1", at, false, false)
	if !ok || !w.Equal(next) || h.InUse != 1 {
		t.Fatalf("attempt in the margin: %v %s, in use %d; want the next window's share", ok, w, h.InUse)
	}
	back := h.Unlead("d1", w, at)
	if h.InUse != 0 {
		t.Errorf("in use %d after Unlead, want 0", h.InUse)
	}
	if back.Before(at.Add(RateTimerFloor)) {
		t.Errorf("booked to come back at %s, sooner than the timer floor after %s", back, at)
	}
	if b, ok := h.Rate.Due["d1"]; !ok || !b.At.Equal(back) {
		t.Errorf("booking of d1 = %+v, %v; want one at %s", b, ok, back)
	}
	// The share's request is free again: the next attempt in the margin takes it.
	if w, ok := h.AdmitRate("d2", rateEpoch.Add(ms(960)), false, false); !ok || !w.Equal(next) {
		t.Errorf("next attempt in the margin: %v %s, want the next window's share", ok, w)
	}
}
