package policy

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

// closedSnapshot is an endpoint with a closed circuit, cap capNow and free permits nobody holds.
func closedSnapshot(capNow, free int) Snapshot {
	return Snapshot{Circuit: CircuitClosed, Ticket: Ticket{Epoch: 1, Kind: TicketNormal}, Cap: capNow, Free: free,
		Threshold: 5, Slow: duration.Duration(1500 * time.Millisecond)}
}

// renewedLease holds a lease of permits at an endpoint whose cap is all leased.
func renewedLease(permits int) LocalLease {
	var h LocalLease
	h.Heard(closedSnapshot(100, 0), true, permits, 0)
	return h
}

func TestLocalLeaseAdmit(t *testing.T) {
	var unknown LocalLease
	if unknown.Admit(true, false) {
		t.Error("admitted before the endpoint answered")
	}
	h := renewedLease(2)
	for i := range 2 {
		if !h.Admit(true, false) {
			t.Fatalf("attempt %d: not admitted within the lease of 2", i+1)
		}
	}
	if h.Admit(true, false) {
		t.Error("admitted a third attempt on a lease of 2 with nothing free")
	}
	if h.InUse != 2 || h.Peak != 2 || !h.Used {
		t.Errorf("after two admissions: %+v", h)
	}
	for name, c := range map[string]struct {
		h             LocalLease
		open, stopped bool
	}{
		"window closed": {renewedLease(5), false, false},
		"stopping":      {renewedLease(5), true, true},
		"circuit open":  {func() LocalLease { h := renewedLease(5); h.Snapshot.Circuit = CircuitOpen; return h }(), true, false},
		"tripped":       {func() LocalLease { h := renewedLease(5); h.Tripped = true; return h }(), true, false},
	} {
		if c.h.Admit(c.open, c.stopped) {
			t.Errorf("%s: admitted", name)
		}
	}
	// While a renewal asking for 1 is in flight, at most 1 runs: the lease may shrink to it.
	h = renewedLease(4)
	h.StartRenewal(1)
	if !h.Admit(true, false) || h.Admit(true, false) {
		t.Errorf("during a renewal asking for 1: %+v", h)
	}
}

func TestLocalLeaseSpare(t *testing.T) {
	cases := []struct {
		name       string
		snap       Snapshot
		spare      int
		wantHold   HoldKind
		wantDemand int
	}{
		{"cold, default cap", closedSnapshot(100, 100), 4, HoldLease, 1},
		{"cold, cap 8", closedSnapshot(8, 8), 2, HoldLease, 1},
		{"cold, cap 3: no spare", closedSnapshot(3, 3), 0, HoldLease, 1},
		{"cold, 2 free", closedSnapshot(100, 2), 2, HoldQueue, 0},
		{"others queued", func() Snapshot { s := closedSnapshot(100, 50); s.Queue = 3; return s }(), 0, HoldQueue, 0},
		{"open", func() Snapshot { s := closedSnapshot(100, 100); s.Circuit = CircuitOpen; return s }(), 0, HoldQueue, 0},
		{"open, queue full", func() Snapshot {
			s := closedSnapshot(100, 100)
			s.Circuit, s.Queue, s.QueueFull = CircuitOpen, 10, true
			return s
		}(), 0, HoldLater, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h LocalLease
			h.Heard(c.snap, false, 0, 0)
			if h.Spare != c.spare {
				t.Fatalf("spare %d, want %d", h.Spare, c.spare)
			}
			admitted := 0
			for h.Admit(false, false) { // no lease: the window is irrelevant
				admitted++
			}
			if admitted != c.spare {
				t.Errorf("admitted %d without a lease, want %d", admitted, c.spare)
			}
			if k := h.Hold(); k != c.wantHold || h.Demand != c.wantDemand {
				t.Errorf("hold %v demand %d, want %v %d", k, h.Demand, c.wantHold, c.wantDemand)
			}
			// Demand (for a bigger lease) goes into the next renewal's ask.
			want := admitted
			if admitted > 0 || c.wantDemand > 0 {
				want = max(admitted+c.wantDemand, 2*admitted)
			}
			if w := h.Want(false); w != want {
				t.Errorf("wants %d after %d running and %d turned away for want of a lease, want %d", w, admitted, c.wantDemand, want)
			}
		})
	}
}

