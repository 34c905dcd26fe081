package policy

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

var breakerEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// bStep is one step of a scripted breaker run. Op is one of:
//
//	fail, ok         admit then record the outcome at once (nothing recorded if not admitted)
//	admit            admit and keep the ticket under Tk
//	rec-ok, rec-fail record the outcome of ticket Tk
//	release          release ticket Tk
//	reset            Reset
//	ticket           take a closed ticket with Breaker.Ticket and keep it under Tk
type bStep struct {
	At      time.Duration // since breakerEpoch
	Op      string
	Tk      string
	Admit   string       // "yes", "no" or "" (not checked): the Admit answer
	Probe   string       // "yes", "no" or "" (not checked): Admission.Probe
	Counted string       // "yes", "no" or "": what Record or Release returned
	State   CircuitState // state after the step; "" not checked
	Reason  string       // TripReason after the step; "-" means empty; "" not checked
	ProbeAt time.Duration
	RetryAt time.Duration // Admission.RetryAt since breakerEpoch; 0 not checked
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func runBreakerSteps(t *testing.T, b *Breaker, steps []bStep) {
	t.Helper()
	tickets := map[string]Ticket{}
	for i, s := range steps {
		now := breakerEpoch.Add(s.At)
		where := fmt.Sprintf("step %d (%s %s at %s)", i, s.Op, s.Tk, s.At)
		var adm *Admission
		counted := ""
		switch s.Op {
		case "fail", "ok":
			a := b.Admit(now)
			adm = &a
			if a.OK {
				counted = yesNo(b.Record(now, a.Ticket, s.Op == "ok"))
			}
		case "admit":
			a := b.Admit(now)
			adm = &a
			if a.OK {
				tickets[s.Tk] = a.Ticket
			}
		case "rec-ok", "rec-fail":
			tk, found := tickets[s.Tk]
			if !found {
				t.Fatalf("%s: no ticket %q", where, s.Tk)
			}
			counted = yesNo(b.Record(now, tk, s.Op == "rec-ok"))
		case "release":
			counted = yesNo(b.Release(now, tickets[s.Tk]))
		case "reset":
			b.Reset(now)
		case "ticket":
			tk, ok := b.Ticket()
			if !ok {
				t.Fatalf("%s: Ticket refused in state %s", where, b.State())
			}
			tickets[s.Tk] = tk
		default:
			t.Fatalf("%s: unknown op", where)
		}
		if adm != nil {
			if s.Admit != "" && yesNo(adm.OK) != s.Admit {
				t.Fatalf("%s: admitted %v (%q), want %s", where, adm.OK, adm.Reason, s.Admit)
			}
			if s.Probe != "" && yesNo(adm.Probe) != s.Probe {
				t.Fatalf("%s: probe %v, want %s", where, adm.Probe, s.Probe)
			}
			if s.RetryAt != 0 && !adm.RetryAt.Equal(breakerEpoch.Add(s.RetryAt)) {
				t.Fatalf("%s: retry at %s, want %s", where, adm.RetryAt.Sub(breakerEpoch), s.RetryAt)
			}
			if adm.OK != (adm.Reason == "") {
				t.Fatalf("%s: OK %v with reason %q", where, adm.OK, adm.Reason)
			}
		}
		if s.Counted != "" && counted != s.Counted {
			t.Fatalf("%s: counted %q, want %q", where, counted, s.Counted)
		}
		if s.State != "" && b.State() != s.State {
			t.Fatalf("%s: state %s, want %s", where, b.State(), s.State)
		}
		if s.Reason == "-" && b.TripReason() != "" || s.Reason != "" && s.Reason != "-" && b.TripReason() != s.Reason {
			t.Fatalf("%s: reason %q, want %q", where, b.TripReason(), s.Reason)
		}
		if s.ProbeAt != 0 && !b.NextProbeAt().Equal(breakerEpoch.Add(s.ProbeAt)) {
			t.Fatalf("%s: next probe at %s, want %s", where, b.NextProbeAt().Sub(breakerEpoch), s.ProbeAt)
		}
	}
}

// fails returns n "fail" steps from start, every gap.
func fails(start, gap time.Duration, n int) []bStep {
	var out []bStep
	for i := range n {
		out = append(out, bStep{At: start + time.Duration(i)*gap, Op: "fail", Admit: "yes"})
	}
	return out
}

// failOK returns n pairs of a failure then a success from start, every gap per pair.
func failOK(start, gap time.Duration, n int) []bStep {
	var out []bStep
	for i := range n {
		at := start + time.Duration(i)*gap
		out = append(out, bStep{At: at, Op: "fail", Admit: "yes"}, bStep{At: at + gap/2, Op: "ok", Admit: "yes"})
	}
	return out
}

// tripped returns steps that open a default breaker at start with 5 quick failures.
func tripped(start time.Duration) []bStep {
	s := fails(start, time.Second, 5)
	s[4].State, s[4].ProbeAt = CircuitOpen, start+4*time.Second+5*time.Minute
	return s
}

func TestBreakerTransitions(t *testing.T) {
	const m, sec = time.Minute, time.Second
	tripAt := 4 * sec // tripped(0) opens at 4s; the probe is due at 5m4s
	due := tripAt + 5*m
	cases := []struct {
		name  string
		steps []bStep
	}{
		{"5 consecutive failures within 60s open", slices.Concat(
			fails(0, 10*sec, 4),
			[]bStep{{At: 40 * sec, State: CircuitClosed, Op: "ok", Admit: "yes"}},
			fails(50*sec, 10*sec, 4),
			[]bStep{{At: 89 * sec, Op: "fail", State: CircuitOpen, Reason: "5 consecutive failures", ProbeAt: 89*sec + 5*m}},
		)},
		{"4 failures are not enough", slices.Concat(fails(0, sec, 4), []bStep{{At: 5 * sec, Op: "ok", State: CircuitClosed, Reason: "-"}})},
		{"success resets the consecutive count", slices.Concat(
			fails(0, sec, 4), []bStep{{At: 5 * sec, Op: "ok"}}, fails(6*sec, sec, 4),
			[]bStep{{At: 10 * sec, Op: "ok", State: CircuitClosed}},
		)},
		{"consecutive failures older than 60s do not count", slices.Concat(
			fails(0, 20*sec, 5), // at 80s only 40s, 60s and 80s are within 60s
			[]bStep{{At: 81 * sec, Op: "ok", State: CircuitClosed}},
		)},
		{"failure exactly 60s old has left the window", slices.Concat(
			fails(0, 15*sec, 5), // at 60s the failure at 0s is 60s old
			[]bStep{{At: 61 * sec, Op: "ok", State: CircuitClosed}},
		)},
		{"20 failures within 5m open despite successes", slices.Concat(
			failOK(0, 14*sec, 19),
			[]bStep{{At: 19 * 14 * sec, Op: "fail", State: CircuitOpen, Reason: "20 failures in 5m", ProbeAt: 19*14*sec + 5*m}},
		)},
		{"20 failures over more than 5m do not open", slices.Concat(
			failOK(0, 16*sec, 20), // the 20th failure is at 304s, the first has left
			[]bStep{{At: 330 * sec, Op: "ok", State: CircuitClosed}},
		)},
		{"open rejects until the probe is due", slices.Concat(tripped(0), []bStep{
			{At: tripAt, Op: "admit", Admit: "no", RetryAt: due},
			{At: due - sec, Op: "admit", Admit: "no", RetryAt: due, State: CircuitOpen},
			{At: due, Op: "admit", Tk: "p", Admit: "yes", Probe: "yes"},
			{At: due, Op: "admit", Admit: "no", RetryAt: due + 2*m}, // only one probe; RetryAt is its timeout
			{At: due + sec, Op: "admit", Admit: "no", State: CircuitOpen},
		})},
		{"the first attempt after the due time is the probe", slices.Concat(tripped(0), []bStep{
			{At: due + 17*m, Op: "admit", Tk: "p", Admit: "yes", Probe: "yes"},
			{At: due + 17*m, Op: "rec-ok", Tk: "p", Counted: "yes", State: CircuitHalfOpen},
		})},
		{"probe success, five trickle successes one at a time, closed", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "admit", Tk: "p", Admit: "yes", Probe: "yes"},
			{At: due + sec, Op: "rec-ok", Tk: "p", Counted: "yes", State: CircuitHalfOpen, Reason: "5 consecutive failures"},
			{At: due + 2*sec, Op: "admit", Tk: "t1", Admit: "yes", Probe: "no"},
			{At: due + 2*sec, Op: "admit", Admit: "no", RetryAt: due + 2*sec + 2*m},
			{At: due + 3*sec, Op: "rec-ok", Tk: "t1", Counted: "yes", State: CircuitHalfOpen},
			{At: due + 4*sec, Op: "ok", Admit: "yes", Counted: "yes", State: CircuitHalfOpen},
			{At: due + 5*sec, Op: "ok", Admit: "yes", Counted: "yes", State: CircuitHalfOpen},
			{At: due + 6*sec, Op: "ok", Admit: "yes", Counted: "yes", State: CircuitHalfOpen},
			{At: due + 7*sec, Op: "ok", Admit: "yes", Counted: "yes", State: CircuitClosed, Reason: "-"},
			{At: due + 8*sec, Op: "admit", Admit: "yes", Probe: "no"},
			{At: due + 8*sec, Op: "admit", Admit: "yes", Probe: "no"},
		})},
		{"probe failure reopens with the delay doubled", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "fail", Admit: "yes", Counted: "yes", State: CircuitOpen, Reason: "probe failed", ProbeAt: due + 10*m},
			{At: due + 10*m - sec, Op: "admit", Admit: "no"},
			{At: due + 10*m, Op: "fail", Admit: "yes", Counted: "yes", ProbeAt: due + 30*m},
		})},
		{"half-open failure reopens, doubling up to 1h", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "ok", Counted: "yes", State: CircuitHalfOpen},
			{At: due, Op: "ok", Counted: "yes"},
			{At: due, Op: "fail", Counted: "yes", State: CircuitOpen, Reason: "half-open attempt failed", ProbeAt: due + 10*m},
			{At: due + 10*m, Op: "ok", Counted: "yes", State: CircuitHalfOpen},
			{At: due + 10*m, Op: "fail", Counted: "yes", State: CircuitOpen, ProbeAt: due + 30*m},
			{At: due + 30*m, Op: "fail", Counted: "yes", ProbeAt: due + 70*m},
			{At: due + 70*m, Op: "fail", Counted: "yes", ProbeAt: due + 130*m},
			{At: due + 130*m, Op: "fail", Counted: "yes", ProbeAt: due + 190*m}, // capped at 1h
			{At: due + 190*m, Op: "fail", Counted: "yes", ProbeAt: due + 250*m},
		})},
		{"closing resets the probe delay", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "fail", ProbeAt: due + 10*m},
			{At: due + 10*m, Op: "ok", State: CircuitHalfOpen},
		}, []bStep{
			{At: due + 11*m, Op: "ok"}, {At: due + 11*m, Op: "ok"}, {At: due + 11*m, Op: "ok"},
			{At: due + 11*m, Op: "ok"}, {At: due + 11*m, Op: "ok", State: CircuitClosed},
		}, tripped(due + 20*m)[:4], []bStep{
			{At: due + 20*m + 30*sec, Op: "fail", State: CircuitOpen, ProbeAt: due + 25*m + 30*sec},
		})},
		{"reset closes an open circuit and forgets", slices.Concat(tripped(0), []bStep{
			{At: m, Op: "reset", State: CircuitClosed, Reason: "-"},
			{At: m, Op: "admit", Admit: "yes", Probe: "no"},
		}, fails(2*m, sec, 4), []bStep{{At: 3 * m, Op: "ok", State: CircuitClosed}})},
		{"reset of a half-open circuit", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "ok", State: CircuitHalfOpen},
			{At: due, Op: "admit", Tk: "t", Admit: "yes"},
			{At: due, Op: "reset", State: CircuitClosed},
			{At: due, Op: "rec-fail", Tk: "t", Counted: "no", State: CircuitClosed},
		})},
		{"reset of a closed circuit forgets failures but keeps tickets", slices.Concat([]bStep{{Op: "ticket", Tk: "c"}}, fails(0, sec, 4), []bStep{
			{At: 5 * sec, Op: "reset"},
			{At: 6 * sec, Op: "rec-fail", Tk: "c", Counted: "yes", State: CircuitClosed},
		}, fails(7*sec, sec, 3), []bStep{{At: 10 * sec, Op: "fail", State: CircuitOpen}})},
		{"late failures of closed attempts neither extend nor re-trip", slices.Concat([]bStep{
			{Op: "admit", Tk: "a"}, {Op: "admit", Tk: "b"}, {Op: "ticket", Tk: "c"},
		}, tripped(0), []bStep{
			{At: m, Op: "rec-fail", Tk: "a", Counted: "no", State: CircuitOpen, ProbeAt: due},
			{At: due, Op: "admit", Tk: "p", Admit: "yes", Probe: "yes"},
			{At: due, Op: "rec-ok", Tk: "b", Counted: "no", State: CircuitOpen},
			{At: due, Op: "rec-fail", Tk: "c", Counted: "no", State: CircuitOpen},
			{At: due, Op: "rec-ok", Tk: "p", Counted: "yes", State: CircuitHalfOpen},
		})},
		{"outcomes from before an outage do not count after it closes", slices.Concat([]bStep{
			{Op: "admit", Tk: "old", Admit: "yes"},
		}, tripped(0), []bStep{
			{At: due, Op: "ok", State: CircuitHalfOpen},
			{At: due, Op: "ok"}, {At: due, Op: "ok"}, {At: due, Op: "ok"}, {At: due, Op: "ok"},
			{At: due, Op: "ok", State: CircuitClosed},
		}, fails(due+sec, sec, 4), []bStep{
			{At: due + 5*sec, Op: "rec-fail", Tk: "old", Counted: "no", State: CircuitClosed},
		})},
		{"a late trickle outcome is not taken for the next one", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "ok", State: CircuitHalfOpen},
			{At: due, Op: "admit", Tk: "t1", Admit: "yes"},
			{At: due, Op: "rec-ok", Tk: "t1", Counted: "yes"},
			{At: due, Op: "admit", Tk: "t2", Admit: "yes"},
			{At: due, Op: "rec-fail", Tk: "t1", Counted: "no", State: CircuitHalfOpen},
			{At: due, Op: "rec-ok", Tk: "t2", Counted: "yes", State: CircuitHalfOpen},
		})},
		{"a released probe lets the next attempt probe", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "admit", Tk: "p", Admit: "yes", Probe: "yes"},
			{At: due + sec, Op: "release", Tk: "p", Counted: "yes", State: CircuitOpen, ProbeAt: due},
			{At: due + sec, Op: "release", Tk: "p", Counted: "no"},
			{At: due + sec, Op: "rec-fail", Tk: "p", Counted: "no", State: CircuitOpen, ProbeAt: due},
			{At: due + 2*sec, Op: "admit", Tk: "q", Admit: "yes", Probe: "yes"},
		})},
		{"a released trickle frees the slot without counting", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "ok", State: CircuitHalfOpen},
			{At: due, Op: "admit", Tk: "t", Admit: "yes"},
			{At: due, Op: "release", Tk: "t", Counted: "yes", State: CircuitHalfOpen},
			{At: due, Op: "ok"}, {At: due, Op: "ok"}, {At: due, Op: "ok"}, {At: due, Op: "ok"},
			{At: due, Op: "ok", State: CircuitClosed},
		})},
		{"a silent probe times out and a new one goes", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "admit", Tk: "p", Admit: "yes", Probe: "yes"},
			{At: due + 2*m - sec, Op: "admit", Admit: "no"},
			{At: due + 2*m, Op: "admit", Tk: "q", Admit: "yes", Probe: "yes"},
			{At: due + 2*m, Op: "rec-ok", Tk: "p", Counted: "no", State: CircuitOpen},
			{At: due + 2*m, Op: "rec-fail", Tk: "q", Counted: "yes", Reason: "probe failed"},
		})},
		{"an outcome after the probe timeout does not count", slices.Concat(tripped(0), []bStep{
			{At: due, Op: "admit", Tk: "p", Admit: "yes", Probe: "yes"},
			{At: due + 2*m, Op: "rec-ok", Tk: "p", Counted: "no", State: CircuitOpen},
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBreaker(DefaultBreakerConfig())
			runBreakerSteps(t, &b, tc.steps)
		})
	}
}

