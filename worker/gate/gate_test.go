package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// withLease gives the gate a lease of n permits at endpoint id (a renewal that asks for n
// and gets them), answered at once.
func withLease(t *testing.T, g *Gate, f *fakeEndpoints, id string, n int) {
	t.Helper()
	e := g.entry(id)
	defer g.unref(e)
	if err := g.fresh(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.h.Demand = n
	e.mu.Unlock()
	if err := g.tell(context.Background(), e, policy.Renew); err != nil {
		t.Fatal(err)
	}
	if got := lease(g, id).Permits; got != n {
		t.Fatalf("lease of %d permits, want %d", got, n)
	}
}

// A cold endpoint takes attempts on spare permits with no lease; taking the last spare
// one asks for a lease at once, and an attempt that comes while it is in flight waits for
// it (at most policy.RoomWait) and is admitted under it. The lease's permits then admit more.
func TestSparePermitsThenALease(t *testing.T) {
	f := &fakeEndpoints{view: closedView(8, 8, 5), hold: make(chan *leaseAnswer), leased: make(chan herald.LeaseRequest, 4)}
	t.Cleanup(func() { close(f.hold) })
	g := newGate(f)
	admit(t, g, "ep")
	if n := f.leaseCount(); n != 0 {
		t.Fatalf("%d leases after the first spare permit, want none", n)
	}
	admit(t, g, "ep") // the second and last spare permit (a quarter of 8): ask for a lease now
	req := <-f.leased
	if req.Holder != g.Holder() || req.InUse != 2 || req.Want != 4 || req.TTL.Std() != attemptTimeout+leaseMargin {
		t.Fatalf("lease request %+v, want holder %s, 2 in use, 4 wanted, TTL %s", req, g.Holder(), attemptTimeout+leaseMargin)
	}
	type acquired struct {
		a   *Admission
		h   *herald.Hold
		err error
	}
	third := make(chan acquired, 1)
	go func() {
		a, h, err := g.Acquire(context.Background(), "ep", "delivery-3", nil)
		third <- acquired{a, h, err}
	}()
	f.hold <- &leaseAnswer{permits: 4}
	if r := <-third; r.err != nil || r.a == nil {
		t.Fatalf("third attempt while the lease was in flight: %+v, %+v, %v; want admitted under the lease", r.a, r.h, r.err)
	}
	settle(t, g, "ep")
	if l := lease(g, "ep"); l.Permits != 4 || l.Spare != 2 || l.InUse != 3 || l.Renewing {
		t.Fatalf("after the lease: %+v; want 4 permits, 2 spare, 3 in use", l)
	}
	for range 3 {
		admit(t, g, "ep")
	}
	if l := lease(g, "ep"); l.InUse != 6 {
		t.Fatalf("in use %d, want 6 (4 leased + 2 spare)", l.InUse)
	}
}

// A pass renews a lease with the outcomes since the last one, gives the permits back once
// nothing ran since, and then forgets the endpoint.
func TestRenewalCarriesOutcomesThenGivesBackThenDrops(t *testing.T) {
	f := &fakeEndpoints{view: closedView(8, 8, 5)}
	g := newGate(f)
	withLease(t, g, f, "ep", 4)
	now := time.Now()
	for range 3 {
		a := admit(t, g, "ep")
		g.Finish(context.Background(), a, delivered(now))
	}
	g.pass(context.Background())
	if n := f.leaseCount(); n != 2 {
		t.Fatalf("%d leases, want 2", n)
	}
	req := f.leases[1]
	if len(req.Outcomes) != 3 || !req.Outcomes[0].OK || req.InUse != 0 || req.Want == 0 {
		t.Fatalf("renewal %+v, want 3 delivered outcomes, none in use, permits wanted", req)
	}
	g.pass(context.Background()) // nothing ran since: give the permits back
	if req := f.leases[2]; req.Want != 0 || len(req.Outcomes) != 0 {
		t.Fatalf("idle renewal %+v, want 0 permits, no outcomes", req)
	}
	if l := lease(g, "ep"); l.Permits != 0 {
		t.Fatalf("after giving back: %d permits", l.Permits)
	}
	g.pass(context.Background())
	if entryOf(g, "ep") != nil || f.leaseCount() != 3 {
		t.Fatalf("idle endpoint with no lease: still known %v, %d leases; want dropped, no call", entryOf(g, "ep") != nil, f.leaseCount())
	}
}

// However many attempts arrive at once, the gate admits no more than its lease and spare
// permits; the others are queued at the endpoint workflow in batched signals.
func TestAdmissionUnderTheCapFromManyGoroutines(t *testing.T) {
	f := &fakeEndpoints{view: closedView(5, 5, 5)}
	g := newGate(f)
	withLease(t, g, f, "ep", 5) // all of the cap: no spare permits left
	const n = 50
	var mu sync.Mutex
	var admitted []*Admission
	var queued []string
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			waiter := fmt.Sprintf("delivery-%02d", i)
			a, h, err := g.Acquire(context.Background(), "ep", waiter, nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("%s: %v", waiter, err)
			case a != nil:
				admitted = append(admitted, a)
			case h.Queued:
				queued = append(queued, waiter)
			default:
				t.Errorf("%s: held but not queued: %+v", waiter, h)
			}
		})
	}
	wg.Wait()
	if len(admitted) != 5 || len(queued) != n-5 {
		t.Fatalf("%d admitted, %d queued; want 5 and %d", len(admitted), len(queued), n-5)
	}
	var signalled []string
	for _, w := range f.waits {
		signalled = append(signalled, w...)
	}
	slices.Sort(queued)
	slices.Sort(signalled)
	if !slices.Equal(queued, signalled) || len(f.waits) > len(queued) {
		t.Fatalf("waiters signalled %v in %d signals, want %v", signalled, len(f.waits), queued)
	}
	if len(f.renews) != 0 {
		t.Fatalf("plain waits sent as handing a permit back: %v", f.renews)
	}
	for _, a := range admitted {
		wg.Go(func() { g.Finish(context.Background(), a, delivered(time.Now())) })
	}
	wg.Wait()
	e := entryOf(g, "ep")
	if l := lease(g, "ep"); l.InUse != 0 || len(e.outcomes) != 5 || e.refs != 0 {
		t.Fatalf("after finishing: %d in use, %d outcomes, %d refs; want 0, 5, 0", l.InUse, len(e.outcomes), e.refs)
	}
}

