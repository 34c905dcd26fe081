package gate

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// eventuallyGate polls cond for up to 10 s.
func eventuallyGate(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A pass-holder (woken from the endpoint's queue with policy.Grant.Pass) is admitted under
// the gate's lease though others are queued: the renewal says it waits for room, and the
// next one reports its pass used.
func TestPassHolderAdmittedUnderLease(t *testing.T) {
	v := closedView(4, 0, 5)
	v.Snapshot.Queue = 10
	f := &fakeEndpoints{view: v}
	g := newGate(f)
	pass := &policy.Grant{Waiter: "d1", Pass: true, Until: time.Now().Add(policy.PassTTL)}
	a, h, err := g.Acquire(context.Background(), "ep", "d1", pass)
	if err != nil || a == nil {
		t.Fatalf("pass-holder: %+v, %+v, %v; want admitted", a, h, err)
	}
	if a.Waiter != "" {
		t.Fatalf("pass-holder admitted on a permit of its own (%q): want the lease's", a.Waiter)
	}
	f.mu.Lock()
	first := f.leases[0]
	f.mu.Unlock()
	if first.Passing != 1 || first.Want < 1 {
		t.Fatalf("renewal %+v: want 1 pass-holder waiting, a permit wanted", first)
	}
	eventuallyGate(t, "the pass reported used", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.ContainsFunc(f.leases, func(r herald.LeaseRequest) bool { return slices.Contains(r.Passed, "d1") })
	})
	g.Finish(context.Background(), a, delivered(time.Now()))
	if l := lease(g, "ep"); l.InUse != 0 || l.Holding != 0 || l.Passing != 0 {
		t.Fatalf("after the attempt: %+v; want nothing in use or waiting", l)
	}
}

// Passes used one after another under a lease that has room are reported together: one
// renewal, within policy.PassReportDelay of the first, carries them all, instead of one
// renewal (an update and a task of the endpoint workflow) per woken delivery.
func TestPassesReportedTogether(t *testing.T) {
	v := closedView(8, 0, 5)
	v.Snapshot.Queue = 20
	f := &fakeEndpoints{view: v}
	g := newGate(f)
	g.passReport = 300 * time.Millisecond
	const n = 6
	wave := func(name string) {
		var as []*Admission
		for i := range n {
			w := fmt.Sprintf("%s%d", name, i)
			a, h, err := g.Acquire(context.Background(), "ep", w, &policy.Grant{Waiter: w, Pass: true, Until: time.Now().Add(policy.PassTTL)})
			if err != nil || a == nil {
				t.Fatalf("pass-holder %s: %+v, %+v, %v; want admitted", w, a, h, err)
			}
			as = append(as, a)
		}
		for _, a := range as {
			g.Finish(context.Background(), a, delivered(time.Now()))
		}
	}
	reported := func(name string) (renewals, passes int) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, r := range f.leases {
			k := len(slices.DeleteFunc(slices.Clone(r.Passed), func(w string) bool { return w[:1] != name }))
			if k > 0 {
				renewals++
				passes += k
			}
		}
		return renewals, passes
	}
	// The first wave grows the lease: its pass-holders ask for room, and their renewals
	// carry the passes used so far.
	wave("a")
	eventuallyGate(t, "the first wave's passes reported", func() bool { _, p := reported("a"); return p == n })
	// The second finds room under the lease.
	wave("b")
	eventuallyGate(t, "the second wave's passes reported", func() bool { _, p := reported("b"); return p == n })
	if r, _ := reported("b"); r != 1 {
		t.Errorf("%d passes used under a lease with room were reported by %d renewals, want 1", n, r)
	}
}

// A pass-holder that finds no room under the lease within policy.RoomWait queues again.
func TestPassHolderWithoutRoomQueuesAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("waits policy.RoomWait")
	}
	v := closedView(4, 0, 5)
	v.Snapshot.Queue = 10
	f := &fakeEndpoints{view: v, hold: make(chan *leaseAnswer)}
	stop := make(chan struct{})
	go func() { // every renewal: no permits
		for {
			select {
			case f.hold <- &leaseAnswer{permits: 0}:
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop) })
	g := newGate(f)
	pass := &policy.Grant{Waiter: "d1", Pass: true, Until: time.Now().Add(policy.PassTTL)}
	a, h, err := g.Acquire(context.Background(), "ep", "d1", pass)
	if err != nil || a != nil || h == nil || !h.Queued {
		t.Fatalf("pass-holder without room: %+v, %+v, %v; want queued again", a, h, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.waits) != 1 || !slices.Equal(f.waits[0], []string{"d1"}) {
		t.Fatalf("waits %v, want d1 queued again", f.waits)
	}
	if !slices.Equal(f.renews, []string{"d1"}) {
		t.Fatalf("waits handing a pass back %v, want d1's", f.renews)
	}
}