func TestBreakerSinceAndProbeDelayConfig(t *testing.T) {
	c := DefaultBreakerConfig()
	c.ConsecutiveFailures, c.ProbeDelay, c.MaxProbeDelay, c.HalfOpenSuccesses = 2, duration.Duration(time.Second), duration.Duration(3*time.Second), 0
	b := NewBreaker(c)
	at := func(s int) time.Time { return breakerEpoch.Add(time.Duration(s) * time.Second) }
	for _, s := range []int{0, 1} {
		a := b.Admit(at(s))
		b.Record(at(s), a.Ticket, false)
	}
	if b.State() != CircuitOpen || !b.Since().Equal(at(1)) || b.TripReason() != "2 consecutive failures" {
		t.Fatalf("got %s since %s reason %q", b.State(), b.Since(), b.TripReason())
	}
	wantDue := []int{2, 4, 7, 10} // delays 1s, 2s, 3s (capped), 3s
	for i, due := range wantDue {
		if !b.NextProbeAt().Equal(at(due)) {
			t.Fatalf("round %d: probe at %s, want %s", i, b.NextProbeAt(), at(due))
		}
		a := b.Admit(at(due))
		if !a.Probe || !b.Record(at(due), a.Ticket, false) {
			t.Fatalf("round %d: probe not admitted or not counted: %+v", i, a)
		}
	}
	// With HalfOpenSuccesses 0 a good probe closes the circuit at once.
	a := b.Admit(at(13))
	b.Record(at(13), a.Ticket, true)
	if b.State() != CircuitClosed || !b.Since().Equal(at(13)) || !b.NextProbeAt().IsZero() {
		t.Fatalf("got %s since %s next probe %s", b.State(), b.Since(), b.NextProbeAt())
	}
}

