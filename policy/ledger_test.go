package policy

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var permitsEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// pStep is one step of a scripted ledger run. Op is grant (Holder, N = want, Cap, TTL),
// return (Holder, N), expire, or wake (Cap, TTL). Want is the permits granted, returned,
// or woken; InUse the permits in use after the step; Dropped the holders Expire returned.
type pStep struct {
	At      time.Duration
	Op      string
	Holder  string
	N       int
	Cap     int
	TTL     time.Duration
	Want    int
	InUse   int
	Dropped []string
}

func TestLedgerLedger(t *testing.T) {
	const s = time.Second
	cases := []struct {
		name  string
		steps []pStep
	}{
		{"grants up to the cap", []pStep{
			{Op: "grant", Holder: "a", N: 4, Cap: 10, TTL: 30 * s, Want: 4, InUse: 4},
			{Op: "grant", Holder: "b", N: 8, Cap: 10, TTL: 30 * s, Want: 6, InUse: 10},
			{Op: "grant", Holder: "c", N: 1, Cap: 10, TTL: 30 * s, Want: 0, InUse: 10},
			{Op: "grant", Holder: "a", N: 2, Cap: 10, TTL: 30 * s, Want: 2, InUse: 8},
			{Op: "grant", Holder: "b", N: 8, Cap: 10, TTL: 30 * s, Want: 8, InUse: 10},
			{Op: "grant", Holder: "a", N: 0, Cap: 10, TTL: 30 * s, Want: 0, InUse: 8},
		}},
		{"a shrunk cap revokes nothing and grants nothing until under it", []pStep{
			{Op: "grant", Holder: "a", N: 6, Cap: 10, TTL: 30 * s, Want: 6, InUse: 6},
			{Op: "grant", Holder: "b", N: 4, Cap: 10, TTL: 30 * s, Want: 4, InUse: 10},
			{At: s, Op: "grant", Holder: "a", N: 8, Cap: 5, TTL: 30 * s, Want: 6, InUse: 10},
			{At: s, Op: "grant", Holder: "c", N: 1, Cap: 5, TTL: 30 * s, Want: 0, InUse: 10},
			{At: s, Op: "return", Holder: "b", N: 4, Want: 4, InUse: 6},
			{At: s, Op: "grant", Holder: "c", N: 1, Cap: 5, TTL: 30 * s, Want: 0, InUse: 6},
			{At: s, Op: "return", Holder: "a", N: 2, Want: 2, InUse: 4},
			{At: s, Op: "grant", Holder: "c", N: 3, Cap: 5, TTL: 30 * s, Want: 1, InUse: 5},
		}},
		{"expired leases stop counting and are dropped in holder order", []pStep{
			{Op: "grant", Holder: "z", N: 3, Cap: 10, TTL: 10 * s, Want: 3, InUse: 3},
			{Op: "grant", Holder: "b", N: 3, Cap: 10, TTL: 20 * s, Want: 3, InUse: 6},
			{Op: "grant", Holder: "a", N: 4, Cap: 10, TTL: 10 * s, Want: 4, InUse: 10},
			{At: 10*s - 1, Op: "grant", Holder: "c", N: 1, Cap: 10, TTL: 10 * s, Want: 0, InUse: 10},
			{At: 10 * s, Op: "grant", Holder: "c", N: 5, Cap: 10, TTL: 10 * s, Want: 5, InUse: 8},
			{At: 10 * s, Op: "expire", InUse: 8, Dropped: []string{"a", "z"}},
			{At: 10 * s, Op: "expire", InUse: 8},
			{At: 25 * s, Op: "expire", InUse: 0, Dropped: []string{"b", "c"}},
		}},
		{"renewing extends the expiry; an expired lease is replaced", []pStep{
			{Op: "grant", Holder: "a", N: 5, Cap: 5, TTL: 10 * s, Want: 5, InUse: 5},
			{At: 8 * s, Op: "grant", Holder: "a", N: 5, Cap: 5, TTL: 10 * s, Want: 5, InUse: 5},
			{At: 12 * s, Op: "expire", InUse: 5},
			{At: 30 * s, Op: "grant", Holder: "a", N: 3, Cap: 5, TTL: 10 * s, Want: 3, InUse: 3},
			{At: 30 * s, Op: "expire", InUse: 3},
		}},
		{"returns are clamped to the lease", []pStep{
			{Op: "grant", Holder: "a", N: 3, Cap: 5, TTL: 10 * s, Want: 3, InUse: 3},
			{Op: "return", Holder: "a", N: 0, Want: 0, InUse: 3},
			{Op: "return", Holder: "a", N: -2, Want: 0, InUse: 3},
			{Op: "return", Holder: "x", N: 2, Want: 0, InUse: 3},
			{Op: "return", Holder: "a", N: 9, Want: 3, InUse: 0},
			{Op: "return", Holder: "a", N: 1, Want: 0, InUse: 0},
		}},
		{"nothing for a bad want, ttl or cap", []pStep{
			{Op: "grant", Holder: "a", N: -1, Cap: 5, TTL: 10 * s, Want: 0, InUse: 0},
			{Op: "grant", Holder: "a", N: 2, Cap: 5, TTL: 0, Want: 0, InUse: 0},
			{Op: "grant", Holder: "a", N: 2, Cap: -3, TTL: 10 * s, Want: 0, InUse: 0},
			{Op: "grant", Holder: "a", N: 2, Cap: 0, TTL: 10 * s, Want: 0, InUse: 0},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewLedger()
			for i, st := range tc.steps {
				now := permitsEpoch.Add(st.At)
				got := 0
				switch st.Op {
				case "grant":
					l := p.Lend(st.Holder, st.N, st.Cap, st.TTL, now)
					got = l.Permits
					if l.Holder != st.Holder || (l.Permits > 0) != l.Expires.Equal(now.Add(st.TTL)) {
						t.Fatalf("step %d: lease %+v", i, l)
					}
				case "return":
					got = p.Return(st.Holder, st.N)
				case "expire":
					var holders []string
					for _, l := range p.Expire(now) {
						holders = append(holders, l.Holder)
					}
					if !slices.Equal(holders, st.Dropped) {
						t.Fatalf("step %d: dropped %v, want %v", i, holders, st.Dropped)
					}
				}
				if got != st.Want {
					t.Fatalf("step %d (%s %s): got %d, want %d", i, st.Op, st.Holder, got, st.Want)
				}
				if n := p.InUse(now); n != st.InUse {
					t.Fatalf("step %d (%s %s): in use %d, want %d", i, st.Op, st.Holder, n, st.InUse)
				}
				checkLeasesSorted(t, fmt.Sprintf("step %d", i), leases(p))
			}
		})
	}
}