// At a rate-limited endpoint that drains its queue through the gates' rate shares, a
// pass-holder with no share now waits at the gate for the second its renewal is lent a
// share of, and is admitted in it; an attempt without a pass is not admitted on that share
// while others are queued: it joins the queue.
func TestRatePassHolderWaitsForItsSecond(t *testing.T) {
	v := closedView(4, 4, 5)
	v.Snapshot.Queue = 10
	v.Snapshot.RateLimit, v.Snapshot.RateLeased, v.Snapshot.RatePasses = 5, true, true
	next := policy.WindowOf(time.Now()).Add(policy.RateWindow)
	f := &fakeEndpoints{view: v, shares: []policy.RateShare{{Window: next, N: 1}, {Window: next.Add(policy.RateWindow), N: 1}}}
	g := newGate(f)
	pass := &policy.Grant{Waiter: "d1", Pass: true, Until: time.Now().Add(policy.PassTTL)}
	a, h, err := g.Acquire(context.Background(), "ep", "d1", pass)
	if err != nil || a == nil {
		t.Fatalf("pass-holder: %+v, %+v, %v; want admitted in the next second", a, h, err)
	}
	if now := time.Now(); !a.Window.Equal(policy.WindowOf(now)) || !policy.InWindow(a.Window, now) || a.Window.Before(next) {
		t.Fatalf("admitted at %s for the second %s, want within a share's second from %s", now, a.Window, next)
	}
	f.mu.Lock()
	first := f.leases[0]
	f.mu.Unlock()
	if first.Passing != 1 || first.RateWant < 1 {
		t.Fatalf("renewal %+v: want the pass-holder waiting and a share asked for it", first)
	}
	// Another share is held (the second after), but the queue goes first.
	b, hold, err := g.Acquire(context.Background(), "ep", "d2", nil)
	if err != nil || b != nil || hold == nil || !hold.Queued {
		t.Fatalf("attempt without a pass: %+v, %+v, %v; want queued behind the others", b, hold, err)
	}
	g.Finish(context.Background(), a, delivered(time.Now()))
}

// An attempt to a rate-limited endpoint that leases budgets, which finds a share of its
// second but no room under the lease while the endpoint has permits free
// (policy.HoldLease), is admitted on the share once the renewal it asks for grows the
// lease, within policy.RoomWait: no durable wait.
func TestRateAttemptWaitsForTheLease(t *testing.T) {
	v := closedView(2, 2, 5) // cap 2: no spare permits
	v.Snapshot.RateLimit, v.Snapshot.RateLeased = 5, true
	// Start as a second begins: an attempt in a second's last policy.RateSendMargin may not
	// use its share, and would be booked for a later second instead.
	time.Sleep(time.Until(policy.WindowOf(time.Now()).Add(policy.RateWindow + 10*time.Millisecond)))
	now := policy.WindowOf(time.Now())
	var shares []policy.RateShare
	for s := range 3 {
		shares = append(shares, policy.RateShare{Window: now.Add(time.Duration(s) * policy.RateWindow), N: 5})
	}
	g := gateWithShares(t, v, shares)
	a, h, err := g.Acquire(context.Background(), "ep", "d2", nil)
	if err != nil || a == nil {
		t.Fatalf("attempt with a share and no room: %+v, %+v, %v; want admitted once the lease grows", a, h, err)
	}
	if a.Window.IsZero() || a.Window.After(time.Now()) {
		t.Fatalf("admitted for the second %s at %s: want the share's", a.Window, time.Now())
	}
	g.Finish(context.Background(), a, delivered(time.Now()))
}