// Many attempts at an endpoint the gate does not know yet share one read of it.
func TestConcurrentAcquiresShareOneRead(t *testing.T) {
	f := &fakeEndpoints{view: closedView(100, 100, 5), grant: 1}
	g := newGate(f)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, _, err := g.Acquire(context.Background(), "ep", "", nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if f.reads != 1 {
		t.Fatalf("%d reads of the endpoint, want 1", f.reads)
	}
}

// A renewal that gets no answer keeps its outcomes for the next one, and leaves the lease
// at what the gate was allowed while it was in flight: the endpoint workflow may still
// take it and cut the lease to what it asked for.
func TestRenewalWithNoAnswer(t *testing.T) {
	f := &fakeEndpoints{view: closedView(8, 8, 5)}
	g := newGate(f)
	withLease(t, g, f, "ep", 4)
	g.Finish(context.Background(), admit(t, g, "ep"), delivered(time.Now()))
	g.pass(context.Background()) // busy: the lease grows to the whole cap
	if l := lease(g, "ep"); l.Permits != 8 || l.Spare != 0 {
		t.Fatalf("after the pass: %+v; want 8 permits, no spare", l)
	}
	g.Finish(context.Background(), admit(t, g, "ep"), failed(time.Now()))
	f.mu.Lock()
	f.hold, f.leased = make(chan *leaseAnswer), make(chan herald.LeaseRequest, 1)
	f.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	told := make(chan error, 1)
	go func() { told <- g.tell(ctx, entryOf(g, "ep"), policy.Renew) }()
	req := <-f.leased
	if len(req.Outcomes) != 1 || req.Outcomes[0].OK || req.Want != 2 {
		t.Fatalf("renewal %+v, want the failure and 2 permits (twice the peak of 1)", req)
	}
	// In flight, the gate admits only what the renewal asked to keep.
	admit(t, g, "ep")
	admit(t, g, "ep")
	if a, h, _ := g.Acquire(context.Background(), "ep", "delivery-3", nil); a != nil || h == nil {
		t.Fatalf("third attempt while the renewal is in flight: admitted")
	}
	cancel() // no answer comes
	if err := <-told; !errors.Is(err, context.Canceled) {
		t.Fatalf("renewal error %v, want canceled", err)
	}
	l := lease(g, "ep")
	if l.Permits != 2 || l.Claim != 0 || l.Renewing {
		t.Fatalf("after no answer: %+v; want 2 permits (of 8), no claim, not renewing", l)
	}
	if outs := entryOf(g, "ep").outcomes; len(outs) != 1 || outs[0].OK {
		t.Fatalf("untold outcomes %+v, want the failure kept", outs)
	}
	f.mu.Lock()
	f.hold, f.leased = nil, nil
	f.mu.Unlock()
	g.pass(context.Background())
	if last := f.leases[len(f.leases)-1]; len(last.Outcomes) != 1 || last.Outcomes[0].OK || last.InUse != 2 {
		t.Fatalf("next renewal %+v, want the kept failure and 2 in use", last)
	}
}

// Finish counts the attempt and returns its room, and a failure its place in the retry
// window; Release returns the room without counting. The breaker's run of failures stops
// the gate at once and tells the endpoint workflow.
func TestFinishReleaseAndTrip(t *testing.T) {
	f := &fakeEndpoints{view: closedView(8, 8, 2), reported: make(chan herald.OutcomeReport)}
	g := newGate(f)
	now := time.Now()
	if _, failed := g.Finish(context.Background(), admit(t, g, "ep"), delivered(now)); failed {
		t.Fatal("a delivered attempt reported as failed")
	}
	if spread, failed := g.Finish(context.Background(), admit(t, g, "ep"), failed(now.Add(time.Second))); !failed || spread != policy.Spread(0) {
		t.Fatalf("failure: spread %v, failed %v; want %v, true", spread, failed, policy.Spread(0))
	}
	g.Release(context.Background(), admit(t, g, "ep"))
	if l := lease(g, "ep"); l.InUse != 0 || l.Seq != 2 {
		t.Fatalf("after two finished and one released: %+v; want 0 in use, 2 outcomes", l)
	}
	if r := g.counts["ep"]; r == nil || r.Attempts != 2 || r.Successes != 1 || r.Failures != 1 {
		t.Fatalf("counts %+v, want 2 attempts: 1 success, 1 failure", r)
	}
	g.Finish(context.Background(), admit(t, g, "ep"), failed(now.Add(2*time.Second))) // the second in a row: trip
	// Before the endpoint workflow has heard of it (its report waits on f.reported).
	_, h, err := g.Acquire(context.Background(), "ep", "delivery-5", nil)
	if err != nil || h == nil || !h.Queued || !strings.Contains(h.Reason, "2 consecutive failures at this worker") {
		t.Fatalf("after the trip: %+v, %v; want queued, the breaker decides", h, err)
	}
	rep := <-f.reported
	settle(t, g, "ep")
	if rep.Holder != g.Holder() || len(rep.Outcomes) != 3 {
		t.Fatalf("report %+v, want this holder's 3 outcomes", rep)
	}
}

// An attempt on a permit of its own reports straight to the endpoint workflow; one that
// does not use it gives it back.
func TestOwnPermits(t *testing.T) {
	f := &fakeEndpoints{view: closedView(8, 8, 5)}
	g := newGate(f)
	ctx := context.Background()
	permit := &policy.Grant{Waiter: "delivery-1", Ticket: policy.Ticket{Epoch: 1}, Until: time.Now().Add(time.Hour)}
	a, h, err := g.Acquire(ctx, "ep", "delivery-1", permit)
	if err != nil || a == nil || a.Waiter != "delivery-1" {
		t.Fatalf("attempt on its own permit: %+v, %+v, %v", a, h, err)
	}
	g.Finish(ctx, a, delivered(time.Now()))
	a, _, _ = g.Acquire(ctx, "ep", "delivery-2", permit)
	g.Release(ctx, a)
	short := &policy.Grant{Waiter: "delivery-3", Until: time.Now().Add(attemptTimeout / 2)}
	key := policy.WaitKey(0, 3, 1)
	if a, h, _ := g.Acquire(WithWaitKey(ctx, key), "ep", "delivery-3", short); a != nil || h == nil || !h.Queued {
		t.Fatalf("a permit that ends before the attempt could: %+v, %+v; want queued again", a, h)
	}
	if a, h, _ := g.Acquire(ctx, "ep", "delivery-4", &policy.Grant{Disabled: true}); a != nil || h == nil || !h.Disabled {
		t.Fatalf("a disabled permit: %+v, %+v; want a disabled hold", a, h)
	}
	var dones []herald.Done
	for _, d := range f.dones {
		dones = append(dones, d...)
	}
	if len(dones) != 2 || dones[0].Waiter != "delivery-1" || dones[0].Outcome == nil || !dones[0].Outcome.OK ||
		dones[1].Waiter != "delivery-2" || dones[1].Outcome != nil {
		t.Fatalf("permits returned %+v; want delivery-1 with its outcome, delivery-2 without", dones)
	}
	if len(f.waits) != 1 || !slices.Equal(f.waits[0], []string{"delivery-3"}) {
		t.Fatalf("waits %v, want delivery-3 queued again", f.waits)
	}
	if !slices.Equal(f.renews, []string{"delivery-3"}) || !slices.Equal(f.keys, []uint32{key}) {
		t.Fatalf("waits handing a permit back %v with keys %v, want delivery-3's (it came with one), with its attempt's key", f.renews, f.keys)
	}
	if l := lease(g, "ep"); l.InUse != 0 || l.Seq != 0 {
		t.Fatalf("own permits touched the local lease: %+v", l)
	}
	if r := g.counts["ep"]; r == nil || r.Attempts != 1 {
		t.Fatalf("counts %+v, want the one attempt made", r)
	}
}

// An endpoint that is not registered is an error of its own, and the gate forgets it.
func TestUnregisteredEndpoint(t *testing.T) {
	f := &fakeEndpoints{viewErr: fmt.Errorf("endpoint ep: %w", herald.ErrNoEndpoint)}
	g := newGate(f)
	if _, _, err := g.Acquire(context.Background(), "ep", "delivery-1", nil); !errors.Is(err, herald.ErrNoEndpoint) {
		t.Fatalf("Acquire: %v, want ErrNoEndpoint", err)
	}
	g.pass(context.Background())
	if entryOf(g, "ep") != nil {
		t.Fatal("the unregistered endpoint is still known after a pass")
	}
}

// When the worker stops, Run gives the leases back, sends the counts, and the gate admits
// nothing more.
func TestRunGivesBackOnStop(t *testing.T) {
	f := &fakeEndpoints{view: closedView(8, 8, 5)}
	g := newGate(f)
	withLease(t, g, f, "ep", 4)
	a := admit(t, g, "ep")
	g.Finish(context.Background(), a, delivered(time.Now()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	cancel()
	<-done
	last := f.leases[len(f.leases)-1]
	if last.Want != 0 || len(last.Outcomes) != 1 {
		t.Fatalf("last renewal %+v, want 0 permits and the outcome", last)
	}
	if got := f.counts[herald.StatsWorkflowID("ep")]; len(got) != 1 || got[0].Counts.Attempts != 1 {
		t.Fatalf("counts sent %+v, want the one attempt", got)
	}
	if a, h, _ := g.Acquire(context.Background(), "ep", "delivery-2", nil); a != nil || h == nil {
		t.Fatal("a stopped gate admitted an attempt")
	}
}