func checkLeasesSorted(t *testing.T, where string, ls []Lease) {
	t.Helper()
	for i, l := range ls {
		if l.Permits <= 0 {
			t.Fatalf("%s: lease %+v holds nothing", where, l)
		}
		if i > 0 && ls[i-1].Holder >= l.Holder {
			t.Fatalf("%s: leases out of order or repeated: %v", where, ls)
		}
	}
}

func TestLedgerQueue(t *testing.T) {
	p := NewLedger()
	for _, w := range []string{"d1", "d2", "d3", "d4"} {
		if !p.Enqueue(w) {
			t.Fatalf("Enqueue(%s) refused", w)
		}
	}
	if p.Enqueue("d2") {
		t.Fatal("Enqueue(d2) twice accepted")
	}
	if !p.Remove("d1") || !p.Enqueue("d1") {
		t.Fatal("a removed waiter could not queue again")
	}
	if !p.Remove("d4") || p.Remove("d4") {
		t.Fatal("Remove(d4) should succeed once")
	}
	if got := p.Waiting; !slices.Equal(got, []string{"d2", "d3", "d1"}) {
		t.Fatalf("queue %v, want [d2 d3 d1]", got)
	}
}

func TestLedgerCopiesAreIndependent(t *testing.T) {
	now := permitsEpoch
	p := NewLedger()
	p.Enqueue("a")
	p.Lend("w1", 1, 10, time.Minute, now)
	c := p
	c.Enqueue("b")
	p.Enqueue("c")
	c.Lend("w2", 1, 10, time.Minute, now)
	p.Lend("w3", 1, 10, time.Minute, now)
	if !slices.Equal(c.Waiting, []string{"a", "b"}) || !slices.Equal(p.Waiting, []string{"a", "c"}) {
		t.Fatalf("queues %v and %v", c.Waiting, p.Waiting)
	}
	if len(c.Held) != 2 || c.Held[1].Holder != "w2" || leases(p)[1].Holder != "w3" {
		t.Fatalf("leases %v and %v", c.Held, leases(p))
	}
}

