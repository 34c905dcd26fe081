package policy

import (
	"slices"
	"strings"
	"time"
)

// Leased rate budgets. A rate-limited endpoint's limiter (Limiter.RateLeased) splits each
// aligned rate window's budget of RateLimit requests among the workers' gates, which ask
// for a share of the next windows with each lease renewal (LeaseRequest.RateWant), and
// its own queue, whose waiters it grants one by one (Limiter.Tick). A gate then admits a
// busy endpoint's attempts against the shares it holds with no round trip (LocalRate), and
// an attempt that finds no share now comes back at a second it is booked for, on a durable
// timer. The sum of what all holders are lent for a window, and what the queue is granted
// in it, never passes the limit: shares are only ever added, from what is left.
const (
	// RateHorizon is how many windows past the current one a renewal is lent shares of:
	// a gate that renews every second holds the next window's share before it begins, and
	// one more in case a renewal is late.
	RateHorizon = 2
	// RateWantTTL is how long a holder's last asked-for rate counts when the budget is split:
	// a holder that stops renewing stops being saved a share after it.
	RateWantTTL = 3 * time.Second
	// RateBookStart and RateBookSpread place the attempts booked for a window: the i-th of
	// n comes back i/n of RateBookSpread after RateBookStart into it, early enough that a
	// timer that fires a little late still finds it within the window's send margin.
	RateBookStart  = 10 * time.Millisecond
	RateBookSpread = 400 * time.Millisecond
	// RateTimerFloor is the shortest wait a booked attempt is given: Temporal moves a timer
	// due sooner than its timer queue's look-ahead (history.timerProcessorMaxTimeShift, 1 s
	// by default) to the end of it, so a shorter one may fire up to a second late, past its
	// window. A booking never comes back later than RateBookLatest into its window.
	RateTimerFloor = time.Second
	RateBookLatest = 600 * time.Millisecond
)

// RateShare is a holder's share of one rate window's budget: it may start N requests
// within the window (InWindow).
type RateShare struct {
	Window time.Time `json:"window"`
	N      int       `json:"n"`
}

// RateLedger is a rate-limited limiter's record of each window's budget lent out, by holder
// and to its own queue, and of what each holder last asked for. It is a value that
// round-trips through encoding/json (continue-as-new); change it only through its methods.
// It holds at most RateHorizon+1 windows and the holders heard from within RateWantTTL.
type RateLedger struct {
	// Windows are the windows lent from, oldest first.
	Windows []RateLent `json:"windows,omitempty"`
	// Wants are the holders' last requests, sorted by holder.
	Wants []RateWant `json:"wants,omitempty"`
}

// RateLent is what one window's budget is lent to.
type RateLent struct {
	Window time.Time `json:"window"`
	// Held are the holders' shares, sorted by holder.
	Held []RateHeld `json:"held,omitempty"`
	// Own is how many of the window's requests the limiter granted to queued waiters.
	Own int `json:"own,omitempty"`
}

// RateHeld is one holder's share of a window.
type RateHeld struct {
	Holder string `json:"holder"`
	N      int    `json:"n"`
}

// RateWant is what a holder asked for at its last renewal: Want requests per window.
type RateWant struct {
	Holder string    `json:"holder"`
	Want   int       `json:"want"`
	At     time.Time `json:"at"`
}

// total is how many of w's requests are lent out.
func (w RateLent) total() int {
	n := w.Own
	for _, h := range w.Held {
		n += h.N
	}
	return n
}

// held is holder's share of w.
func (w RateLent) held(holder string) int {
	i, ok := slices.BinarySearchFunc(w.Held, holder, func(h RateHeld, s string) int { return strings.Compare(h.Holder, s) })
	if !ok {
		return 0
	}
	return w.Held[i].N
}