// More attempts than the endpoint's cap find no room under the lease while the endpoint has
// some (policy.HoldLease): at most the cap of them wait inside their activities for the
// renewal; the others get their brief durable hold at once.
func TestHoldingBoundedByCap(t *testing.T) {
	const capNow, attempts = 4, 10
	f := &fakeEndpoints{view: closedView(capNow, capNow, 5), hold: make(chan *leaseAnswer)} // renewals never answer
	g := newGate(f)
	g.roomWait = time.Hour // those that wait, wait until the test ends them
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spare, _, err := g.Acquire(ctx, "ep", "d0", nil) // the one spare permit (policy.SparePermits)
	if err != nil || spare == nil {
		t.Fatalf("first attempt: %+v, %v; want admitted on the spare permit", spare, err)
	}
	type result struct {
		a *Admission
		h *herald.Hold
	}
	results := make(chan result, attempts)
	for i := range attempts {
		go func() {
			a, h, _ := g.Acquire(ctx, "ep", fmt.Sprintf("d%d", i+1), nil)
			results <- result{a, h}
		}()
	}
	for range attempts - policy.MaxHolding(capNow) {
		var r result
		select {
		case r = <-results:
		case <-time.After(time.Minute): // they wait for an hour if nothing bounds them
			t.Fatalf("%d attempts waited at the gate, want at most the cap %d", lease(g, "ep").Holding, capNow)
		}
		if r.a != nil || r.h == nil || !r.h.Brief || r.h.Queued {
			t.Fatalf("attempt beyond the cap: %+v, %+v; want a brief durable hold", r.a, r.h)
		}
	}
	if l := lease(g, "ep"); l.Holding != policy.MaxHolding(capNow) {
		t.Fatalf("holding %d; want %d waiting at the gate", l.Holding, policy.MaxHolding(capNow))
	}
	select {
	case r := <-results:
		t.Fatalf("an attempt within the cap stopped waiting: %+v, %+v", r.a, r.h)
	default:
	}
	cancel()
	for range policy.MaxHolding(capNow) {
		if r := <-results; r.a != nil {
			t.Fatalf("waiting attempt admitted without room: %+v", r.a)
		}
	}
	if l := lease(g, "ep"); l.Holding != 0 {
		t.Fatalf("holding %d after the waits ended, want 0", l.Holding)
	}
	g.Finish(context.Background(), spare, delivered(time.Now()))
}