func TestBreakerConfigValidate(t *testing.T) {
	testConfigValidate(t, DefaultBreakerConfig, []configCase[BreakerConfig]{
		{"no consecutive failures", func(c *BreakerConfig) { c.ConsecutiveFailures = 0 }, "breaker consecutive failures 0 is out of range; use 1 to"},
		{"zero consecutive window", func(c *BreakerConfig) { c.ConsecutiveWindow = 0 }, "breaker consecutive window 0s is not positive"},
		{"huge volume", func(c *BreakerConfig) { c.VolumeFailures = 20000 }, "breaker volume failures 20000 is out of range"},
		{"negative volume window", func(c *BreakerConfig) { c.VolumeWindow = duration.Duration(-time.Second) }, "breaker volume window -1s is not positive"},
		{"zero probe delay", func(c *BreakerConfig) { c.ProbeDelay = 0 }, "breaker probe delay 0s is not positive"},
		{"max below delay", func(c *BreakerConfig) { c.MaxProbeDelay = duration.Duration(time.Minute) }, "breaker max probe delay 1m is below the probe delay 5m"},
		{"negative half-open", func(c *BreakerConfig) { c.HalfOpenSuccesses = -1 }, "breaker half-open successes -1 is out of range; use 0 to"},
		{"zero probe timeout", func(c *BreakerConfig) { c.ProbeTimeout = 0 }, "breaker probe timeout 0s is not positive"},
	})
	var zero BreakerConfig
	if err := zero.Validate(); err == nil || strings.Count(err.Error(), "\n") != 5 {
		t.Fatalf("zero config should report its six bad fields, got %v", err)
	}
}