// Lend records holder's wish for want requests per window at now and lends it, for the
// current window (while its first RateAhead lasts) and the RateHorizon next ones, up to
// that many of each, from what is left under limit. While others want a share too, a
// holder is lent at first no more than an even split (limit over the holders that want
// some), or what the others do not want; a later renewal tops it up from what is left.
// Nothing is lent while hold is set (a circuit not closed, or the endpoint's queue when it
// is granted one by one, comes first). It returns every share the holder holds from the
// current window on, oldest first.
func (r *RateLedger) Lend(holder string, want, limit int, hold bool, now time.Time) []RateShare {
	r.prune(now)
	r.setWant(holder, want, now)
	want = min(max(want, 0), limit)
	if want > 0 && !hold && limit > 0 {
		active := 0
		var others []RateWant // the other holders that want a share, in holder order
		for _, w := range r.Wants {
			if w.Want > 0 && now.Sub(w.At) < RateWantTTL {
				active++
				if w.Holder != holder {
					others = append(others, w)
				}
			}
		}
		fair := (limit + max(active, 1) - 1) / max(active, 1)
		cur := WindowOf(now)
		for k := 0; k <= RateHorizon; k++ {
			win := cur.Add(time.Duration(k) * RateWindow)
			if k == 0 && now.Sub(cur) >= RateAhead {
				continue // too late in the window for a share to reach its holder in time
			}
			rw := r.window(win)
			have := rw.held(holder)
			left := limit - rw.total()
			if have >= want || left <= 0 {
				continue
			}
			unmet := 0
			for _, o := range others {
				unmet += max(min(o.Want, limit)-rw.held(o.Holder), 0)
			}
			give := min(want-have, left, max(fair-have, left-unmet))
			if give > 0 {
				r.add(win, holder, give)
			}
		}
	}
	return r.Shares(holder, now)
}

// Shares returns holder's shares from the current window on, oldest first.
func (r *RateLedger) Shares(holder string, now time.Time) []RateShare {
	var out []RateShare
	cur := WindowOf(now)
	for _, w := range r.Windows {
		if n := w.held(holder); n > 0 && !w.Window.Before(cur) {
			out = append(out, RateShare{Window: w.Window, N: n})
		}
	}
	return out
}

// TakeOwn grants one request of the current window to a queued waiter, if the window is
// less than RateAhead old (so that the grant reaches its delivery within the window) and
// has room under limit, and returns the window.
func (r *RateLedger) TakeOwn(limit int, now time.Time) (time.Time, bool) {
	cur := WindowOf(now)
	if now.Sub(cur) >= RateAhead {
		return time.Time{}, false
	}
	r.prune(now)
	i := r.index(cur)
	if i >= 0 && r.Windows[i].total() >= limit {
		return time.Time{}, false
	}
	if i < 0 {
		r.Windows = append(slices.Clone(r.Windows), RateLent{Window: cur})
		slices.SortFunc(r.Windows, func(a, b RateLent) int { return a.Window.Compare(b.Window) })
		i = r.index(cur)
	} else {
		r.Windows = slices.Clone(r.Windows)
	}
	r.Windows[i].Own++
	return cur, true
}

// OwnOpen reports whether TakeOwn would grant a request at now.
func (r *RateLedger) OwnOpen(limit int, now time.Time) bool {
	cur := WindowOf(now)
	if now.Sub(cur) >= RateAhead {
		return false
	}
	i := r.index(cur)
	return i < 0 || r.Windows[i].total() < limit
}

// NextOwnOpen is when a queued waiter may next be granted, for a ledger that grants none
// at now: the start of the next window.
func NextOwnOpen(now time.Time) time.Time { return WindowOf(now).Add(RateWindow) }

// AddOwn counts n requests of window as granted to queued waiters (the grants a limiter
// made before it leased budgets).
func (r *RateLedger) AddOwn(window time.Time, n int) {
	if n <= 0 || window.IsZero() {
		return
	}
	r.window(window)
	r.Windows[r.index(window)].Own += n
}

// Lent returns how many of window's requests are lent out, to holders and to the queue.
func (r *RateLedger) Lent(window time.Time) int {
	if i := r.index(window); i >= 0 {
		return r.Windows[i].total()
	}
	return 0
}

// window returns window's entry, adding it (in order) if it is not there; the ledger's
// slices are cloned first, so that copies stay independent.
func (r *RateLedger) window(win time.Time) RateLent {
	r.Windows = slices.Clone(r.Windows)
	if i := r.index(win); i >= 0 {
		return r.Windows[i]
	}
	i, _ := slices.BinarySearchFunc(r.Windows, win, func(w RateLent, t time.Time) int { return w.Window.Compare(t) })
	r.Windows = slices.Insert(r.Windows, i, RateLent{Window: win})
	return r.Windows[i]
}

// add lends n more of win to holder.
func (r *RateLedger) add(win time.Time, holder string, n int) {
	i := r.index(win)
	w := r.Windows[i]
	held := slices.Clone(w.Held)
	j, ok := slices.BinarySearchFunc(held, holder, func(h RateHeld, s string) int { return strings.Compare(h.Holder, s) })
	if ok {
		held[j].N += n
	} else {
		held = slices.Insert(held, j, RateHeld{Holder: holder, N: n})
	}
	w.Held = held
	r.Windows[i] = w
}

