package policy

import "testing"

func renewedHolding(permits int) Holding {
	var h Holding
	h.Renewed(permits, Ticket{Epoch: 1, Kind: TicketNormal}, CircuitClosed, 5, 0)
	return h
}

func TestHoldingAdmit(t *testing.T) {
	var unknown Holding
	if unknown.Admit(true, false) {
		t.Error("admitted before any lease was granted")
	}
	h := renewedHolding(2)
	if !h.Admit(true, false) || !h.Admit(true, false) {
		t.Fatal("did not admit within the lease")
	}
	if h.Admit(true, false) {
		t.Error("admitted a third attempt on a lease of 2")
	}
	if h.InUse != 2 || h.Peak != 2 || !h.Used {
		t.Errorf("after two admissions: %+v", h)
	}
	for name, c := range map[string]struct {
		h             Holding
		open, stopped bool
	}{
		"window closed": {renewedHolding(5), false, false},
		"stopping":      {renewedHolding(5), true, true},
		"circuit open":  {func() Holding { h := renewedHolding(5); h.Circuit = CircuitOpen; return h }(), true, false},
		"tripped":       {func() Holding { h := renewedHolding(5); h.Tripped = true; return h }(), true, false},
	} {
		if c.h.Admit(c.open, c.stopped) {
			t.Errorf("%s: admitted", name)
		}
	}
	// While a renewal asking for 1 is in flight, at most 1 runs: the lease may shrink to it.
	h = renewedHolding(4)
	h.StartRenewal(1)
	if !h.Admit(true, false) || h.Admit(true, false) {
		t.Errorf("during a renewal asking for 1: %+v", h)
	}
}

func TestHoldingTripAndSpread(t *testing.T) {
	h := renewedHolding(10)
	var spreads []float64
	trips := 0
	for i := range 6 { // six attempts in flight at once, all failing
		if !h.Admit(true, false) {
			t.Fatalf("attempt %d not admitted", i+1)
		}
	}
	for range 6 {
		s, failed, trip := h.Finish(false, true)
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
	// An answer to a renewal sent before the tripping failure does not untrip it.
	h.Renewed(10, h.Ticket, CircuitClosed, 5, 4)
	if !h.Tripped {
		t.Error("untripped by a renewal that had not carried the tripping failure")
	}
	// One that carried it, and still says closed (other workers' successes came between), does.
	h.Renewed(10, h.Ticket, CircuitClosed, 5, 6)
	if h.Tripped || h.Streak != 0 {
		t.Errorf("not untripped after the endpoint workflow saw the failures: %+v", h)
	}
	// A success resets the streak.
	h.Admit(true, false)
	if _, failed, _ := h.Finish(true, true); failed || h.Streak != 0 {
		t.Errorf("success: failed=%v streak=%d", failed, h.Streak)
	}
}

func TestHoldingWantAndBackground(t *testing.T) {
	h := renewedHolding(8)
	if w := h.Want(0, false); w != 0 {
		t.Errorf("idle holding wants %d, want 0 (give everything back)", w)
	}
	h.Admit(true, false)
	h.Admit(true, false)
	h.Admit(true, false)
	if w := h.Want(0, false); w != 6 {
		t.Errorf("busy holding (peak 3) wants %d, want 6", w)
	}
	if w := h.Want(5, false); w != 8 {
		t.Errorf("3 running and 5 waiting: wants %d, want 8", w)
	}
	if w := h.Want(5, true); w != 3 {
		t.Errorf("stopping: wants %d, want only what runs (3)", w)
	}
	cases := []struct {
		name                       string
		h                          Holding
		pending, closing, stopping bool
		renew, drop                bool
	}{
		{"outcomes to report", renewedHolding(2), true, false, false, true, false},
		{"idle permits to give back", renewedHolding(2), false, false, false, true, false},
		{"nothing held", renewedHolding(0), false, false, false, false, true},
		{"renewal in flight", func() Holding { h := renewedHolding(2); h.StartRenewal(2); return h }(), true, true, false, false, false},
		{"busy, window closing", func() Holding { h := renewedHolding(2); h.Admit(true, false); return h }(), false, true, false, true, false},
		{"busy, window open", func() Holding { h := renewedHolding(2); h.Admit(true, false); return h }(), false, false, false, false, false},
	}
	for _, c := range cases {
		renew, drop := c.h.Background(c.pending, c.closing, c.stopping)
		if renew != c.renew || drop != c.drop {
			t.Errorf("%s: renew %v drop %v, want %v %v", c.name, renew, drop, c.renew, c.drop)
		}
	}
}
