package policy

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

var limiterEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// limiterTestConfig is the article's breaker with a cap of 4, leases of 40 s and a queue of 10.
func limiterTestConfig() LimiterConfig {
	c := DefaultLimiterConfig()
	c.Capacity.MaxInFlight = 4
	c.MaxQueue = 10
	return c
}

// gOpt is an optional int expectation in a step table.
type gOpt struct {
	set bool
	v   int
}

func gv(v int) gOpt { return gOpt{set: true, v: v} }

// gAt is an optional time expectation, as an offset from limiterEpoch; gZero means the zero time.
type gAt struct {
	set  bool
	zero bool
	d    time.Duration
}

func gt(d time.Duration) gAt { return gAt{set: true, d: d} }

var gZero = gAt{set: true, zero: true}

func (a gAt) check(got time.Time) bool {
	if a.zero {
		return got.IsZero()
	}
	return got.Equal(limiterEpoch.Add(a.d))
}

func (a gAt) String() string {
	if a.zero {
		return "zero"
	}
	return "epoch+" + a.d.String()
}

// gStep is one step of a scripted limiter run. Op is one of:
//
//	lease  Holder leases (InUse, Want, TTL) reporting Outs ('F' failed, 'S' succeeded; the last one at
//	       the step's time, the others Gap apart before it, all with the holder's last ticket)
//	       and asking for Waiters
//	tick   Tick
//	done   Done for Waiter with Result "ok", "fail" or "none" (nil outcome), using its grant's ticket
//	reset  Reset
//
// The expectations ("" or unset: not checked; "-": none/empty):
//
//	Permits   the lease reply's Permits
//	Circuit   the lease reply's Circuit, or for other ops the state after the step
//	Granted   waiters granted by the lease reply, or woken by the tick, in order
//	Covered   waiters the lease reply said the holder's own lease covers
//	Kinds     the ticket kinds of those grants, in order
//	Queued    "w:pos" for each waiter the lease reply queued
//	Full      waiters the lease reply turned away for a full queue
//	Queue     the queue after the step
//	InUse     the ledger's live permits after the step
//	Next      NextDeadline after the step
//	ProbeAt   Breaker.NextProbeAt after the step
//	Reason    a substring of the breaker's trip reason
//	Until     the Until (or Expires for a lease) of the first grant
type gStep struct {
	At      time.Duration
	Op      string
	Holder  string
	InUse   int
	Want    int
	Outs    string
	Gap     time.Duration
	OutAt   []time.Duration // if set, the times of Outs (since limiterEpoch), in the order given
	Waiters []string
	TTL     time.Duration
	Waiter  string
	Result  string

	Permits gOpt
	Circuit CircuitState
	Granted string
	Kinds   string
	Covered string
	Queued  string
	Full    string
	Queue   string
	InUse2  gOpt
	Next    gAt
	ProbeAt gAt
	Reason  string
	Until   gAt
}

// limiterRun drives a Limiter through steps, remembering each holder's ticket and each
// waiter's grant. It checks after every step that the ledger never went over the cap by a
// grant, that every single has its one-permit lease, and that a waiter granted again
// without a Done in between keeps its ticket.
type limiterRun struct {
	t        *testing.T
	g        Limiter
	json     bool // round-trip the limiter through JSON before every step
	holderTk map[string]Ticket
	grants   map[string]Grant
}

func newLimiterRun(t *testing.T, c LimiterConfig, roundTrip bool) *limiterRun {
	if err := c.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	return &limiterRun{t: t, g: NewLimiter(c), json: roundTrip, holderTk: map[string]Ticket{}, grants: map[string]Grant{}}
}

func limiterRoundTrip(t *testing.T, g Limiter) Limiter {
	t.Helper()
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var back Limiter
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	b2, err := json.Marshal(back)
	if err != nil {
		t.Fatalf("marshal again: %v", err)
	}
	if string(b) != string(b2) {
		t.Fatalf("JSON not stable:\n%s\n%s", b, b2)
	}
	return back
}

func gOutcomes(now time.Time, outs string, gap time.Duration, tk Ticket) []Outcome {
	var os []Outcome
	for i, c := range outs {
		at := now.Add(-time.Duration(len(outs)-1-i) * gap)
		os = append(os, Outcome{At: at, OK: c == 'S', Latency: duration.Duration(100 * time.Millisecond), Ticket: tk})
	}
	return os
}

func joinOr(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	return strings.Join(ss, ",")
}

func (r *limiterRun) run(steps []gStep) {
	t := r.t
	t.Helper()
	for i, s := range steps {
		if r.json {
			r.g = limiterRoundTrip(t, r.g)
		}
		now := limiterEpoch.Add(s.At)
		where := fmt.Sprintf("step %d (%s %s%s at %s)", i, s.Op, s.Holder, s.Waiter, s.At)
		g := &r.g
		before := g.Ledger.InUse(now)
		var granted, kinds []string
		var firstUntil time.Time
		grantedSomething := false
		note := func(w string, tk Ticket, until time.Time) {
			granted = append(granted, w)
			kinds = append(kinds, string(tk.Kind))
			if firstUntil.IsZero() {
				firstUntil = until
			}
			if old, ok := r.grants[w]; ok && old.Ticket != tk {
				t.Errorf("%s: waiter %s granted again with ticket %+v, had %+v", where, w, tk, old.Ticket)
			}
			if _, ok := r.grants[w]; !ok {
				grantedSomething = true
			}
			r.grants[w] = Grant{Waiter: w, Ticket: tk, Until: until}
		}
		switch s.Op {
		case "lease":
			heldBefore := 0
			if l, ok := g.Ledger.Lease(s.Holder); ok && l.Expires.After(now) {
				heldBefore = l.Permits
			}
			outs := gOutcomes(now, s.Outs, s.Gap, r.holderTk[s.Holder])
			for j, at := range s.OutAt {
				outs[j].At = limiterEpoch.Add(at)
			}
			rep := g.Lease(now, LeaseRequest{Holder: s.Holder, InUse: s.InUse, Want: s.Want,
				Outcomes: outs, Waiters: s.Waiters, TTL: duration.Duration(s.TTL)})
			if rep.Permits > heldBefore {
				grantedSomething = true
			}
			if rep.Circuit == CircuitClosed {
				r.holderTk[s.Holder] = rep.Ticket
			}
			l, _ := g.Ledger.Lease(s.Holder)
			if l.Permits != rep.Permits || (rep.Permits > 0 && !l.Expires.Equal(rep.Expires)) {
				t.Errorf("%s: reply %d permits until %s, ledger %+v", where, rep.Permits, rep.Expires, l)
			}
			if rep.Permits > 0 && firstUntil.IsZero() {
				firstUntil = rep.Expires
			}
			if s.Permits.set && rep.Permits != s.Permits.v {
				t.Errorf("%s: %d permits, want %d", where, rep.Permits, s.Permits.v)
			}
			if s.Circuit != "" && rep.Circuit != s.Circuit {
				t.Errorf("%s: reply circuit %s, want %s", where, rep.Circuit, s.Circuit)
			}
			if len(rep.Waiters) != len(s.Waiters) {
				t.Fatalf("%s: %d waiter replies for %d waiters", where, len(rep.Waiters), len(s.Waiters))
			}
			var queued, full, covered []string
			for j, w := range rep.Waiters {
				if w.Waiter != s.Waiters[j] {
					t.Errorf("%s: reply %d is for %s, want %s", where, j, w.Waiter, s.Waiters[j])
				}
				switch {
				case w.Outcome == WaiterCovered:
					covered = append(covered, w.Waiter)
				case w.Outcome == WaiterGranted:
					note(w.Waiter, w.Ticket, w.Until)
				case w.Outcome == WaiterQueued:
					queued = append(queued, w.Waiter+":"+strconv.Itoa(w.Position))
				default:
					full = append(full, w.Waiter)
					if w.Reason == "" || !w.RetryAt.Equal(now.Add(time.Minute)) {
						t.Errorf("%s: waiter %s turned away with reason %q retry at %s", where, w.Waiter, w.Reason, w.RetryAt)
					}
				}
			}
			if s.Queued != "" && joinOr(queued) != s.Queued {
				t.Errorf("%s: queued %s, want %s", where, joinOr(queued), s.Queued)
			}
			if s.Covered != "" && joinOr(covered) != s.Covered {
				t.Errorf("%s: covered %s, want %s", where, joinOr(covered), s.Covered)
			}
			if len(covered) > 0 && len(covered) > rep.Permits-s.InUse {
				t.Errorf("%s: %d waiters covered by %d permits for %d running", where, len(covered), rep.Permits, s.InUse)
			}
			if s.Full != "" && joinOr(full) != s.Full {
				t.Errorf("%s: turned away %s, want %s", where, joinOr(full), s.Full)
			}
		case "tick":
			for _, w := range g.Tick(now) {
				note(w.Waiter, w.Ticket, w.Until)
			}
		case "done":
			var o *Outcome
			tk := r.grants[s.Waiter].Ticket
			switch s.Result {
			case "ok", "fail":
				o = &Outcome{At: now, OK: s.Result == "ok", Latency: duration.Duration(100 * time.Millisecond), Ticket: tk}
			case "none":
			default:
				t.Fatalf("%s: bad result %q", where, s.Result)
			}
			g.Done(now, s.Waiter, o)
			delete(r.grants, s.Waiter)
		case "reset":
			g.Reset(now)
		default:
			t.Fatalf("%s: bad op", where)
		}
		if s.Op != "lease" && s.Circuit != "" && g.Breaker.State() != s.Circuit {
			t.Errorf("%s: circuit %s, want %s", where, g.Breaker.State(), s.Circuit)
		}
		if s.Granted != "" && joinOr(granted) != s.Granted {
			t.Errorf("%s: granted %s, want %s", where, joinOr(granted), s.Granted)
		}
		if s.Kinds != "" && joinOr(kinds) != s.Kinds {
			t.Errorf("%s: ticket kinds %s, want %s", where, joinOr(kinds), s.Kinds)
		}
		if s.Queue != "" && joinOr(g.Ledger.Waiting) != s.Queue {
			t.Errorf("%s: queue %s, want %s", where, joinOr(g.Ledger.Waiting), s.Queue)
		}
		inUse := g.Ledger.InUse(now)
		if s.InUse2.set && inUse != s.InUse2.v {
			t.Errorf("%s: %d permits in use, want %d", where, inUse, s.InUse2.v)
		}
		if grantedSomething && inUse > g.Cap() {
			t.Errorf("%s: granted up to %d permits in use (from %d), over the cap %d", where, inUse, before, g.Cap())
		}
		for _, sg := range g.Grants {
			if l, ok := g.Ledger.Lease(sg.Waiter); !ok || l.Permits != 1 || !l.Expires.Equal(sg.Until) {
				t.Errorf("%s: single %+v has lease %+v", where, sg, l)
			}
		}
		if s.Next.set {
			if got := g.NextDeadline(now); !s.Next.check(got) {
				t.Errorf("%s: next deadline %s, want %s", where, got, s.Next)
			}
		}
		if s.ProbeAt.set {
			if got := g.Breaker.NextProbeAt(); !s.ProbeAt.check(got) {
				t.Errorf("%s: probe at %s, want %s", where, got, s.ProbeAt)
			}
		}
		if s.Reason != "" && !strings.Contains(g.Breaker.TripReason(), s.Reason) {
			t.Errorf("%s: trip reason %q, want it to contain %q", where, g.Breaker.TripReason(), s.Reason)
		}
		if s.Until.set && !s.Until.check(firstUntil) {
			t.Errorf("%s: first grant until %s, want %s", where, firstUntil, s.Until)
		}
	}
}