func (r *RateLedger) index(win time.Time) int {
	return slices.IndexFunc(r.Windows, func(w RateLent) bool { return w.Window.Equal(win) })
}

// setWant records holder's want at now.
func (r *RateLedger) setWant(holder string, want int, now time.Time) {
	ws := slices.Clone(r.Wants)
	i, ok := slices.BinarySearchFunc(ws, holder, func(w RateWant, s string) int { return strings.Compare(w.Holder, s) })
	switch {
	case ok && want <= 0:
		ws = slices.Delete(ws, i, i+1)
	case ok:
		ws[i] = RateWant{Holder: holder, Want: want, At: now}
	case want > 0:
		ws = slices.Insert(ws, i, RateWant{Holder: holder, Want: want, At: now})
	}
	r.Wants = ws
}

// prune forgets the windows that are over and the wants that no longer count at now.
func (r *RateLedger) prune(now time.Time) {
	cur := WindowOf(now)
	if len(r.Windows) > 0 && r.Windows[0].Window.Before(cur) {
		r.Windows = slices.DeleteFunc(slices.Clone(r.Windows), func(w RateLent) bool { return w.Window.Before(cur) })
	}
	if slices.ContainsFunc(r.Wants, func(w RateWant) bool { return now.Sub(w.At) >= RateWantTTL }) {
		r.Wants = slices.DeleteFunc(slices.Clone(r.Wants), func(w RateWant) bool { return now.Sub(w.At) >= RateWantTTL })
	}
}

// LocalRate is a gate's standing at a rate-limited endpoint whose limiter leases budgets:
// the shares it holds and has used, per window, and the attempts it told to come back in
// each coming window. It is part of LocalLease: the gate locks around it and supplies the
// clock.
type LocalRate struct {
	// Held are the shares held, oldest first, with how many of each were used.
	Held []LocalShare
	// Booked counts the attempts told to come back in each coming window, oldest first.
	Booked []RateShare
	// Share is what this gate expects of the windows it holds no share of yet: what the
	// last renewal said it would be lent of a window not lent yet (RateLedger.Expect), or
	// the share it lent of its furthest window if more (0: not heard yet).
	Share int
	// Turned counts the attempts turned away for want of a share since the last renewal.
	Turned int
	// Asked is set once a renewal has asked for shares.
	Asked bool
	// Late is how late booked attempts come back, as a moving average: a timer fires after
	// its time, and its workflow task and attempt start later still on a busy worker.
	// Bookings are told to come back that much before their time.
	Late time.Duration
	// Due holds when each booked attempt (by waiter) was told to come back, and the window
	// it was booked for, until it does.
	Due map[string]Booking
}

// Booking is when a booked attempt was told to come back (At) and the window it is for.
type Booking struct {
	At, Window time.Time
}

// MaxRateLate bounds LocalRate.Late.
const MaxRateLate = 2 * time.Second

// Back notes that waiter came back at now: if it was booked, how late it came (Late).
func (r *LocalRate) Back(waiter string, now time.Time) {
	due, ok := r.Due[waiter]
	if !ok {
		return
	}
	delete(r.Due, waiter)
	late := min(max(now.Sub(due.At), 0), MaxRateLate)
	r.Late += (late - r.Late) / 4
}

// Asking marks a renewal as asking for shares: the attempts turned away are in its want.
func (r *LocalRate) Asking() { r.Turned, r.Asked = 0, true }

// LocalShare is a share held and how much of it was used.
type LocalShare struct {
	RateShare
	Used int
}

// Heard takes the shares a renewal returned at now (each the holder's whole share of its
// window: shares only grow), and what it expects of a window not lent yet (RateExpect).
func (r *LocalRate) Heard(shares []RateShare, expect int, now time.Time) {
	r.prune(now)
	for _, s := range shares {
		i := slices.IndexFunc(r.Held, func(l LocalShare) bool { return l.Window.Equal(s.Window) })
		if i >= 0 {
			r.Held[i].N = max(r.Held[i].N, s.N)
			continue
		}
		if s.Window.Before(WindowOf(now)) {
			continue
		}
		r.Held = append(r.Held, LocalShare{RateShare: s})
	}
	slices.SortFunc(r.Held, func(a, b LocalShare) int { return a.Window.Compare(b.Window) })
	r.Share = max(expect, 1)
	if len(shares) > 0 {
		r.Share = max(r.Share, shares[len(shares)-1].N)
	}
}