// TestPermitsProperties drives a ledger with random grants, returns, expiries, cap changes,
// queue operations and clock steps, next to a plain model, and a twin that goes through JSON
// now and then: in-use never grows past the cap, the queue is FIFO without losses or
// duplicates, and the twin always answers the same.
func TestLedgerProperties(t *testing.T) {
	holders := []string{"w1", "w2", "w3", "w4", "w5"}
	for seed := int64(1); seed <= int64(runs(2000)); seed++ {
		rng := rand.New(rand.NewSource(seed))
		p, twin := NewLedger(), NewLedger()
		model := map[string]Lease{}
		var queue []string
		next := 0 // next fresh waiter id
		now := permitsEpoch
		capNow := 1 + rng.Intn(20)
		for step := range 300 {
			where := fmt.Sprintf("seed %d step %d", seed, step)
			now = now.Add(time.Duration(rng.Intn(4000)) * time.Millisecond)
			if rng.Intn(10) == 0 {
				jsonRoundTrip(t, &twin)
			}
			if rng.Intn(25) == 0 {
				capNow = 1 + rng.Intn(20)
			}
			before := p.InUse(now)
			grew := false
			switch op := rng.Intn(7); op {
			case 0, 1:
				h := holders[rng.Intn(len(holders))]
				want, ttl := rng.Intn(12), time.Duration(1+rng.Intn(30))*time.Second
				had := 0
				if l, ok := model[h]; ok && l.Expires.After(now) {
					had = l.Permits
				}
				l, l2 := p.Lend(h, want, capNow, ttl, now), twin.Lend(h, want, capNow, ttl, now)
				if !reflect.DeepEqual(l, l2) {
					t.Fatalf("%s: twin granted %+v, original %+v", where, l2, l)
				}
				if l.Permits > want || l.Permits < min(had, want) {
					t.Fatalf("%s: granted %d for want %d holding %d", where, l.Permits, want, had)
				}
				grew = l.Permits > had
				delete(model, h)
				if l.Permits > 0 {
					model[h] = l
				}
			case 2:
				h := holders[rng.Intn(len(holders))]
				n := rng.Intn(6)
				got, got2 := p.Return(h, n), twin.Return(h, n)
				l, ok := model[h]
				want := 0
				if ok {
					want = min(n, l.Permits)
					l.Permits -= want
					model[h] = l
					if l.Permits == 0 {
						delete(model, h)
					}
				}
				if got != want || got2 != want {
					t.Fatalf("%s: returned %d (twin %d), want %d", where, got, got2, want)
				}
			case 3:
				d, d2 := p.Expire(now), twin.Expire(now)
				if !reflect.DeepEqual(d, d2) {
					t.Fatalf("%s: twin dropped %v, original %v", where, d2, d)
				}
				var want []Lease
				for _, l := range modelLeases(model) {
					if !l.Expires.After(now) {
						want = append(want, l)
						delete(model, l.Holder)
					}
				}
				if !reflect.DeepEqual(d, want) {
					t.Fatalf("%s: dropped %v, want %v", where, d, want)
				}
			case 4, 5:
				var w string
				if rng.Intn(3) == 0 && len(queue) > 0 {
					w = queue[rng.Intn(len(queue))] // a duplicate
				} else {
					w = fmt.Sprintf("d%d", next)
					next++
				}
				ok, ok2 := p.Enqueue(w), twin.Enqueue(w)
				if ok != !slices.Contains(queue, w) || ok != ok2 {
					t.Fatalf("%s: Enqueue(%s) = %v (twin %v) with queue %v", where, w, ok, ok2, queue)
				}
				if ok {
					queue = append(queue, w)
				}
			case 6:
				if len(queue) == 0 {
					break
				}
				w := queue[rng.Intn(len(queue))]
				if !p.Remove(w) || !twin.Remove(w) {
					t.Fatalf("%s: Remove(%s) failed", where, w)
				}
				queue = slices.DeleteFunc(queue, func(s string) bool { return s == w })
			}
			after := p.InUse(now)
			if grew && after > capNow || after > before && after > capNow {
				t.Fatalf("%s: in use went %d to %d with cap %d", where, before, after, capNow)
			}
			if after != twin.InUse(now) || !reflect.DeepEqual(leases(p), leases(twin)) {
				t.Fatalf("%s: twin leases %v, original %v", where, leases(twin), leases(p))
			}
			want := modelLeases(model)
			if got := leases(p); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: leases %v, model %v", where, got, want)
			}
			checkLeasesSorted(t, where, leases(p))
			if got := p.Waiting; !slices.Equal(got, queue) {
				t.Fatalf("%s: queue %v, model %v", where, got, queue)
			}
		}
	}
}