func TestBreakerReconfigure(t *testing.T) {
	b := NewBreaker(DefaultBreakerConfig())
	failBreaker(&b, 5)
	c := DefaultBreakerConfig()
	c.ProbeDelay, c.MaxProbeDelay = duration.Duration(time.Minute), duration.Duration(2*time.Minute)
	if err := b.Reconfigure(c); err != nil {
		t.Fatal(err)
	}
	if want := breakerEpoch.Add(4*time.Second + 2*time.Minute); !b.NextProbeAt().Equal(want) {
		t.Fatalf("probe at %s, want %s", b.NextProbeAt(), want)
	}
	bad := c
	bad.HalfOpenSuccesses = -3
	if err := b.Reconfigure(bad); err == nil || b.Config != c {
		t.Fatalf("bad config accepted (%v) or applied", err)
	}
}

func TestBreakerCopiesAreIndependent(t *testing.T) {
	b := NewBreaker(DefaultBreakerConfig())
	failBreaker(&b, 3)
	c := b
	now := breakerEpoch.Add(3 * time.Second)
	c.Record(now, c.Admit(now).Ticket, false)
	b.Record(now, b.Admit(now).Ticket, true)
	c.Record(now, c.Admit(now).Ticket, false)
	if c.State() != CircuitOpen || b.State() != CircuitClosed {
		t.Fatalf("copy %s, original %s", c.State(), b.State())
	}
}

