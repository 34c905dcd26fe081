package policy

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

// TestDefaultRecoveryLadder: the default ladder probes at +1h, +4h, +10h, +22h, then every
// 24h until 30 days after the disable (33 probes), and then never again.
func TestDefaultRecoveryLadder(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	g := NewLimiter(DefaultLimiterConfig())
	g.Disabled = &Disablement{Cause: DisabledFailing, At: t0}
	if !g.StartRecovery(DefaultRecoveryLadder()) || g.StartRecovery(DefaultRecoveryLadder()) {
		t.Fatal("StartRecovery: want true once, then false")
	}
	var offsets []time.Duration
	for {
		at := g.Disabled.Recovery.NextAt
		if at.IsZero() {
			break
		}
		if g.NextDeadline(at.Add(-time.Minute)) != at {
			t.Fatalf("probe %d due at %s: next deadline %s", len(offsets)+1, at, g.NextDeadline(at.Add(-time.Minute)))
		}
		if _, ok := g.BeginProbe(at.Add(-time.Second)); ok {
			t.Fatal("a probe began before it was due")
		}
		n, ok := g.BeginProbe(at)
		if !ok || n != len(offsets)+1 {
			t.Fatalf("BeginProbe at %s: %d, %v", at, n, ok)
		}
		if _, again := g.BeginProbe(at); again {
			t.Fatal("a second probe began while one is in flight")
		}
		offsets = append(offsets, at.Sub(t0))
		if g.EndProbe(at, at, false, "503") {
			t.Fatal("a failed probe recovered the endpoint")
		}
	}
	want := []time.Duration{time.Hour, 4 * time.Hour, 10 * time.Hour, 22 * time.Hour}
	for i, w := range want {
		if offsets[i] != w {
			t.Errorf("probe %d at +%s, want +%s", i+1, offsets[i], w)
		}
	}
	if len(offsets) != 33 || offsets[len(offsets)-1] > 30*24*time.Hour || offsets[4]-offsets[3] != 24*time.Hour {
		t.Errorf("%d probes, last at +%s: want 33, the last within 30 days, 24h apart after the steps", len(offsets), offsets[len(offsets)-1])
	}
	if r := g.Disabled.Recovery; !r.Ended || r.Probes != 33 || r.Last != "503" {
		t.Errorf("recovery after the ladder: %+v", r)
	}
}

// TestRecoveryOnlyWhenFailing: only an endpoint disabled for failing is probed; a probe
// that succeeds enables it; a disable by hand ends the probing.
func TestRecoveryOnlyWhenFailing(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	l := RecoveryLadder{Steps: duration.Of(time.Second), Every: duration.Duration(2 * time.Second), For: duration.Duration(time.Minute)}
	for _, c := range []DisableCause{DisabledByHand, DisabledGone} {
		g := NewLimiter(DefaultLimiterConfig())
		g.Disabled = &Disablement{Cause: c, At: t0}
		if g.RecoveryUnset() || g.StartRecovery(l) {
			t.Errorf("cause %s: probing started", c)
		}
	}
	g := NewLimiter(DefaultLimiterConfig())
	g.Disabled = &Disablement{Cause: DisabledFailing, At: t0}
	if !g.RecoveryUnset() || !g.StartRecovery(l) || g.RecoveryUnset() {
		t.Fatal("failing: probing not started")
	}
	n, ok := g.BeginProbe(t0.Add(time.Second))
	if !ok || n != 1 {
		t.Fatalf("probe 1: %d %v", n, ok)
	}
	if !g.EndProbe(t0.Add(time.Second), t0.Add(2*time.Second), true, "200") || g.Disabled != nil || !g.FailingSince.IsZero() {
		t.Fatalf("a successful probe: disabled %+v, failing since %s; want enabled", g.Disabled, g.FailingSince)
	}

	g.Disabled = &Disablement{Cause: DisabledFailing, At: t0}
	g.StartRecovery(l)
	g.Disable(t0.Add(500*time.Millisecond), "by hand")
	if _, ok := g.BeginProbe(t0.Add(time.Hour)); ok || !g.NextDeadline(t0.Add(time.Hour)).IsZero() {
		t.Error("an endpoint disabled by hand is probed")
	}
}

func TestRecoveryLadderValidate(t *testing.T) {
	if err := DefaultRecoveryLadder().Validate(); err != nil {
		t.Error(err)
	}
	if err := (RecoveryLadder{Steps: duration.Of(0)}).Validate(); err == nil {
		t.Error("a zero step, every and for: no error")
	}
}