// leases returns p's leases, nil if there are none.
func leases(p Ledger) []Lease {
	if len(p.Held) == 0 {
		return nil
	}
	return p.Held
}

// modelLeases returns the model's leases sorted by holder.
func modelLeases(model map[string]Lease) []Lease {
	var out []Lease
	for _, l := range model {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Lease) int { return strings.Compare(a.Holder, b.Holder) })
	return out
}

// TestLedgerDecodedOverOwnedQueue decodes a queue into a ledger that has already indexed
// another: the index follows the queue read, not the one replaced.
func TestLedgerDecodedOverOwnedQueue(t *testing.T) {
	p := NewLedger()
	p.Enqueue("a")
	p.Enqueue("b")
	if err := json.Unmarshal([]byte(`{"waiting":["c"]}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Queued("a") || !p.Queued("c") {
		t.Fatalf("after decoding [c]: queued(a) %v, queued(c) %v", p.Queued("a"), p.Queued("c"))
	}
	if !p.Enqueue("a") || !slices.Equal(p.Waiting, []string{"c", "a"}) {
		t.Fatalf("queue %v, want [c a]", p.Waiting)
	}
}

// Keys stay aligned with the queue through every change, a copy keeps the keys it saw, and
// a ledger decoded from JSON keeps them.
func TestLedgerKeysFollowTheQueue(t *testing.T) {
	var p Ledger
	for _, w := range []string{"a", "b", "c", "d"} {
		p.Enqueue(w)
	}
	if p.Keys != nil {
		t.Fatalf("keys %v before any was named, want none", p.Keys)
	}
	p.SetKey("d", 4)
	p.SetKey("b", 2)
	p.Enqueue("e")
	p.SetKey("e", 5)
	copied := p
	p.Remove("c")
	p.ToFront("d")
	p.Remove("d")
	if want := []uint32{0, 2, 5}; !slices.Equal(p.Keys, want) || !slices.Equal(p.Waiting, []string{"a", "b", "e"}) {
		t.Fatalf("queue %v keys %v, want [a b e] %v", p.Waiting, p.Keys, want)
	}
	if want := []uint32{0, 2, 0, 4, 5}; !slices.Equal(copied.Keys, want) {
		t.Errorf("the copy's keys %v, want %v", copied.Keys, want)
	}
	q := p
	jsonRoundTrip(t, &q)
	q.Remove("a")
	if q.FirstKey() != 2 {
		t.Errorf("after decoding and taking a: first key %d, want 2", q.FirstKey())
	}
}

// TestLedgerKeysAtTheQueueBound crosses the queue's bound (MaxQueue, 10,000) with every
// waiter keyed, as gates key their waits (WaitKey), plus waiters queued past it (waits in
// flight when it filled): the keys stay aligned with the queue through removals at the
// front and in the middle and a continue-as-new's JSON round trip, and take at most 11
// bytes each in the encoded ledger (about 110 KB at the bound, as the README states).
func TestLedgerKeysAtTheQueueBound(t *testing.T) {
	n := DefaultLimiterConfig().MaxQueue + 50
	var p Ledger
	want := map[string]uint32{}
	for i := range n {
		w := fmt.Sprintf("default/evt_%06d", i)
		p.Enqueue(w)
		k := WaitKey(i%7, i%5+1, i%3)
		p.SetKey(w, k)
		want[w] = k
	}
	for i := 0; i < n; i += 97 { // the middle
		p.Remove(fmt.Sprintf("default/evt_%06d", i))
	}
	for _, w := range slices.Clone(p.Waiting[:100]) { // the front, as grants take them
		p.Remove(w)
	}
	q := p
	jsonRoundTrip(t, &q)
	if len(q.Keys) != len(q.Waiting) {
		t.Fatalf("%d keys for %d waiters after the round trip", len(q.Keys), len(q.Waiting))
	}
	for i, w := range q.Waiting {
		if q.Keys[i] != want[w] {
			t.Fatalf("waiter %d (%s) has key %d, want %d", i, w, q.Keys[i], want[w])
		}
	}
	keys, err := json.Marshal(q.Keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys)-2 > 11*len(q.Keys) { // ten digits and a comma each, and the brackets
		t.Errorf("%d keys take %d bytes encoded, want at most 11 each", len(q.Keys), len(keys))
	}
	t.Logf("%d waiters: keys %d bytes encoded", len(q.Waiting), len(keys))
}