func TestSparePermitsBound(t *testing.T) {
	for capNow := 1; capNow <= MaxMaxInFlight; capNow++ {
		s := SparePermits(capNow)
		if s < 0 || s > 4 || 4*s > capNow {
			t.Fatalf("SparePermits(%d) = %d: must be within 0..4 and at most a quarter of the cap", capNow, s)
		}
	}
}

func TestLocalLeaseTripAndSpread(t *testing.T) {
	h := renewedLease(10)
	var spreads []float64
	trips := 0
	for i := range 6 { // six attempts in flight at once, all failing
		if !h.Admit(true, false) {
			t.Fatalf("attempt %d not admitted", i+1)
		}
	}
	for range 6 {
		s, failed, trip := h.Finish(false, false)
		if !failed {
			t.Fatal("a failure was not reported as failed")
		}
		spreads = append(spreads, s)
		if trip {
			trips++
		}
	}
	if trips != 1 || !h.Tripped || h.TripSeq != 5 {
		t.Errorf("after 6 failures with limit 5: %d trips, %+v", trips, h)
	}
	want := []float64{0, 0.5, 0.25, 0.75, 0.125, 0.625}
	for i := range want {
		if spreads[i] != want[i] {
			t.Errorf("failure %d spread %v, want %v", i+1, spreads[i], want[i])
		}
	}
	if h.Admit(true, false) {
		t.Error("a tripped holding admitted")
	}
	if k := h.Hold(); k != HoldQueue {
		t.Errorf("a tripped holding's turned-away attempt: %v, want HoldQueue", k)
	}
	// An answer given before the endpoint workflow heard the tripping failure does not untrip it.
	h.Heard(h.Snapshot, true, 10, 4)
	if !h.Tripped {
		t.Error("untripped by an answer that had not seen the tripping failure")
	}
	// One that had seen it, and still says closed (other workers' successes came between), does.
	h.Heard(h.Snapshot, false, 0, 6)
	if h.Tripped || h.Streak != 0 {
		t.Errorf("not untripped after the endpoint workflow saw the failures: %+v", h)
	}
	// A success resets the streak.
	h.Admit(true, false)
	if _, failed, _ := h.Finish(true, false); failed || h.Streak != 0 {
		t.Errorf("success: failed=%v streak=%d", failed, h.Streak)
	}
}

func TestLocalLeaseWant(t *testing.T) {
	h := renewedLease(8)
	if w := h.Want(false); w != 0 {
		t.Errorf("idle holding wants %d, want 0 (give everything back)", w)
	}
	h.Admit(true, false)
	h.Admit(true, false)
	h.Admit(true, false)
	if w := h.Want(false); w != 6 {
		t.Errorf("busy holding (peak 3) wants %d, want 6", w)
	}
	h.Demand = 5
	if w := h.Want(false); w != 8 {
		t.Errorf("3 running and 5 turned away: wants %d, want 8", w)
	}
	if w := h.Want(true); w != 3 {
		t.Errorf("stopping: wants %d, want only what runs (3)", w)
	}
}