// Expect is how much of a window nobody holds a share of yet holder could be lent at now,
// at its first ask, if it wanted it all and the others what they last asked for: an even
// split among the holders that want some (itself among them), or what the others leave
// if more. A gate books attempts for the coming windows by it.
func (r *RateLedger) Expect(holder string, limit int, now time.Time) int {
	active, others := 1, 0
	for _, w := range r.Wants {
		if w.Holder != holder && w.Want > 0 && now.Sub(w.At) < RateWantTTL {
			active++
			others += min(w.Want, limit)
		}
	}
	return max((limit+active-1)/active, limit-others)
}

// Has reports whether a request may start at now under a share held: its window holds now
// within the send margin (InWindow) and has some left.
func (r *LocalRate) Has(now time.Time) bool { return r.at(now) >= 0 }

// lead returns the index of the share of the window after now's, when now is in the last
// RateSendMargin of its window (where no request may start) and that share has some left;
// -1 otherwise. An attempt admitted on it waits for its window to begin, at most
// RateSendMargin, in its activity: a durable timer could not bring it back sooner than
// RateTimerFloor, past the send margin of the next window too.
func (r *LocalRate) lead(now time.Time) int {
	cur := WindowOf(now)
	if InWindow(cur, now) {
		return -1
	}
	next := cur.Add(RateWindow)
	return slices.IndexFunc(r.Held, func(l LocalShare) bool { return l.Window.Equal(next) && l.Used < l.N })
}

// admitting returns the index of the share an attempt at now may be admitted on: the one
// holding now (at), or in the send margin the next window's (lead); -1 if none. A request
// admitted on a lead starts as its window begins.
func (r *LocalRate) admitting(now time.Time) int {
	if i := r.at(now); i >= 0 {
		return i
	}
	return r.lead(now)
}

// use takes one request of share i and returns its window; ok is false for i < 0.
func (r *LocalRate) use(i int) (window time.Time, ok bool) {
	if i < 0 {
		return time.Time{}, false
	}
	r.Held[i].Used++
	return r.Held[i].Window, true
}

func (r *LocalRate) at(now time.Time) int {
	return slices.IndexFunc(r.Held, func(l LocalShare) bool { return InWindow(l.Window, now) && l.Used < l.N })
}

// Take uses one request of the share that holds now and returns its window; ok is false
// when there is none (Has).
func (r *LocalRate) Take(now time.Time) (window time.Time, ok bool) { return r.use(r.at(now)) }

// Untake gives back one request of window's share, taken for an attempt that did not start
// (its second was over before it could, or the cap had no room).
func (r *LocalRate) Untake(window time.Time) {
	if i := slices.IndexFunc(r.Held, func(l LocalShare) bool { return l.Window.Equal(window) }); i >= 0 && r.Held[i].Used > 0 {
		r.Held[i].Used--
	}
}

// Book tells waiter's attempt, which finds no share at now, when to come back: Late before
// its place, at least RateTimerFloor from now, and at most RateBookLatest into its
// window: in the first window
// from then that has not yet as many attempts booked as this gate expects to hold of it
// (its share if it holds one, else Share, else limit before any renewal has answered),
// plus an eighth (at least one) for the attempts that will not come back (run by another
// worker, or cancelled). The attempts booked for a window come back spread over
// RateBookSpread from RateBookStart into it.
func (r *LocalRate) Book(limit int, waiter string, now time.Time) time.Time {
	r.prune(now)
	r.Turned++
	first := now.Add(RateTimerFloor + r.Late)
	for win := WindowOf(first); ; win = win.Add(RateWindow) {
		if first.Sub(win) > RateBookLatest {
			continue
		}
		expect := r.Share
		if i := slices.IndexFunc(r.Held, func(l LocalShare) bool { return l.Window.Equal(win) }); i >= 0 {
			expect = max(r.Held[i].N-r.Held[i].Used, expect)
		}
		if expect <= 0 {
			expect = limit
		}
		room := expect + (expect+7)/8
		i, found := slices.BinarySearchFunc(r.Booked, win, func(b RateShare, t time.Time) int { return b.Window.Compare(t) })
		if !found {
			r.Booked = slices.Insert(r.Booked, i, RateShare{Window: win})
		}
		if n := r.Booked[i].N; n < room {
			r.Booked[i].N++
			at := win.Add(RateBookStart + time.Duration(int64(RateBookSpread)*int64(n)/int64(room)))
			if at.Before(first) {
				at = first
			}
			at = at.Add(-r.Late)
			if waiter != "" {
				if r.Due == nil {
					r.Due = map[string]Booking{}
				}
				r.Due[waiter] = Booking{At: at, Window: win}
			}
			return at
		}
	}
}