func gWaiters(prefix string, from, to int) []string {
	var ws []string
	for i := from; i <= to; i++ {
		ws = append(ws, prefix+strconv.Itoa(i))
	}
	return ws
}

// gTrip has holder a lease the whole cap at start and report 5 failures 1 s apart ending at
// start+5s, which opens the circuit at start+5s; its lease shrinks to what it still runs (2).
func gTrip(start time.Duration) []gStep {
	return []gStep{
		{At: start, Op: "lease", Holder: "a", Want: 4, Permits: gv(4), Circuit: CircuitClosed},
		{At: start + 5*time.Second, Op: "lease", Holder: "a", InUse: 2, Want: 4, Outs: "FFFFF", Gap: time.Second,
			Permits: gv(2), Circuit: CircuitOpen, Reason: "5 consecutive", ProbeAt: gt(start + 5*time.Second + 5*time.Minute)},
	}
}

// limiterScenarios are the scripted runs; the circuit opens at 5s in those that use gTrip(0),
// so the probe is due at 5m5s.
func limiterScenarios() []struct {
	name  string
	cfg   func(*LimiterConfig)
	steps []gStep
} {
	const s = time.Second
	const m = time.Minute
	probe := 5*m + 5*s
	return []struct {
		name  string
		cfg   func(*LimiterConfig)
		steps []gStep
	}{
		{"leases within the cap", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 3, Permits: gv(3), InUse2: gv(3), Circuit: CircuitClosed, Until: gt(40 * s)},
			{At: s, Op: "lease", Holder: "a", InUse: 3, Want: 9, Permits: gv(4), InUse2: gv(4), Until: gt(41 * s)},
			{At: 2 * s, Op: "lease", Holder: "a", InUse: 4, Want: 9, Permits: gv(4), InUse2: gv(4)},
			{At: 3 * s, Op: "lease", Holder: "a", InUse: 1, Want: 2, Outs: "SSS", Permits: gv(2), InUse2: gv(2)},
			{At: 4 * s, Op: "lease", Holder: "a", Want: 0, Outs: "S", Permits: gv(0), InUse2: gv(0), Next: gZero},
		}},
		{"two holders share the cap", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 3, Permits: gv(3)},
			{Op: "lease", Holder: "b", Want: 3, Permits: gv(1), InUse2: gv(4)},
			{At: s, Op: "lease", Holder: "b", InUse: 1, Want: 3, Permits: gv(1)},
			{At: 2 * s, Op: "lease", Holder: "a", InUse: 1, Want: 1, Outs: "SS", Permits: gv(1), InUse2: gv(2)},
			{At: 3 * s, Op: "lease", Holder: "b", InUse: 1, Want: 3, Permits: gv(3), InUse2: gv(4)},
			{At: 4 * s, Op: "lease", Holder: "a", InUse: 1, Want: 4, Permits: gv(1), InUse2: gv(4)},
		}},
		{"lease shrink and return free permits for the queue", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: s, Op: "lease", Holder: "b", Want: 2, Waiters: []string{"w1", "w2"}, Permits: gv(0), Queued: "w1:1,w2:2", Queue: "w1,w2"},
			{At: s, Op: "tick", Granted: "-", Queue: "w1,w2", Next: gt(40 * s)},
			{At: 2 * s, Op: "lease", Holder: "a", InUse: 3, Want: 4, Outs: "S", Permits: gv(3), InUse2: gv(3)},
			{At: 2 * s, Op: "tick", Granted: "w1", Kinds: "normal", Queue: "w2", InUse2: gv(4), Until: gt(42 * s)},
			{At: 3 * s, Op: "lease", Holder: "a", Want: 0, Outs: "SSS", Permits: gv(0), InUse2: gv(1)},
			{At: 3 * s, Op: "tick", Granted: "w2", Queue: "-", InUse2: gv(2)},
			{At: 4 * s, Op: "done", Waiter: "w1", Result: "ok", InUse2: gv(1)},
			{At: 4 * s, Op: "done", Waiter: "w2", Result: "none", InUse2: gv(0)},
		}},
		{"at the cap waiters queue and the lease does not grow while anyone waits", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 3, Permits: gv(3)},
			{Op: "lease", Holder: "b", Want: 1, Permits: gv(1)},
			{Op: "lease", Holder: "b", InUse: 1, Want: 1, Waiters: []string{"w1", "w2"}, Permits: gv(1), Covered: "-", Queued: "w1:1,w2:2"},
			{At: s, Op: "lease", Holder: "c", Want: 1, Waiters: []string{"w3"}, Permits: gv(0), Covered: "-", Queued: "w3:3"},
			// a finishes two attempts and asks for more: its lease only shrinks to what runs.
			{At: 2 * s, Op: "lease", Holder: "a", InUse: 1, Want: 4, Outs: "SS", Permits: gv(1), InUse2: gv(2)},
			{At: 2 * s, Op: "tick", Granted: "w1,w2", Queue: "w3", InUse2: gv(4)},
			{At: 3 * s, Op: "lease", Holder: "b", Want: 1, Outs: "S", Permits: gv(0), InUse2: gv(3)},
			{At: 3 * s, Op: "tick", Granted: "w3", Queue: "-", InUse2: gv(4)},
			{At: 4 * s, Op: "done", Waiter: "w1", Result: "ok"},
			{At: 4 * s, Op: "done", Waiter: "w3", Result: "ok"},
			// nobody waits: the lease may grow again.
			{At: 5 * s, Op: "lease", Holder: "a", InUse: 1, Want: 4, Permits: gv(3), InUse2: gv(4)},
		}},
		{"FIFO wake on lease expiry", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4), Next: gt(40 * s)},
			{At: s, Op: "lease", Holder: "b", Waiters: []string{"w1", "w2"}, Queued: "w1:1,w2:2"},
			{At: 2 * s, Op: "lease", Holder: "c", Waiters: []string{"w3", "w1"}, Queued: "w3:3,w1:1"},
			{At: 39 * s, Op: "tick", Granted: "-", Next: gt(40 * s)},
			{At: 40 * s, Op: "tick", Granted: "w1,w2,w3", Kinds: "normal,normal,normal", Queue: "-", InUse2: gv(3), Until: gt(80 * s), Next: gt(80 * s)},
		}},
		{"FIFO wake one at a time as permits return", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: s, Op: "lease", Holder: "b", Waiters: []string{"w1", "w2", "w3"}, Queued: "w1:1,w2:2,w3:3"},
			{At: 2 * s, Op: "lease", Holder: "a", InUse: 3, Want: 4, Outs: "S", Permits: gv(3)},
			{At: 2 * s, Op: "tick", Granted: "w1", Queue: "w2,w3"},
			{At: 3 * s, Op: "lease", Holder: "b", Waiters: []string{"w3", "w2"}, Queued: "w3:2,w2:1"},
			{At: 4 * s, Op: "done", Waiter: "w1", Result: "ok"},
			{At: 4 * s, Op: "tick", Granted: "w2", Queue: "w3"},
			{At: 5 * s, Op: "done", Waiter: "w3", Result: "none", Queue: "-"}, // a queued waiter gives up
			{At: 5 * s, Op: "tick", Granted: "-", InUse2: gv(4)},
		}},
		{"5 consecutive failures within 60s open the circuit", nil, slices.Concat(gTrip(0), []gStep{
			{At: 6 * s, Op: "lease", Holder: "b", InUse: 0, Want: 4, Permits: gv(0), Circuit: CircuitOpen},
			{At: 7 * s, Op: "lease", Holder: "a", InUse: 0, Want: 4, Outs: "SS", Permits: gv(0), InUse2: gv(0), Circuit: CircuitOpen},
		})},
		{"failures broken by a success or spread over more than 60s do not trip", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: 10 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "FFFFSFFFF", Gap: s, Permits: gv(4), Circuit: CircuitClosed},
			{At: 200 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "FFFFF", Gap: 20 * s, Permits: gv(4), Circuit: CircuitClosed},
			{At: 201 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "F", Permits: gv(4), Circuit: CircuitClosed},
			{At: 202 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "F", Permits: gv(4), Circuit: CircuitOpen, Reason: "5 consecutive"},
		}},
		{"20 failures within 5m open the circuit", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: 100 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: strings.Repeat("FFFFS", 3), Gap: 5 * s, Permits: gv(4), Circuit: CircuitClosed},
			{At: 150 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "FFFFSFFF", Gap: s, Permits: gv(4), Circuit: CircuitClosed},
			{At: 160 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "SF", Gap: s, Permits: gv(4), Circuit: CircuitOpen, Reason: "20 failures", ProbeAt: gt(160*s + 5*m)},
		}},
		{"failures older than 5m leave the volume count", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: 100 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: strings.Repeat("FFFFS", 3), Gap: 5 * s, Permits: gv(4), Circuit: CircuitClosed},
			{At: 150 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "FFFFSFFF", Gap: s, Permits: gv(4), Circuit: CircuitClosed},
			// the first failure (at 30s) is 5m old at 330s.
			{At: 330 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "SF", Gap: s, Permits: gv(4), Circuit: CircuitClosed},
			{At: 331 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "SF", Gap: s, Permits: gv(4), Circuit: CircuitOpen, Reason: "20 failures"},
		}},
		{"outcomes count in the order they happened, not as listed", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: 10 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "FSFFFF", OutAt: []time.Duration{9 * s, 4 * s, 5 * s, 6 * s, 7 * s, 8 * s},
				Circuit: CircuitOpen, Reason: "5 consecutive", ProbeAt: gt(9*s + 5*m)},
		}},
		{"while open a holder with nothing leased gets nothing", nil, slices.Concat(gTrip(0), []gStep{
			{At: 6 * s, Op: "lease", Holder: "c", InUse: 1, Want: 4, Permits: gv(0), InUse2: gv(2)},
		})},
		{"a probe that never reports is released when its permit expires", nil, slices.Concat(gTrip(0), []gStep{
			{At: 10 * s, Op: "lease", Holder: "b", Waiters: []string{"w1", "w2"}, Queued: "w1:1,w2:2"},
			{At: probe, Op: "tick", Granted: "w1", Kinds: "probe", Until: gt(probe + 40*s)},
			{At: probe + 39*s, Op: "tick", Granted: "-"},
			{At: probe + 40*s, Op: "tick", Granted: "w2", Kinds: "probe", Queue: "-", InUse2: gv(1)},
			{At: probe + 41*s, Op: "done", Waiter: "w2", Result: "ok", Circuit: CircuitHalfOpen},
		})},
		{"waiters while open are queued with the probe time", nil, slices.Concat(gTrip(0), []gStep{
			{At: 10 * s, Op: "lease", Holder: "a", InUse: 2, Want: 4, Waiters: []string{"w1", "w2"}, Permits: gv(2), Queued: "w1:1,w2:2", Granted: "-"},
			{At: 45 * s, Op: "tick", Granted: "-", InUse2: gv(2), Next: gt(50 * s)},
			{At: 50 * s, Op: "tick", Granted: "-", InUse2: gv(0), Next: gt(probe)},
			{At: 50 * s, Op: "lease", Holder: "b", Want: 4, Waiters: []string{"w3"}, Permits: gv(0), Queued: "w3:3", InUse2: gv(0)},
		})},
		{"the probe is woken from the queue when due", nil, slices.Concat(gTrip(0), []gStep{
			{At: 10 * s, Op: "lease", Holder: "b", Waiters: []string{"w1", "w2"}, Queued: "w1:1,w2:2", Next: gt(45 * s)},
			{At: probe - s, Op: "tick", Granted: "-", Next: gt(probe)},
			{At: probe, Op: "tick", Granted: "w1", Kinds: "probe", Queue: "w2", InUse2: gv(1), Circuit: CircuitOpen},
			{At: probe + s, Op: "tick", Granted: "-", Queue: "w2"},
			{At: probe + 2*s, Op: "lease", Holder: "b", Waiters: []string{"w3", "w1"}, Granted: "w1", Queued: "w3:2"},
		})},
		{"no waiter when the probe falls due: the next waiter is the probe at once", nil, slices.Concat(gTrip(0), []gStep{
			{At: 50 * s, Op: "lease", Holder: "a", Want: 4, Permits: gv(0), Next: gZero},
			{At: 6 * m, Op: "tick", Granted: "-"},
			{At: 7 * m, Op: "lease", Holder: "b", Want: 4, Waiters: []string{"w1", "w2"}, Permits: gv(0), Granted: "w1", Kinds: "probe", Queued: "w2:1", Circuit: CircuitOpen},
			{At: 7*m + s, Op: "done", Waiter: "w1", Result: "none", Circuit: CircuitOpen},
			// a released probe leaves the probe due: the queue head goes next.
			{At: 7*m + s, Op: "tick", Granted: "w2", Kinds: "probe"},
		})},
		{"probe success, half-open trickle, closed, queue drained at the cap", nil, slices.Concat(gTrip(0), []gStep{
			{At: 10 * s, Op: "lease", Holder: "b", Waiters: gWaiters("w", 1, 10), Queue: joinOr(gWaiters("w", 1, 10))},
			{At: probe, Op: "tick", Granted: "w1", Kinds: "probe"},
			{At: probe + s, Op: "done", Waiter: "w1", Result: "ok", Circuit: CircuitHalfOpen, InUse2: gv(0)},
			{At: probe + s, Op: "tick", Granted: "w2", Kinds: "trickle", InUse2: gv(1)},
			{At: probe + s, Op: "tick", Granted: "-"},
			// a worker asking meanwhile gets nothing and its waiter queues behind.
			{At: probe + 2*s, Op: "lease", Holder: "a", Want: 4, Waiters: []string{"x1"}, Permits: gv(0), Queued: "x1:9", Circuit: CircuitHalfOpen},
			{At: probe + 3*s, Op: "done", Waiter: "w2", Result: "ok", Circuit: CircuitHalfOpen},
			{At: probe + 3*s, Op: "tick", Granted: "w3", Kinds: "trickle"},
			{At: probe + 4*s, Op: "done", Waiter: "w3", Result: "ok"},
			{At: probe + 4*s, Op: "tick", Granted: "w4", Kinds: "trickle"},
			{At: probe + 5*s, Op: "done", Waiter: "w4", Result: "ok"},
			{At: probe + 5*s, Op: "tick", Granted: "w5", Kinds: "trickle"},
			{At: probe + 6*s, Op: "done", Waiter: "w5", Result: "ok", Circuit: CircuitHalfOpen},
			{At: probe + 6*s, Op: "tick", Granted: "w6", Kinds: "trickle"},
			{At: probe + 7*s, Op: "done", Waiter: "w6", Result: "ok", Circuit: CircuitClosed, InUse2: gv(0)},
			{At: probe + 7*s, Op: "tick", Granted: "w7,w8,w9,w10", Kinds: "normal,normal,normal,normal", Queue: "x1", InUse2: gv(4)},
			{At: probe + 8*s, Op: "lease", Holder: "a", Want: 4, Permits: gv(0), Queued: "-"},
			{At: probe + 9*s, Op: "done", Waiter: "w8", Result: "ok"},
			{At: probe + 9*s, Op: "tick", Granted: "x1", Queue: "-", InUse2: gv(4)},
			{At: probe + 10*s, Op: "done", Waiter: "w7", Result: "ok"},
			{At: probe + 10*s, Op: "done", Waiter: "x1", Result: "ok", InUse2: gv(2)},
			{At: probe + 11*s, Op: "lease", Holder: "a", Want: 4, Permits: gv(2), Circuit: CircuitClosed},
		})},
		{"probe failures double the delay up to 1h", nil, slices.Concat(gTrip(0), []gStep{
			{At: probe, Op: "lease", Holder: "b", Waiters: []string{"p1"}, Granted: "p1", Kinds: "probe"},
			{At: probe + s, Op: "done", Waiter: "p1", Result: "fail", Circuit: CircuitOpen, Reason: "probe failed", ProbeAt: gt(probe + s + 10*m)},
			{At: probe + 2*s, Op: "lease", Holder: "b", Waiters: []string{"p2"}, Queued: "p2:1", Next: gt(probe + s + 10*m)},
			{At: probe + s + 10*m, Op: "tick", Granted: "p2", Kinds: "probe"},
			{At: probe + 2*s + 10*m, Op: "done", Waiter: "p2", Result: "fail", ProbeAt: gt(probe + 2*s + 30*m)},
			{At: probe + 2*s + 30*m, Op: "lease", Holder: "b", Waiters: []string{"p3"}, Granted: "p3"},
			{At: probe + 3*s + 30*m, Op: "done", Waiter: "p3", Result: "fail", ProbeAt: gt(probe + 3*s + 70*m)},
			{At: probe + 3*s + 70*m, Op: "lease", Holder: "b", Waiters: []string{"p4"}, Granted: "p4"},
			{At: probe + 4*s + 70*m, Op: "done", Waiter: "p4", Result: "fail", ProbeAt: gt(probe + 4*s + 130*m)},
			{At: probe + 4*s + 130*m, Op: "lease", Holder: "b", Waiters: []string{"p5"}, Granted: "p5"},
			{At: probe + 5*s + 130*m, Op: "done", Waiter: "p5", Result: "fail", ProbeAt: gt(probe + 5*s + 190*m)},
		})},
		{"a failed half-open attempt reopens with the delay doubled", nil, slices.Concat(gTrip(0), []gStep{
			{At: probe, Op: "lease", Holder: "b", Waiters: []string{"p1", "t1"}, Granted: "p1", Queued: "t1:1"},
			{At: probe + s, Op: "done", Waiter: "p1", Result: "ok", Circuit: CircuitHalfOpen},
			{At: probe + s, Op: "tick", Granted: "t1", Kinds: "trickle"},
			{At: probe + 2*s, Op: "done", Waiter: "t1", Result: "fail", Circuit: CircuitOpen, Reason: "half-open", ProbeAt: gt(probe + 2*s + 10*m)},
			{At: probe + 3*s, Op: "lease", Holder: "b", Waiters: []string{"t2"}, Queued: "t2:1"},
		})},
		{"a dead holder's lease expires and its permits go to the queue", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: 10 * s, Op: "lease", Holder: "b", Want: 2, Waiters: []string{"w1", "w2"}, Permits: gv(0), Queued: "w1:1,w2:2", Next: gt(40 * s)},
			{At: 20 * s, Op: "lease", Holder: "b", Want: 2, Permits: gv(0), Next: gt(40 * s)},
			{At: 40*s - 1, Op: "tick", Granted: "-", InUse2: gv(4)},
			{At: 40 * s, Op: "tick", Granted: "w1,w2", InUse2: gv(2), Next: gt(80 * s)},
			{At: 41 * s, Op: "lease", Holder: "b", Want: 4, Permits: gv(2), InUse2: gv(4)},
			{At: 80 * s, Op: "tick", InUse2: gv(2), Next: gt(81 * s)},
			{At: 81 * s, Op: "tick", InUse2: gv(0), Next: gZero},
		}},
		{"Reset closes an open circuit and the queue flows at the cap", nil, slices.Concat(gTrip(0), []gStep{
			{At: 10 * s, Op: "lease", Holder: "b", Waiters: gWaiters("w", 1, 6), Queued: "w1:1,w2:2,w3:3,w4:4,w5:5,w6:6"},
			{At: 11 * s, Op: "reset", Circuit: CircuitClosed, ProbeAt: gZero},
			// a still holds 2 permits from before the trip.
			{At: 11 * s, Op: "tick", Granted: "w1,w2", Kinds: "normal,normal", Queue: "w3,w4,w5,w6", InUse2: gv(4)},
			{At: 12 * s, Op: "lease", Holder: "a", InUse: 2, Want: 4, Outs: "FF", Permits: gv(2), Circuit: CircuitClosed},
		})},
		{"Reset of a closed circuit forgets its failures", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: 4 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "FFFF", Gap: s, Circuit: CircuitClosed},
			{At: 5 * s, Op: "reset", Circuit: CircuitClosed},
			{At: 6 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "F", Circuit: CircuitClosed},
			{At: 10 * s, Op: "lease", Holder: "a", InUse: 4, Want: 4, Outs: "FFFF", Gap: s, Circuit: CircuitOpen},
		}},
		{"NextDeadline follows leases, singles, the due probe and a silent probe", nil, slices.Concat([]gStep{
			{Op: "tick", Next: gZero},
			{Op: "lease", Holder: "a", Want: 1, Permits: gv(1), Next: gt(40 * s)},
			{At: 5 * s, Op: "lease", Holder: "b", Want: 1, Permits: gv(1), Next: gt(40 * s)},
			{At: 10 * s, Op: "lease", Holder: "a", Want: 1, Permits: gv(1), Next: gt(45 * s)},
			{At: 60 * s, Op: "tick", Next: gZero},
		}, []gStep{
			{At: 100 * s, Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: 105 * s, Op: "lease", Holder: "a", InUse: 0, Want: 4, Outs: "FFFFF", Gap: s, Permits: gv(0), Circuit: CircuitOpen, Next: gZero},
			// the probe time counts only while someone waits.
			{At: 106 * s, Op: "lease", Holder: "b", Waiters: []string{"w1"}, Queued: "w1:1", Next: gt(105*s + 5*m)},
			{At: 105*s + 5*m, Op: "tick", Granted: "w1", Kinds: "probe", Next: gt(145*s + 5*m)},
		})},
		{"a full queue turns waiters away", func(c *LimiterConfig) { c.MaxQueue = 2 }, []gStep{
			{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
			{At: s, Op: "lease", Holder: "b", Waiters: []string{"w1", "w2", "w3"}, Queued: "w1:1,w2:2", Full: "w3", Queue: "w1,w2"},
			{At: 2 * s, Op: "lease", Holder: "b", Waiters: []string{"w3", "w2", "w1"}, Queued: "w2:2,w1:1", Full: "w3"},
			{At: 3 * s, Op: "lease", Holder: "a", InUse: 3, Want: 4, Permits: gv(3)},
			{At: 3 * s, Op: "tick", Granted: "w1", Queue: "w2"},
			{At: 4 * s, Op: "lease", Holder: "b", Waiters: []string{"w3", "w4"}, Queued: "w3:2", Full: "w4", Queue: "w2,w3"},
		}},
		{"repeated waiter requests keep the grant and the place in line", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 3, Permits: gv(3)},
			{At: s, Op: "lease", Holder: "b", Waiters: []string{"w1", "w2", "w3"}, Granted: "w1", Queued: "w2:1,w3:2", Until: gt(41 * s)},
			{At: 20 * s, Op: "lease", Holder: "b", Waiters: []string{"w3", "w1", "w2", "w1"}, Granted: "w1,w1", Queued: "w3:2,w2:1", Until: gt(60 * s), Queue: "w2,w3", InUse2: gv(4)},
			{At: 39 * s, Op: "lease", Holder: "b", Waiters: []string{"w1"}, Granted: "w1", Until: gt(79 * s), Next: gt(40 * s)},
			{At: 40 * s, Op: "tick", Granted: "w2,w3", Queue: "-"},
			{At: 41 * s, Op: "lease", Holder: "b", Waiters: []string{"w3", "w2"}, Granted: "w3,w2", Until: gt(81 * s), InUse2: gv(3)},
			// after Done the same id is a new attempt.
			{At: 42 * s, Op: "done", Waiter: "w1", Result: "ok", InUse2: gv(2)},
			{At: 43 * s, Op: "lease", Holder: "b", Waiters: []string{"w1"}, Granted: "w1", Until: gt(83 * s)},
		}},
		{"waiters the holder's own renewed lease has room for are covered by it", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 1, Permits: gv(1)},
			{At: s, Op: "lease", Holder: "b", InUse: 0, Want: 2, Waiters: []string{"w1", "w2", "w3"}, Permits: gv(2), Covered: "w1,w2", Granted: "w3", InUse2: gv(4)},
			{At: 2 * s, Op: "lease", Holder: "b", InUse: 2, Want: 4, Waiters: []string{"w4"}, Permits: gv(2), Covered: "-", Queued: "w4:1"},
			// with somebody waiting the lease has no room beyond what runs.
			{At: 3 * s, Op: "lease", Holder: "b", InUse: 1, Want: 4, Waiters: []string{"w5"}, Permits: gv(1), Covered: "-", Queued: "w5:2"},
		}},
		{"a lease request may set its own TTL", nil, []gStep{
			{Op: "lease", Holder: "a", Want: 3, TTL: 10 * time.Second, Permits: gv(3), Until: gt(10 * s), Next: gt(10 * s)},
			{At: s, Op: "lease", Holder: "b", Waiters: []string{"w1", "w2"}, TTL: 20 * time.Second, Granted: "w1", Queued: "w2:1", Until: gt(21 * s)},
			{At: 10 * s, Op: "tick", Granted: "w2", Until: gt(50 * s), InUse2: gv(2)},
		}},
		{"a repeated probe request renews the probe without a second one", nil, slices.Concat(gTrip(0), []gStep{
			{At: probe, Op: "lease", Holder: "b", Waiters: []string{"p1", "w2"}, Granted: "p1", Kinds: "probe", Queued: "w2:1"},
			{At: probe + 30*s, Op: "lease", Holder: "b", Waiters: []string{"p1", "w2"}, Granted: "p1", Kinds: "probe", Queued: "w2:1", Until: gt(probe + 70*s)},
			{At: probe + 31*s, Op: "tick", Granted: "-"},
			{At: probe + 32*s, Op: "done", Waiter: "p1", Result: "ok", Circuit: CircuitHalfOpen},
			{At: probe + 32*s, Op: "tick", Granted: "w2", Kinds: "trickle"},
		})},
	}
}