// The gate's bound over all endpoints (Gate.BoundHolding): with half of 6 slots, at most 3
// attempts wait for room however many endpoints have room to give; the others get their
// brief durable hold at once.
func TestHoldingBoundedBySlots(t *testing.T) {
	// 6 attempts that would wait, 2 per endpoint (cap 4 each); renewals never answer.
	const endpoints, each = 3, 2
	f := &fakeEndpoints{view: closedView(4, 4, 5), hold: make(chan *leaseAnswer)}
	g := newGate(f)
	g.roomWait = time.Hour
	g.BoundHolding(6)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var spares []*Admission
	for i := range endpoints { // each endpoint's one spare permit
		a, _, err := g.Acquire(ctx, fmt.Sprintf("ep%d", i), "s", nil)
		if err != nil || a == nil {
			t.Fatalf("first attempt at ep%d: %+v, %v; want admitted on the spare permit", i, a, err)
		}
		spares = append(spares, a)
	}
	results := make(chan *herald.Hold, endpoints*each)
	for i := range endpoints * each {
		go func() {
			_, h, _ := g.Acquire(ctx, fmt.Sprintf("ep%d", i%endpoints), fmt.Sprintf("d%d", i), nil)
			results <- h
		}()
	}
	allowed := int(policy.MaxHoldingAll(6))
	for range endpoints*each - allowed {
		select {
		case h := <-results:
			if h == nil || !h.Brief {
				t.Fatalf("attempt beyond the gate's bound: %+v; want a brief durable hold", h)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%d attempts wait at the gate, want at most %d", g.holding.Load(), allowed)
		}
	}
	if n := g.holding.Load(); n != int64(allowed) {
		t.Fatalf("%d attempts wait at the gate, want %d", n, allowed)
	}
	cancel()
	for range allowed {
		<-results
	}
	if n := g.holding.Load(); n != 0 {
		t.Fatalf("%d attempts wait after the waits ended, want 0", n)
	}
	for _, a := range spares {
		g.Finish(context.Background(), a, delivered(time.Now()))
	}
}

// An attempt to a rate-limited endpoint that comes in a second's last
// policy.RateSendMargin, where no request may start, is admitted on the next second's
// share and returns as that second begins: a durable timer could not bring it back before
// the next second's own margin.
func TestRateAttemptInTheMarginStartsAsTheNextSecondBegins(t *testing.T) {
	v := closedView(100, 100, 5)
	v.Snapshot.RateLimit, v.Snapshot.RateLeased = 5, true
	time.Sleep(time.Until(policy.WindowOf(time.Now()).Add(policy.RateWindow + 10*time.Millisecond)))
	now := policy.WindowOf(time.Now())
	// No share of the current second; one of each of the next two.
	g := gateWithShares(t, v, []policy.RateShare{{Window: now.Add(policy.RateWindow), N: 1}, {Window: now.Add(2 * policy.RateWindow), N: 1}})
	margin := now.Add(policy.RateWindow - policy.RateSendMargin/2)
	if time.Now().After(margin) {
		t.Skip("the shares came too late in the second to test its margin")
	}
	time.Sleep(time.Until(margin))
	a, h, err := g.Acquire(context.Background(), "ep", "d2", nil)
	back := time.Now()
	if err != nil || a == nil {
		t.Fatalf("attempt in the margin: %+v, %+v, %v; want admitted on the next second's share", a, h, err)
	}
	if next := now.Add(policy.RateWindow); !a.Window.Equal(next) || back.Before(next) || !policy.InWindow(a.Window, back) {
		t.Fatalf("admitted for the second %s, back at %s: want the next second, back as it begins", a.Window, back)
	}
	if late := g.Late(context.Background(), a, back); late != nil {
		t.Fatalf("the admitted attempt is late: %+v", late)
	}
	g.Finish(context.Background(), a, delivered(time.Now()))
	// The next second's share is used: another attempt in its margin is booked, not admitted.
	if a, h, err := g.Acquire(context.Background(), "ep", "d3", nil); err != nil || a != nil || h == nil {
		t.Fatalf("attempt past the share: %+v, %+v, %v; want held", a, h, err)
	}
}

// Waits for the coming second count against the gate's bound too (Gate.BoundHolding): in
// a second's margin, with a share of the next second for 3 but room to wait for 1, one
// attempt is admitted and waits for the second to begin; the other two are booked on a
// durable timer at once, and hold no slot.
func TestRateLeadsBoundedBySlots(t *testing.T) {
	v := closedView(100, 100, 5)
	v.Snapshot.RateLimit, v.Snapshot.RateLeased = 5, true
	time.Sleep(time.Until(policy.WindowOf(time.Now()).Add(policy.RateWindow + 10*time.Millisecond)))
	now := policy.WindowOf(time.Now())
	next := now.Add(policy.RateWindow)
	g := gateWithShares(t, v, []policy.RateShare{{Window: next, N: 3}})
	g.BoundHolding(2)
	allowed := policy.MaxHoldingAll(2)
	margin := now.Add(policy.RateWindow - policy.RateSendMargin/2)
	if time.Now().After(margin) {
		t.Skip("the shares came too late in the second to test its margin")
	}
	time.Sleep(time.Until(margin))
	type answer struct {
		a *Admission
		h *herald.Hold
	}
	answers := make(chan answer, 3)
	for i := range 3 {
		go func() {
			a, h, err := g.Acquire(context.Background(), "ep", fmt.Sprintf("d%d", i+2), nil)
			if err != nil {
				t.Errorf("attempt %d: %v", i, err)
			}
			answers <- answer{a, h}
		}()
	}
	admitted := 0
	for range 3 {
		r := <-answers
		switch {
		case r.a != nil:
			admitted++
			if !r.a.Window.Equal(next) || time.Now().Before(next) {
				t.Errorf("admitted for %s and back at %s: want the next second, as it begins", r.a.Window, time.Now())
			}
			g.Finish(context.Background(), r.a, delivered(time.Now()))
		case r.h == nil || !r.h.Brief || !r.h.RetryAt.After(margin):
			t.Errorf("attempt beyond the bound: %+v; want booked on a brief durable hold", r.h)
		}
	}
	if admitted != allowed {
		t.Errorf("%d attempts admitted to wait for the next second, want %d (the bound)", admitted, allowed)
	}
	if p := g.HoldingPeak(); p != int64(allowed) {
		t.Errorf("at most %d attempts waited at once, want %d", p, allowed)
	}
	if n := g.holding.Load(); n != 0 {
		t.Errorf("%d attempts still counted as waiting, want 0", n)
	}
}

// gateWithShares returns a gate over endpoint view v whose renewals lend shares, once a
// first attempt (d1), which finds no share yet, has been booked and its renewal has
// brought them.
func gateWithShares(t *testing.T, v herald.AdmissionView, shares []policy.RateShare) *Gate {
	t.Helper()
	g := newGate(&fakeEndpoints{view: v, shares: shares})
	if a, h, err := g.Acquire(context.Background(), "ep", "d1", nil); err != nil || a != nil || h == nil || h.RetryAt.IsZero() {
		t.Fatalf("first attempt: %+v, %+v, %v; want booked", a, h, err)
	}
	eventuallyGate(t, "the shares", func() bool {
		l := lease(g, "ep")
		return len(l.Rate.Held) > 0 && !l.Renewing
	})
	return g
}