// RateOverdue is how long after its time a booked attempt that has not come back yet is
// still counted as coming (LocalRate.Want): a timer the server fires late, a workflow
// task that waits for a busy worker.
const RateOverdue = 5 * time.Second

// Want is how many requests per window to ask for at now: the attempts booked for the
// coming windows (every attempt turned away is) and those booked for a window already
// over that have not come back yet (overdue by less than RateOverdue: they come any
// moment), or twice what the current and last windows used, at most limit.
func (r *LocalRate) Want(limit int, now time.Time) int {
	r.prune(now)
	pending := r.pending() + r.overdue(now)
	used := 0
	cur := WindowOf(now)
	for _, l := range r.Held {
		if !l.Window.Before(cur.Add(-RateWindow)) && !l.Window.After(cur) {
			used = max(used, l.Used)
		}
	}
	return min(max(pending, 2*used), max(limit, 0))
}

// overdue is how many booked attempts were booked for a window before the current one and
// have not come back, told to by less than RateOverdue ago.
func (r *LocalRate) overdue(now time.Time) int {
	n := 0
	cur := WindowOf(now)
	for _, b := range r.Due {
		if b.Window.Before(cur) && now.Sub(b.At) < RateOverdue {
			n++
		}
	}
	return n
}

// pending is how many attempts are booked for the coming windows.
func (r *LocalRate) pending() int {
	n := 0
	for _, b := range r.Booked {
		n += b.N
	}
	return n
}

// Holding reports whether the gate has anything to keep at now: shares of coming windows,
// attempts booked, or attempts turned away not yet asked for.
func (r *LocalRate) Holding(now time.Time) bool {
	r.prune(now)
	return len(r.Booked) > 0 || r.Turned > 0 || slices.ContainsFunc(r.Held, func(l LocalShare) bool { return l.Used < l.N })
}

// prune forgets the windows over at now, and the bookings due a minute ago or more.
func (r *LocalRate) prune(now time.Time) {
	for w, due := range r.Due {
		if now.Sub(due.At) >= time.Minute {
			delete(r.Due, w)
		}
	}
	cur := WindowOf(now)
	r.Held = slices.DeleteFunc(r.Held, func(l LocalShare) bool { return l.Window.Before(cur) })
	// An attempt booked for the current window has come back, or will find its share.
	r.Booked = slices.DeleteFunc(r.Booked, func(b RateShare) bool { return !b.Window.After(cur) })
}

// RateLeased reports whether the gate admits this endpoint's attempts against leased rate
// budgets (LocalRate): a rate-limited endpoint whose limiter leases them.
func (h *LocalLease) RateLeased() bool {
	return h.Snapshot.RateLimit > 0 && h.Snapshot.RateLeased
}

// AdmitRate takes room for one attempt of waiter to a rate-limited endpoint that leases
// budgets: what Admit asks (a permit, the circuit closed) and a request of a share holding
// now. It returns the window the attempt's request must start in (InWindow). A booked
// waiter's return tells how late bookings come back (LocalRate.Back).
//
// While the endpoint's queue drains through the shares (RateQueued), an attempt that holds
// no pass is not admitted: the shares go to the queue first (AdmitRatePass).
func (h *LocalLease) AdmitRate(waiter string, now time.Time, leaseOpen, stopping bool) (time.Time, bool) {
	h.Rate.Back(waiter, now)
	i := h.Rate.admitting(now)
	if !h.RateLeased() || h.RateQueued() || i < 0 || !h.admitRoom(leaseOpen, stopping) {
		return time.Time{}, false
	}
	return h.Rate.use(i)
}

// Unlead takes back an admission AdmitRate made at now on the next window's share (a lead,
// window after now) that may not wait for its window inside its activity, because as many
// attempts wait in the gate's activities as its bound allows (MaxHoldingAll): the room and
// the share's request go back, and the attempt is booked for a coming second (Book) on a
// durable timer, as HoldRate books one that finds no share. It returns when to come back.
func (h *LocalLease) Unlead(waiter string, window, now time.Time) time.Time {
	h.Release()
	h.Rate.Untake(window)
	return h.Rate.Book(h.Snapshot.RateLimit, waiter, now)
}