func TestLimiterScenarios(t *testing.T) {
	for _, rt := range []bool{false, true} {
		for _, sc := range limiterScenarios() {
			name := sc.name
			if rt {
				name += " (JSON round trip before every step)"
			}
			t.Run(name, func(t *testing.T) {
				c := limiterTestConfig()
				if sc.cfg != nil {
					sc.cfg(&c)
				}
				newLimiterRun(t, c, rt).run(sc.steps)
			})
		}
	}
}

// TestGuardJSONMidScenario stops a scenario halfway, round-trips the limiter once and checks that
// the copy and the original answer the rest of the scenario identically.
func TestLimiterJSONMidScenario(t *testing.T) {
	for _, sc := range limiterScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			c := limiterTestConfig()
			if sc.cfg != nil {
				sc.cfg(&c)
			}
			half := len(sc.steps) / 2
			a := newLimiterRun(t, c, false)
			a.run(sc.steps[:half])
			b := &limiterRun{t: t, g: limiterRoundTrip(t, a.g), holderTk: maps2(a.holderTk), grants: maps2(a.grants)}
			a.run(sc.steps[half:])
			b.run(sc.steps[half:])
			ja, _ := json.Marshal(a.g)
			jb, _ := json.Marshal(b.g)
			if string(ja) != string(jb) {
				t.Errorf("the original and the round-tripped guard ended apart:\n%s\n%s", ja, jb)
			}
		})
	}
}