// TestBreakerProperties runs random operations against a breaker and checks the invariants;
// twin is driven identically but goes through a JSON round trip now and then, and must answer the same.
func TestBreakerProperties(t *testing.T) {
	cfg := BreakerConfig{
		ConsecutiveFailures: 3, ConsecutiveWindow: duration.Duration(20 * time.Second),
		VolumeFailures: 6, VolumeWindow: duration.Duration(time.Minute),
		ProbeDelay: duration.Duration(10 * time.Second), MaxProbeDelay: duration.Duration(80 * time.Second),
		HalfOpenSuccesses: 3, ProbeTimeout: duration.Duration(15 * time.Second),
	}
	visits := map[CircuitState]int{}
	probes := 0
	for seed := int64(1); seed <= 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		b, twin := NewBreaker(cfg), NewBreaker(cfg)
		now := breakerEpoch
		var out []Ticket // admitted and not yet reported
		failRate := rng.Float64()
		for step := range 200 {
			where := fmt.Sprintf("seed %d step %d", seed, step)
			now = now.Add(time.Duration(rng.Intn(8000)) * time.Millisecond)
			if rng.Intn(10) == 0 {
				jsonRoundTrip(t, &twin)
			}
			before := b.State()
			beforeSince := b.Since()
			busy := b.SlotBusy && now.Sub(b.SlotAt) < b.Config.ProbeTimeout.Std() // a probe or half-open attempt is out
			switch op := rng.Intn(10); {
			case op < 4:
				a, a2 := b.Admit(now), twin.Admit(now)
				if a.Ticket != a2.Ticket || a.OK != a2.OK || a.Probe != a2.Probe || !a.RetryAt.Equal(a2.RetryAt) || a.Reason != a2.Reason {
					t.Fatalf("%s: twin admitted %+v, original %+v", where, a2, a)
				}
				if a.OK {
					switch before {
					case CircuitOpen:
						if !a.Probe || busy || now.Before(b.NextProbeAt()) {
							t.Fatalf("%s: open admitted a non-probe or a second probe: %+v", where, a)
						}
					case CircuitHalfOpen:
						if a.Probe || busy {
							t.Fatalf("%s: half-open admitted %+v with one in flight %v", where, a, busy)
						}
					}
					out = append(out, a.Ticket)
					if a.Probe {
						probes++
					}
				} else if before == CircuitClosed {
					t.Fatalf("%s: closed refused: %s", where, a.Reason)
				}
			case op < 9 && len(out) > 0:
				i := rng.Intn(len(out))
				tk := out[i]
				out = append(out[:i], out[i+1:]...)
				ok := rng.Float64() >= failRate
				c1, c2 := b.Record(now, tk, ok), twin.Record(now, tk, ok)
				if c1 != c2 {
					t.Fatalf("%s: twin counted %v, original %v", where, c2, c1)
				}
				if !c1 && (b.State() != before || !b.Since().Equal(beforeSince)) {
					t.Fatalf("%s: uncounted outcome moved %s to %s", where, before, b.State())
				}
				if c1 && tk.Kind == TicketNormal && before != CircuitClosed {
					t.Fatalf("%s: closed-period outcome counted in %s", where, before)
				}
				if before == CircuitOpen && b.State() != CircuitOpen && tk.Kind != TicketProbe {
					t.Fatalf("%s: open left by a %s outcome", where, tk.Kind)
				}
			case op == 9 && len(out) > 0:
				i := rng.Intn(len(out))
				tk := out[i]
				out = append(out[:i], out[i+1:]...)
				if c1, c2 := b.Release(now, tk), twin.Release(now, tk); c1 != c2 || b.State() != before {
					t.Fatalf("%s: release %v/%v changed %s to %s", where, c1, c2, before, b.State())
				}
			default:
				if rng.Intn(50) == 0 {
					b.Reset(now)
					twin.Reset(now)
				}
			}
			if b.State() != twin.State() || b.TripReason() != twin.TripReason() || !b.NextProbeAt().Equal(twin.NextProbeAt()) || !b.Since().Equal(twin.Since()) {
				t.Fatalf("%s: twin %s/%q/%s, original %s/%q/%s", where, twin.State(), twin.TripReason(), twin.NextProbeAt(), b.State(), b.TripReason(), b.NextProbeAt())
			}
			if b.State() == CircuitOpen {
				if d := b.NextProbeAt().Sub(b.Since()); d < cfg.ProbeDelay.Std() || d > cfg.MaxProbeDelay.Std() {
					t.Fatalf("%s: probe delay %s outside [%s, %s]", where, d, cfg.ProbeDelay, cfg.MaxProbeDelay)
				}
			}
			if len(b.Streak) > cfg.ConsecutiveFailures || len(b.Failures) > cfg.VolumeFailures {
				t.Fatalf("%s: %d streak and %d failures kept", where, len(b.Streak), len(b.Failures))
			}
			visits[b.State()]++
		}
	}
	t.Logf("steps per state %v, probes %d", visits, probes)
	if visits[CircuitOpen] == 0 || visits[CircuitHalfOpen] == 0 || probes == 0 {
		t.Fatalf("the random runs never reached every state: %v, %d probes", visits, probes)
	}
}

func TestBreakerOverrideMergeApply(t *testing.T) {
	zero, probe := 0, 2*time.Minute
	var o BreakerOverride
	o.Merge(BreakerOverride{ProbeDelay: duration.Duration(probe)})
	o.Merge(BreakerOverride{ConsecutiveFailures: 3, HalfOpenSuccesses: &zero})
	got := DefaultBreakerConfig().Apply(o)
	want := DefaultBreakerConfig()
	want.ProbeDelay, want.ConsecutiveFailures, want.HalfOpenSuccesses = duration.Duration(probe), 3, 0
	if got != want {
		t.Errorf("merged override applied = %+v, want %+v", got, want)
	}
	if got := DefaultBreakerConfig().Apply(want.Override()); got != want {
		t.Errorf("a full override applied = %+v, want %+v", got, want)
	}
	if got := want.Apply(BreakerOverride{}); got != want {
		t.Errorf("an empty override changed %+v into %+v", want, got)
	}
}