func TestLocalLeaseBackground(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	fast := []Outcome{{At: now, OK: true, Latency: duration.Duration(20 * time.Millisecond)}}
	slow := []Outcome{{At: now, OK: true, Latency: duration.Duration(2 * time.Second)}}
	failed := []Outcome{{At: now, OK: false}}
	cold := func() LocalLease { var h LocalLease; h.Heard(closedSnapshot(100, 100), false, 0, 0); return h }
	busyCold := func() LocalLease { h := cold(); h.Admit(false, false); return h }
	cases := []struct {
		name                     string
		h                        LocalLease
		outs                     []Outcome
		closing, stopping, stale bool
		want                     Action
	}{
		{"lease, outcomes to report", renewedLease(2), fast, false, false, false, Renew},
		{"lease, idle permits to give back", renewedLease(2), nil, false, false, false, Renew},
		{"lease, busy, window closing", func() LocalLease { h := renewedLease(2); h.Admit(true, false); return h }(), nil, true, false, false, Renew},
		{"lease, busy, window open", func() LocalLease { h := renewedLease(2); h.Admit(true, false); return h }(), nil, false, false, false, Wait},
		{"renewal in flight", func() LocalLease { h := renewedLease(2); h.StartRenewal(2); return h }(), fast, true, false, false, Wait},
		{"no lease, turned away: ask for one", func() LocalLease { h := cold(); h.Demand = 1; return h }(), nil, false, false, false, Renew},
		{"no lease, a fast success: nothing", busyCold(), fast, false, false, false, Wait},
		{"no lease, a failure: report", busyCold(), failed, false, false, false, Report},
		{"no lease, a slow success: report", busyCold(), slow, false, false, false, Report},
		{"no lease, stopping with outcomes: report", busyCold(), fast, false, true, false, Report},
		{"nothing held, nothing told", renewedLease(0), nil, false, false, false, Drop},
		{"idle with fast outcomes: keep", func() LocalLease { h := cold(); h.Used = false; return h }(), fast, false, false, false, Wait},
		{"idle with stale fast outcomes: drop", cold(), fast, false, false, true, Drop},
	}
	for _, c := range cases {
		if got := c.h.Background(c.outs, c.closing, c.stopping, c.stale); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	many := make([]Outcome, MaxUntold)
	for i := range many {
		many[i] = fast[0]
	}
	h := busyCold()
	if !h.Worth(many) {
		t.Errorf("%d untold outcomes are not worth a report", MaxUntold)
	}
	if !Stale(fast, now.Add(6*time.Minute), 5*time.Minute) || Stale(fast, now.Add(time.Minute), 5*time.Minute) {
		t.Error("Stale does not follow the window")
	}
}

func TestLocalLeaseGrowing(t *testing.T) {
	var h LocalLease
	h.Heard(closedSnapshot(100, 100), false, 0, 0)
	for i := range h.Spare {
		if h.Growing() {
			t.Fatalf("asks for a lease with %d of %d spare permits taken", i, h.Spare)
		}
		h.Admit(false, false)
	}
	if !h.Growing() {
		t.Error("every spare permit taken and the endpoint has more free: should ask for a lease")
	}
	h.StartRenewal(h.Want(false))
	if h.Growing() {
		t.Error("asks again while a renewal is in flight")
	}
	var full LocalLease
	full.Heard(closedSnapshot(100, 4), false, 0, 0)
	for full.Admit(false, false) {
	}
	if full.Growing() {
		t.Error("asks for a lease though the endpoint has nothing more free")
	}
}

func TestQueueFullRecheck(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	if d := QueueFullRecheck(time.Time{}, now); d != time.Second+time.Minute {
		t.Errorf("no probe due: %s, want 1m1s", d)
	}
	if d := QueueFullRecheck(now.Add(2*time.Minute), now); d != 3*time.Minute+time.Second {
		t.Errorf("probe in 2m: %s, want 3m1s", d)
	}
	if d := QueueFullRecheck(now.Add(time.Hour), now); d != MaxQueuedWait {
		t.Errorf("probe in 1h: %s, want at most %s", d, MaxQueuedWait)
	}
}

// TestHoldingKeepsLeaseForTurnedAway: an endpoint with no spare permits (cap under 4): the
// attempt turned away waits a renewal, and the lease asked for it is not given back as idle
// before it comes back.
func TestLocalLeaseKeepsLeaseForTurnedAway(t *testing.T) {
	var h LocalLease
	h.Heard(closedSnapshot(3, 3), false, 0, 0)
	if h.Admit(false, false) {
		t.Fatal("admitted with no lease and no spare permit")
	}
	if k := h.Hold(); k != HoldLease {
		t.Fatalf("hold %v, want HoldLease", k)
	}
	if h.Background(nil, false, false, true) != Renew {
		t.Fatal("the turned-away attempt does not ask for a lease")
	}
	want := h.Want(false)
	h.StartRenewal(want)
	h.Heard(closedSnapshot(3, 2), true, want, 0)
	if want != 1 || h.Permits != 1 {
		t.Fatalf("asked for %d, holds %d; want 1 and 1", want, h.Permits)
	}
	if a := h.Background(nil, false, false, true); a != Wait {
		t.Fatalf("pass before the attempt came back: %v, want Wait (not give the lease back)", a)
	}
	if !h.Admit(true, false) {
		t.Fatal("the attempt that came back was not admitted under the lease")
	}
}

// TestLocalLeaseSettles: a renewal that lent less than the gate could admit meanwhile has
// the endpoint keep the difference counted; the gate renews at its next pass to give it
// back, even with no lease left, and only once.
func TestLocalLeaseSettles(t *testing.T) {
	h := renewedLease(4)
	h.StartRenewal(8) // may admit up to its 4 while the renewal is on its way
	h.Heard(closedSnapshot(4, 0), true, 0, h.Seq)
	if !h.Settling() {
		t.Fatal("lent 0 after a flight of 4: not settling")
	}
	h.InUse = 1 // admitted while the renewal was on its way
	if h.SettleNow() {
		t.Fatal("settles now with 1 running on a lease of 0: the endpoint would count it as free")
	}
	h.Finish(true, false)
	if !h.SettleNow() {
		t.Fatal("nothing running beyond the lease: does not settle at once")
	}
	if a := h.Background(nil, false, false, false); a != Renew {
		t.Fatalf("settling with no lease and nothing running: %v, want Renew", a)
	}
	h.StartRenewal(h.Want(false))
	if h.Flight != 0 || h.Settling() {
		t.Fatalf("the settling renewal: flight %d, settle %v; want 0, false", h.Flight, h.Settling())
	}
	h.Heard(closedSnapshot(4, 4), true, 0, h.Seq)
	if h.Settling() {
		t.Fatal("lent 0 after a flight of 0: settling again")
	}
	if a := h.Background(nil, false, false, false); a == Renew {
		t.Fatal("settled, idle, no lease: renews again")
	}
}

// TestLocalLeaseSettlesSpares: a gate running on spare permits alone asks for a lease and
// gets none (others queue); the endpoint counts its running attempts until it renews
// again, which it does once they end, though it holds no lease.
func TestLocalLeaseSettlesSpares(t *testing.T) {
	var h LocalLease
	h.Heard(closedSnapshot(8, 8), false, 0, 0) // 2 spare permits
	if !h.Admit(false, false) {
		t.Fatal("a spare permit not admitted")
	}
	h.StartRenewal(h.Want(false))
	if h.Claim != 1 {
		t.Fatalf("claim %d, want the 1 attempt running", h.Claim)
	}
	queued := closedSnapshot(8, 0)
	queued.Queue = 3
	h.Heard(queued, true, 0, h.Seq)
	if !h.Settling() || h.SettleNow() {
		t.Fatalf("lent 0 while 1 runs: settle %v, now %v; want settling once it ends", h.Settling(), h.SettleNow())
	}
	h.Finish(true, false)
	if !h.SettleNow() || h.Background(nil, false, false, false) != Renew {
		t.Fatal("the spare attempt ended: does not renew to settle")
	}
}

// After a call to the endpoint workflow: more pass-holders waiting for room than it told
// of, or anything waiting after a report, renews now; passes used meanwhile alone are
// reported soon.
func TestAfterTell(t *testing.T) {
	for _, c := range []struct {
		name               string
		h                  LocalLease
		told               int
		renewed, now, soon bool
	}{
		{"nothing new", LocalLease{}, 0, true, false, false},
		{"passes used meanwhile", LocalLease{Passed: 3}, 0, true, false, true},
		{"more pass-holders waiting", LocalLease{Passing: 2, Passed: 3}, 1, true, true, false},
		{"as many as told", LocalLease{Passing: 1}, 1, true, false, false},
		{"waiting after a report", LocalLease{Holding: 1}, 0, false, true, false},
		{"passes after a report", LocalLease{Passed: 1}, 0, false, true, false},
	} {
		if now, soon := c.h.AfterTell(c.told, c.renewed); now != c.now || soon != c.soon {
			t.Errorf("%s: AfterTell = %v, %v; want %v, %v", c.name, now, soon, c.now, c.soon)
		}
	}
}