func maps2[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestGuardNextDeadlineProbeInFlight: while the probe is out and others wait, the next
// deadline must be when something can change (the probe's lease expiring or the probe timing
// out), not the past probe time: a deadline of now makes the workflow tick in a loop.
func TestLimiterNextDeadlineProbeInFlight(t *testing.T) {
	const s = time.Second
	probe := 5*time.Minute + 5*s
	newLimiterRun(t, limiterTestConfig(), false).run(slices.Concat(gTrip(0), []gStep{
		{At: 10 * s, Op: "lease", Holder: "b", Waiters: []string{"w1", "w2"}, Queued: "w1:1,w2:2"},
		{At: probe, Op: "tick", Granted: "w1", Kinds: "probe", Next: gt(probe + 40*s)},
		{At: probe + 10*s, Op: "tick", Granted: "-", Next: gt(probe + 40*s)},
	}))
}

func TestLimiterConfigValidate(t *testing.T) {
	if err := DefaultLimiterConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	c := DefaultLimiterConfig()
	c.LeaseTTL = 0
	c.MaxQueue = 0
	c.Capacity.MaxInFlight = 0
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"lease TTL", "max queue", "max_in_flight"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// --- property test ---

type gpAttempt struct {
	end time.Time
	ok  bool
	lat time.Duration
	tk  Ticket
}

type gpHolder struct {
	id      string
	running []gpAttempt
	ended   []Outcome
	waiters []string // its waiters not yet granted or done (to ask about again)
}

type gpWaiter struct {
	holder string
	state  string // "new", "queued", "granted", "covered", "done", "full", "expired"
	tk     Ticket
	until  time.Time
}

type guardProp struct {
	t       *testing.T
	rng     *rand.Rand
	g       Limiter
	now     time.Time
	holders []*gpHolder
	ws      map[string]*gpWaiter
	queue   []string // the model's queue
	nextW   int
	pFail   float64
	where   string
	failed  bool
	// regrantAnywhere lets holders ask again about granted waiters even when their lease
	// could cover them (see TestGuardCoveredKeepsGrant); otherwise only while it cannot.
	regrantAnywhere bool
}

func (p *guardProp) errorf(format string, args ...any) {
	p.t.Helper()
	if !p.failed {
		p.t.Errorf("%s: "+format, append([]any{p.where}, args...)...)
	}
	p.failed = true
}

// settle moves the holders' attempts that have ended by now to their outcomes.
func (p *guardProp) settle() {
	for _, h := range p.holders {
		kept := h.running[:0:0]
		for _, a := range h.running {
			if a.end.After(p.now) {
				kept = append(kept, a)
			} else {
				h.ended = append(h.ended, Outcome{At: a.end, OK: a.ok, Latency: duration.Duration(a.lat), Ticket: a.tk})
			}
		}
		h.running = kept
	}
}

// expireModel marks grants whose permit expired as expired (the limiter drops them on its next
// Lease or Tick).
func (p *guardProp) expireModel() {
	for _, w := range p.ws {
		if w.state == "granted" && !w.until.After(p.now) {
			w.state = "expired"
		}
	}
}

func (p *guardProp) newWaiter(h *gpHolder) string {
	p.nextW++
	id := fmt.Sprintf("w%d", p.nextW)
	p.ws[id] = &gpWaiter{holder: h.id, state: "new"}
	h.waiters = append(h.waiters, id)
	return id
}

func (p *guardProp) grant(w string, tk Ticket, until time.Time, ttl time.Duration, state CircuitState, probeDue time.Time) {
	m := p.ws[w]
	switch {
	case m == nil:
		p.errorf("unknown waiter %s granted", w)
		return
	case m.state == "granted" && m.tk != tk:
		p.errorf("waiter %s granted again with ticket %+v, had %+v", w, tk, m.tk)
	case m.state == "done":
		p.errorf("waiter %s granted after Done", w)
	}
	if !until.Equal(p.now.Add(ttl)) {
		p.errorf("waiter %s granted until %s, want now+%s", w, until, ttl)
	}
	if m.state == "granted" {
		m.until = until // renewed: the ticket stays whatever the circuit did since
		return
	}
	switch state {
	case CircuitOpen:
		if tk.Kind != TicketProbe {
			p.errorf("waiter %s granted a %s ticket while open", w, tk.Kind)
		}
		if p.now.Before(probeDue) {
			p.errorf("probe %s granted before it was due at %s", w, probeDue)
		}
	case CircuitHalfOpen:
		if tk.Kind != TicketTrickle {
			p.errorf("waiter %s granted a %s ticket while half-open", w, tk.Kind)
		}
	case CircuitClosed:
		if tk.Kind != TicketNormal {
			p.errorf("waiter %s granted a %s ticket while closed", w, tk.Kind)
		}
	}
	m.state, m.tk, m.until = "granted", tk, until
}

func (p *guardProp) lease(h *gpHolder) {
	p.settle()
	p.expireModel()
	g := &p.g
	inUse := len(h.running)
	want := inUse + p.rng.Intn(5) - 1
	var waiters []string
	noRoom := len(g.Ledger.Waiting) > 0 || g.Breaker.State() != CircuitClosed
	for _, w := range h.waiters {
		st := p.ws[w].state
		if st == "granted" && !p.regrantAnywhere && (!noRoom || len(h.ended) > 0) {
			continue // outcomes may close the circuit or the queue be empty: the lease may have room
		}
		if (st == "queued" || st == "granted" || st == "new" || st == "full") && p.rng.Intn(3) == 0 {
			waiters = append(waiters, w)
		}
	}
	for range p.rng.Intn(3) {
		waiters = append(waiters, p.newWaiter(h))
	}
	if p.rng.Intn(8) == 0 && len(waiters) > 0 {
		waiters = append(waiters, waiters[p.rng.Intn(len(waiters))]) // the same waiter twice
	}
	queueBefore := len(g.Ledger.Waiting)
	have := 0
	if l, ok := g.Ledger.Lease(h.id); ok && l.Expires.After(p.now) {
		have = l.Permits
	}
	if inUse > have {
		p.errorf("model: %s runs %d attempts on a lease of %d", h.id, inUse, have)
	}
	var ttl time.Duration
	if p.rng.Intn(4) == 0 {
		ttl = time.Duration(31+p.rng.Intn(30)) * time.Second // outlasts every attempt
	}
	rep := g.Lease(p.now, LeaseRequest{Holder: h.id, InUse: inUse, Want: want, Outcomes: h.ended, Waiters: waiters, TTL: duration.Duration(ttl)})
	if ttl == 0 {
		ttl = g.Config.LeaseTTL.Std()
	}
	h.ended = nil
	state := g.Breaker.State()
	// The reply and the ledger agree.
	l, ok := g.Ledger.Lease(h.id)
	if rep.Permits > 0 && (!ok || l.Permits != rep.Permits || !l.Expires.Equal(rep.Expires) || !rep.Expires.Equal(p.now.Add(ttl))) {
		p.errorf("reply %d permits until %s, ledger %+v", rep.Permits, rep.Expires, l)
	}
	if rep.Permits == 0 && ok && l.Expires.After(p.now) {
		p.errorf("reply 0 permits, ledger %+v", l)
	}
	if rep.Permits < inUse {
		p.errorf("reply %d permits for %d attempts running", rep.Permits, inUse)
	}
	if rep.Permits > max(want, inUse) {
		p.errorf("reply %d permits, wanted %d", rep.Permits, max(want, inUse))
	}
	if rep.Circuit != state {
		p.errorf("reply circuit %s, breaker %s", rep.Circuit, state)
	}
	if state == CircuitClosed {
		if rep.Ticket != (Ticket{Epoch: g.Breaker.Epoch, Kind: TicketNormal}) {
			p.errorf("closed reply with ticket %+v, epoch %d", rep.Ticket, g.Breaker.Epoch)
		}
		if queueBefore == 0 && rep.Permits < max(want, inUse) && g.Ledger.Free(g.Cap(), p.now) > 0 {
			p.errorf("reply %d of %d permits with %d free", rep.Permits, max(want, inUse), g.Ledger.Free(g.Cap(), p.now))
		}
	}
	if (state != CircuitClosed || queueBefore > 0) && rep.Permits > max(have, inUse) {
		p.errorf("lease grew from %d to %d while %s with %d waiting", have, rep.Permits, state, queueBefore)
	}
	if len(rep.Waiters) != len(waiters) {
		p.errorf("%d waiter replies for %d waiters", len(rep.Waiters), len(waiters))
		return
	}
	covered := 0
	for i, wr := range rep.Waiters {
		w := waiters[i]
		if wr.Waiter != w {
			p.errorf("reply %d is for %s, want %s", i, wr.Waiter, w)
		}
		m := p.ws[w]
		switch {
		case wr.Outcome == WaiterCovered:
			covered++
			switch m.state {
			case "queued", "granted":
				p.errorf("%s waiter %s covered by the lease of %s", m.state, w, h.id)
			case "covered":
				continue // listed twice
			}
			if state != CircuitClosed || queueBefore > 0 {
				p.errorf("waiter %s covered while %s with %d waiting", w, state, queueBefore)
			}
			m.state = "covered"
			h.waiters = slices.DeleteFunc(h.waiters, func(q string) bool { return q == w })
			h.running = append(h.running, p.attempt(rep.Ticket))
		case wr.Outcome == WaiterGranted:
			if m.state == "queued" {
				p.errorf("queued waiter %s granted by a lease request", w)
			}
			p.grant(w, wr.Ticket, wr.Until, ttl, state, g.Breaker.ProbeDue)
		case wr.Outcome == WaiterQueued:
			switch m.state {
			case "queued":
				if want := slices.Index(p.queue, w) + 1; wr.Position != want {
					p.errorf("queued waiter %s asked again: position %d, want %d", w, wr.Position, want)
				}
			case "granted":
				p.errorf("granted waiter %s queued", w)
			default:
				p.queue = append(p.queue, w)
				m.state = "queued"
				if wr.Position != len(p.queue) {
					p.errorf("new waiter %s queued at %d, want %d", w, wr.Position, len(p.queue))
				}
			}
		default:
			if m.state == "queued" || m.state == "granted" {
				p.errorf("%s waiter %s turned away", m.state, w)
			}
			if len(g.Ledger.Waiting) < g.Config.MaxQueue {
				p.errorf("waiter %s turned away with %d waiting: %s", w, len(g.Ledger.Waiting), wr.Reason)
			}
			m.state = "full"
		}
	}
	if covered > 0 && covered > rep.Permits-inUse {
		p.errorf("%d waiters covered by %d permits with %d running", covered, rep.Permits, inUse)
	}
	// Start attempts under the lease, each ending within the 30 s attempt timeout.
	if state == CircuitClosed {
		for range p.rng.Intn(max(rep.Permits-len(h.running), 0) + 1) {
			h.running = append(h.running, p.attempt(rep.Ticket))
		}
	}
}

func (p *guardProp) attempt(tk Ticket) gpAttempt {
	lat := time.Duration(p.rng.Intn(2000)) * time.Millisecond
	if p.rng.Intn(10) == 0 {
		lat = time.Duration(p.rng.Intn(30000)) * time.Millisecond
	}
	return gpAttempt{end: p.now.Add(lat), ok: p.rng.Float64() >= p.pFail, lat: lat, tk: tk}
}

func (p *guardProp) tick() {
	p.expireModel()
	state, due := p.g.Breaker.State(), p.g.Breaker.ProbeDue
	wakes := p.g.Tick(p.now)
	if len(wakes) > 0 {
		// Tick may change nothing in the breaker's state by itself.
		state = p.g.Breaker.State()
	}
	for i, w := range wakes {
		if i >= len(p.queue) || p.queue[i] != w.Waiter {
			p.errorf("woke %s out of order; model queue %v", w.Waiter, p.queue)
			return
		}
		if st := p.ws[w.Waiter].state; st != "queued" {
			p.errorf("woke %s waiter %s", st, w.Waiter)
		}
		p.grant(w.Waiter, w.Ticket, w.Until, p.g.Config.LeaseTTL.Std(), state, due)
	}
	p.queue = p.queue[len(wakes):]
	if len(wakes) > 1 {
		for _, w := range wakes {
			if w.Ticket.Kind != TicketNormal {
				p.errorf("woke %d waiters at once, one with a %s ticket", len(wakes), w.Ticket.Kind)
			}
		}
	}
}

func (p *guardProp) done() {
	var cands []string
	for id, w := range p.ws {
		if w.state == "granted" || w.state == "expired" || (w.state == "queued" && p.rng.Intn(5) == 0) {
			cands = append(cands, id)
		}
	}
	if len(cands) == 0 {
		return
	}
	slices.Sort(cands)
	id := cands[p.rng.Intn(len(cands))]
	w := p.ws[id]
	var o *Outcome
	if w.state != "queued" && p.rng.Intn(8) != 0 {
		lat := time.Duration(p.rng.Intn(2000)) * time.Millisecond
		o = &Outcome{At: p.now, OK: p.rng.Float64() >= p.pFail, Latency: duration.Duration(lat), Ticket: w.tk}
	}
	p.g.Done(p.now, id, o)
	if w.state == "queued" {
		p.queue = slices.DeleteFunc(p.queue, func(q string) bool { return q == id })
	}
	w.state = "done"
	for _, h := range p.holders {
		h.waiters = slices.DeleteFunc(h.waiters, func(q string) bool { return q == id })
	}
}

// check verifies the invariants that hold after every step.
func (p *guardProp) check(inUseBefore int, singlesBefore map[string]bool, leasesBefore map[string]int) {
	g := &p.g
	now := p.now
	inUse := g.Ledger.InUse(now)
	grew := false
	for _, l := range g.Ledger.Held {
		if l.Expires.After(now) && l.Permits > leasesBefore[l.Holder] {
			grew = true
		}
	}
	if grew && inUse > g.Cap() {
		p.errorf("a grant took the permits in use to %d (from %d), over the cap %d", inUse, inUseBefore, g.Cap())
	}
	// The queue: no duplicates, exactly the model's, in order.
	if !slices.Equal(g.Ledger.Waiting, p.queue) {
		p.errorf("queue %v, model %v", g.Ledger.Waiting, p.queue)
	}
	seen := map[string]bool{}
	for _, w := range g.Ledger.Waiting {
		if seen[w] {
			p.errorf("%s queued twice: %v", w, g.Ledger.Waiting)
		}
		seen[w] = true
	}
	// Grants: each has its lease of one permit, is granted in the model, is not queued.
	special := 0
	for _, s := range g.Grants {
		m := p.ws[s.Waiter]
		if m == nil || (m.state != "granted" && m.state != "expired") || m.tk != s.Ticket {
			p.errorf("single %+v, model %+v", s, m)
		}
		if seen[s.Waiter] {
			p.errorf("single %s is also queued", s.Waiter)
		}
		if l, ok := g.Ledger.Lease(s.Waiter); !ok || l.Permits != 1 || !l.Expires.Equal(s.Until) {
			p.errorf("single %+v has lease %+v", s, l)
		}
		if s.Until.After(now) && s.Ticket.Kind != TicketNormal {
			special++
		}
	}
	if special > 1 {
		p.errorf("%d probe or half-open attempts in flight: %+v", special, g.Grants)
	}
	// Every waiter of the model that is granted and not expired has its single.
	for id, m := range p.ws {
		if m.state == "granted" {
			if i := g.single(id); i < 0 || g.Grants[i].Ticket != m.tk {
				p.errorf("granted waiter %s has no single", id)
			}
		}
	}
	// While open nothing but the probe is out under the circuit's own admission.
	if st := g.Breaker.State(); st != CircuitClosed {
		for _, s := range g.Grants {
			if s.Until.After(now) && !singlesBefore[s.Waiter] && s.Ticket.Kind == TicketNormal {
				p.errorf("new normal single %s while %s", s.Waiter, st)
			}
		}
	}
	if d := g.NextDeadline(now); !d.IsZero() && d.Before(now) {
		p.errorf("next deadline %s before now", d)
	}
}

func (p *guardProp) snapshot() (int, map[string]bool, map[string]int) {
	singles := map[string]bool{}
	for _, s := range p.g.Grants {
		singles[s.Waiter] = true
	}
	leases := map[string]int{}
	for _, l := range p.g.Ledger.Held {
		if l.Expires.After(p.now) {
			leases[l.Holder] = l.Permits
		}
	}
	return p.g.Ledger.InUse(p.now), singles, leases
}

func TestLimiterProperties(t *testing.T) { limiterProperties(t, false) }

// TestGuardCoveredKeepsGrant runs the property test with holders also asking again about
// their granted waiters when their lease has room.
func TestLimiterCoveredKeepsGrant(t *testing.T) {
	limiterProperties(t, true)
}

func limiterProperties(t *testing.T, regrantAnywhere bool) {
	rng := rand.New(rand.NewSource(20260301))
	const sequences = 3000
	stats := map[CircuitState]int{}
	probes, trickles := 0, 0
	for seq := range sequences {
		c := limiterTestConfig()
		c.Capacity.MaxInFlight = 1 + rng.Intn(6)
		c.Capacity.MinSamples = 5
		c.MaxQueue = 3 + rng.Intn(8)
		c.Breaker.ConsecutiveFailures = 2 + rng.Intn(4)
		c.Breaker.VolumeFailures = 4 + rng.Intn(10)
		c.Breaker.HalfOpenSuccesses = rng.Intn(4)
		c.Breaker.ProbeDelay = duration.Duration(time.Duration(30+rng.Intn(300)) * time.Second)
		c.Breaker.MaxProbeDelay = c.Breaker.ProbeDelay * 4
		p := &guardProp{t: t, rng: rng, g: NewLimiter(c), now: limiterEpoch, ws: map[string]*gpWaiter{}, regrantAnywhere: regrantAnywhere}
		for i := range 1 + rng.Intn(3) {
			p.holders = append(p.holders, &gpHolder{id: fmt.Sprintf("h%d", i+1)})
		}
		for step := range 80 {
			if step%20 == 0 {
				p.pFail = []float64{0, 0.1, 0.5, 0.9, 1}[rng.Intn(5)]
			}
			p.where = fmt.Sprintf("sequence %d step %d at %s (%s)", seq, step, p.now.Sub(limiterEpoch), p.g.Breaker.State())
			inUseBefore, singlesBefore, leasesBefore := p.snapshot()
			switch r := rng.Intn(100); {
			case r < 35:
				p.lease(p.holders[rng.Intn(len(p.holders))])
			case r < 55:
				p.done()
			case r < 57:
				p.g.Reset(p.now)
			case r < 60:
				p.g = limiterRoundTrip(t, p.g)
			}
			// The workflow ticks after every message.
			p.tick()
			p.check(inUseBefore, singlesBefore, leasesBefore)
			for _, s := range p.g.Grants {
				switch s.Ticket.Kind {
				case TicketProbe:
					probes++
				case TicketTrickle:
					trickles++
				}
			}
			stats[p.g.Breaker.State()]++
			if p.failed {
				t.FailNow()
			}
			// Time passes: 0–90 s, or to the next deadline.
			if d := p.g.NextDeadline(p.now); !d.IsZero() && d.After(p.now) && rng.Intn(3) == 0 {
				p.now = d
			} else {
				p.now = p.now.Add(time.Duration(rng.Intn(91)) * time.Second)
			}
			if rng.Intn(4) == 0 {
				p.where = fmt.Sprintf("sequence %d step %d: tick at %s (%s)", seq, step, p.now.Sub(limiterEpoch), p.g.Breaker.State())
				inUseBefore, singlesBefore, leasesBefore := p.snapshot()
				p.tick()
				p.check(inUseBefore, singlesBefore, leasesBefore)
				if p.failed {
					t.FailNow()
				}
			}
		}
	}
	t.Logf("states seen: %v; probe steps %d, trickle steps %d", stats, probes, trickles)
	if stats[CircuitOpen] == 0 || stats[CircuitHalfOpen] == 0 || probes == 0 || trickles == 0 {
		t.Errorf("the random runs do not reach every state: %v, %d probes, %d trickles", stats, probes, trickles)
	}
}

// TestGuardCoveredGrantedWaiter: a waiter woken with a permit of its own that its holder asks
// about again must get the same grant back, not be covered by the holder's lease as well.
func TestLimiterCoveredGrantedWaiter(t *testing.T) {
	const s = time.Second
	newLimiterRun(t, limiterTestConfig(), false).run([]gStep{
		{Op: "lease", Holder: "a", Want: 4, Permits: gv(4)},
		{At: s, Op: "lease", Holder: "b", Waiters: []string{"w1"}, Queued: "w1:1"},
		{At: 2 * s, Op: "lease", Holder: "a", Want: 0, Outs: "SSSS", Permits: gv(0)},
		{At: 2 * s, Op: "tick", Granted: "w1", InUse2: gv(1)},
		// b has not heard of the wake yet and asks again, with room in its lease.
		{At: 3 * s, Op: "lease", Holder: "b", Want: 1, Waiters: []string{"w1"}, Permits: gv(1), Covered: "-", Granted: "w1", InUse2: gv(2)},
	})
}

// TestGuardProbeRenewedPastTimeout: a probe whose waiter keeps renewing its grant still holds
// the circuit's one slot; the breaker's ProbeTimeout must not hand out a second probe meanwhile.
func TestLimiterProbeRenewedPastTimeout(t *testing.T) {
	const s = time.Second
	probe := 5*time.Minute + 5*s
	newLimiterRun(t, limiterTestConfig(), false).run(slices.Concat(gTrip(0), []gStep{
		{At: 10 * s, Op: "lease", Holder: "b", Waiters: []string{"w1", "w2"}, Queued: "w1:1,w2:2"},
		{At: probe, Op: "tick", Granted: "w1", Kinds: "probe"},
		{At: probe + 30*s, Op: "lease", Holder: "b", Waiters: []string{"w1"}, Granted: "w1"},
		{At: probe + 60*s, Op: "lease", Holder: "b", Waiters: []string{"w1"}, Granted: "w1"},
		{At: probe + 90*s, Op: "lease", Holder: "b", Waiters: []string{"w1"}, Granted: "w1"},
		{At: probe + 120*s, Op: "lease", Holder: "b", Waiters: []string{"w1"}, Granted: "w1"},
		{At: probe + 120*s, Op: "tick", Granted: "-", Queue: "w2"},
	}))
}

// BenchmarkLimiterWaitOutage times one waiter arriving at an open circuit whose queue
// already holds thousands (the shape of an outage): it must not grow with the queue.
// go test ./policy -bench LimiterWaitOutage -run XXX
func BenchmarkLimiterWaitOutage(b *testing.B) {
	for _, queued := range []int{100, 10000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			c := DefaultLimiterConfig()
			c.MaxQueue = queued + b.N + 1
			g := NewLimiter(c)
			now := limiterEpoch
			for range c.Breaker.ConsecutiveFailures {
				g.Record(now, []Outcome{{At: now, Ticket: g.Snapshot(now).Ticket}})
			}
			for i := range queued {
				g.Wait(now, fmt.Sprintf("delivery@default:q%d", i))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g.Wait(now, fmt.Sprintf("delivery@default:w%d", i))
			}
		})
	}
}