// HoldRate says what an attempt that AdmitRate turned away does: what Hold says when the
// breaker, the queue or the cap holds it back or a share is held now (the cap's lease is
// what it waits for), or else HoldBooked, coming back at the returned time (Book). A
// share held now that this gate's pass-holders wait for (RateQueued with nobody queued)
// is theirs: the attempt is booked.
func (h *LocalLease) HoldRate(waiter string, now time.Time) (HoldKind, time.Time) {
	s := h.Snapshot
	if s.Disabled || s.Circuit != CircuitClosed || h.Tripped || s.Queue > 0 || (h.Rate.admitting(now) >= 0 && !h.RateQueued()) {
		return h.Hold(), time.Time{}
	}
	return HoldBooked, h.Rate.Book(s.RateLimit, waiter, now)
}

// RateWant is what a renewal asks of the rate budget at now (LocalRate.Want); 0 for an
// endpoint that does not lease budgets, or while stopping.
//
// The pass-holders waiting at the gate for a share (Passing) are asked for too, on top of
// the attempts booked.
func (h *LocalLease) RateWant(stopping bool, now time.Time) int {
	if !h.RateLeased() || stopping {
		return 0
	}
	limit := h.Snapshot.RateLimit
	want := h.Rate.Want(limit, now)
	if h.Passing > 0 {
		want = min(max(want, h.Rate.pending()+h.Passing), max(limit, 0))
	}
	return want
}

// RateAction adjusts the periodic pass's action (Background) for an endpoint that leases
// budgets: renew while attempts are booked or were turned away, so that the coming
// windows' shares come in time, and never drop what is held.
func (h *LocalLease) RateAction(act Action, stopping bool, now time.Time) Action {
	if !h.RateLeased() || h.Renewing {
		return act
	}
	if !stopping && (act == Wait || act == Drop || act == Report) && h.Rate.Want(h.Snapshot.RateLimit, now) > 0 {
		return Renew
	}
	if act == Drop && h.Rate.Holding(now) {
		return Wait
	}
	return act
}

// LeaseRates makes the limiter lease rate budgets to the holders from now on, counting the
// grants it made for the current target window (Rate) as its queue's.
func (g *Limiter) LeaseRates() {
	if g.RateLeased {
		return
	}
	g.RateLeased = true
	g.RateBudget.AddOwn(g.Rate.Window, g.Rate.Granted)
}

// lendRate lends holder r its shares of the coming windows, for a limiter that leases rate
// budgets; nothing new while the circuit is not closed, nor while others are queued unless
// the queue drains through the shares (DrainRates).
func (g *Limiter) lendRate(now time.Time, r LeaseRequest, closed bool) []RateShare {
	if !g.RateLeased || g.Config.RateLimit <= 0 {
		return nil
	}
	hold := !closed || (len(g.Ledger.Waiting) > 0 && !g.RatePasses)
	return g.RateBudget.Lend(r.Holder, r.RateWant, g.Config.RateLimit, hold, now)
}

// rateExpect is what holder may expect of a window not lent yet at now (RateLedger.Expect).
func (g *Limiter) rateExpect(holder string, now time.Time) int {
	if !g.RateLeased || g.Config.RateLimit <= 0 {
		return 0
	}
	return g.RateBudget.Expect(holder, g.Config.RateLimit, now)
}

// rateOpen reports whether the rate limit lets a queued waiter be granted at now.
func (g *Limiter) rateOpen(now time.Time) bool {
	if g.RateLeased && g.Config.RateLimit > 0 {
		return g.RateBudget.OwnOpen(g.Config.RateLimit, now)
	}
	return g.Rate.Open(now, g.Config.RateLimit)
}

// takeRate counts a grant made at now to a queued waiter and returns its window.
func (g *Limiter) takeRate(now time.Time) time.Time {
	if g.RateLeased {
		w, _ := g.RateBudget.TakeOwn(g.Config.RateLimit, now)
		return w
	}
	return g.Rate.Take(now)
}

// nextRateOpen is when a waiter held back by the rate limit may next be granted.
func (g *Limiter) nextRateOpen(now time.Time) time.Time {
	if g.RateLeased {
		return NextOwnOpen(now)
	}
	return NextOpen(now)
}