// A wait for the attempt a waiter's permit or pass was granted for is the same wait again
// (Answered): nothing new goes. A wait with another key is a new one. A key noted for a
// queued waiter goes with the permit or pass it is granted from the queue, and leaves the
// queue with it.
func TestWaitKeysAnswered(t *testing.T) {
	c := limiterTestConfig()
	g := NewLimiter(c)
	now := limiterEpoch
	k1, k2 := WaitKey(0, 1, 0), WaitKey(0, 2, 0)
	if _, ok := g.Wait(now, "a"); !ok {
		t.Fatal("first wait of a: want a permit at once")
	}
	g.NoteKey("a", k1)
	if !g.Answered(now.Add(time.Second), "a", k1) {
		t.Error("the same wait again: not answered, want answered by a's permit")
	}
	if g.Answered(now.Add(time.Second), "a", k2) || g.Answered(now.Add(time.Second), "a", 0) {
		t.Error("a wait for another attempt, or with no key, taken for the same one")
	}
	g.Renew(now.Add(10*time.Second), "a")
	if i := g.single("a"); i < 0 || !g.Grants[i].Until.After(now.Add(10*time.Second)) {
		t.Errorf("a's permit after Renew: %+v", g.Grants)
	}
	// Fill the cap, so that the next waiter queues, with its key.
	for i := range c.Capacity.MaxInFlight - 1 {
		g.Wait(now, fmt.Sprintf("f%d", i))
	}
	if _, ok := g.Wait(now, "q"); ok {
		t.Fatal("q granted with the cap full")
	}
	g.NoteKey("q", k2)
	if g.Ledger.FirstKey() != k2 {
		t.Fatalf("q's queued key %d, want %d", g.Ledger.FirstKey(), k2)
	}
	copied := g
	g.Done(now.Add(time.Second), "a", nil)
	wakes := g.Tick(now.Add(time.Second))
	if len(wakes) != 1 || wakes[0].Waiter != "q" || wakes[0].Key != k2 || !g.Answered(now.Add(time.Second), "q", k2) {
		t.Fatalf("wakes %+v: want q granted with its key", wakes)
	}
	if len(g.Ledger.Keys) != 0 {
		t.Errorf("keys left after q left the queue: %v", g.Ledger.Keys)
	}
	if copied.Ledger.FirstKey() != k2 {
		t.Errorf("a copy taken before lost q's key")
	}
	g.Passes = append(g.Passes, Grant{Waiter: "p", Until: now.Add(time.Minute), Pass: true, Key: k1})
	if !g.Answered(now.Add(2*time.Second), "p", k1) || g.Answered(now.Add(2*time.Minute), "p", k1) {
		t.Error("a pass answers its key's wait until it expires")
	}
}
