package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Lease is a block of permits held by one holder (a worker process, or a woken waiter)
// until Expires.
type Lease struct {
	// Holder identifies who holds the permits.
	Holder string `json:"holder"`
	// Permits is how many attempts the holder may have in flight.
	Permits int `json:"permits"`
	// Expires is when the permits return on their own unless renewed.
	Expires time.Time `json:"expires,omitzero"`
	// Flight, when above Permits, is how many attempts the holder may still be running
	// until it next renews: a renewal that cut its lease found it admitting against the
	// lease it had while the renewal was in flight (Ledger.Reserve). The lease counts
	// toward the cap as the larger of the two.
	Flight int `json:"flight,omitempty"`
}

// counted is how many permits l takes from the cap while it lives.
func (l Lease) counted() int { return max(l.Permits, l.Flight) }

// Ledger is one endpoint's ledger of leased permits and its FIFO queue of waiters. It is a
// value with exported fields so that it round-trips through encoding/json (continue-as-new);
// change it only through its methods. A lease counts toward the cap until it expires
// (a lease expiring at now no longer counts). Nothing is ever revoked: when the cap shrinks
// below what is leased, new permits wait until what is leased falls under the new cap.
// The ledger knows nothing of the circuit: while it is not closed, pass cap 0 to Lend and
// let attempts through one by one as Breaker.Admit allows. Queue operations take constant
// time (a queue of thousands is the normal shape of an outage); copies of a ledger stay
// independent: a copy clones the queue before its first change.
type Ledger struct {
	// Held holds the leases, sorted by holder, none with zero permits unless it reserves
	// a Flight.
	Held []Lease `json:"held,omitempty"`
	// Waiting holds the waiter ids, first in line first, each once.
	Waiting []string `json:"waiting,omitempty"`
	// Keys holds, in the order of Waiting, the key of the attempt each queued waiter waits
	// for (WaitKey; 0: not named by its gate), or nothing while none is named (SetKey).
	Keys []uint32 `json:"keys,omitempty"`

	// own is the ledger that may change Waiting's backing array in place (itself, once it
	// has cloned it): a copy, or a ledger decoded from JSON, clones before its first change.
	own *Ledger
	// queued indexes Waiting, for the ledger that owns it.
	queued map[string]struct{}
}

// NewLedger returns an empty ledger with an empty queue.
func NewLedger() Ledger { return Ledger{} }

// Lend sets holder's lease to up to want permits in total and renews it to expire at
// now+ttl. Asking for fewer than held gives the difference back; asking for more takes only
// what the cap leaves free (cap minus the live permits of all holders), possibly none; what
// the holder already has is never cut. A holder's expired lease is replaced. It returns
// the lease now held, with zero Permits and Expires if there is none (want ≤ 0, ttl ≤ 0, or
// nothing held and nothing free).
func (p *Ledger) Lend(holder string, want, cap int, ttl time.Duration, now time.Time) Lease {
	i, found := p.find(holder)
	have := 0
	if found && p.Held[i].Expires.After(now) {
		have = p.Held[i].Permits
	}
	n := 0
	if want > 0 && ttl > 0 {
		free := max(cap, 0) - p.InUse(now)
		n = min(want, have+max(free, 0))
	}
	if n == 0 {
		if found {
			p.Held = slices.Delete(slices.Clone(p.Held), i, i+1)
		}
		return Lease{Holder: holder}
	}
	l := Lease{Holder: holder, Permits: n, Expires: now.Add(ttl)}
	held := slices.Clone(p.Held)
	if found {
		held[i] = l
	} else {
		held = slices.Insert(held, i, l)
	}
	p.Held = held
	return l
}

// Return gives back up to n permits of holder's lease, removing the lease when none are
// left, and returns how many were given back.
func (p *Ledger) Return(holder string, n int) int {
	i, found := p.find(holder)
	if !found || n <= 0 {
		return 0
	}
	held := slices.Clone(p.Held)
	back := min(n, held[i].Permits)
	held[i].Permits -= back
	if held[i].Permits == 0 {
		held = slices.Delete(held, i, i+1)
	}
	p.Held = held
	return back
}

// Expire drops the leases expired at now (Expires not after now) and returns them, sorted by holder.
func (p *Ledger) Expire(now time.Time) []Lease {
	var dropped, kept []Lease
	for _, l := range p.Held {
		if l.Expires.After(now) {
			kept = append(kept, l)
		} else {
			dropped = append(dropped, l)
		}
	}
	if len(dropped) > 0 {
		p.Held = kept
	}
	return dropped
}

// InUse returns the permits held in leases still live at now (each lease counted as
// the larger of its permits and its flight).
func (p *Ledger) InUse(now time.Time) int {
	n := 0
	for _, l := range p.Held {
		if l.Expires.After(now) {
			n += l.counted()
		}
	}
	return n
}

// Reserve records that holder may be running up to flight attempts until it next renews,
// though its lease (just lent) is smaller, and keeps them counted toward the cap until
// expires (a reservation with no lease is kept as a lease of zero permits). A flight no
// larger than the lease changes nothing.
func (p *Ledger) Reserve(holder string, flight int, expires time.Time) {
	i, found := p.find(holder)
	if found && flight <= p.Held[i].Permits {
		return
	}
	if !found && flight <= 0 {
		return
	}
	held := slices.Clone(p.Held)
	if found {
		held[i].Flight = flight
		held[i].Expires = later(held[i].Expires, expires)
	} else {
		held = slices.Insert(held, i, Lease{Holder: holder, Expires: expires, Flight: flight})
	}
	p.Held = held
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Free returns how many permits the cap leaves free at now, never below 0.
func (p *Ledger) Free(cap int, now time.Time) int {
	return max(cap-p.InUse(now), 0)
}

// Lease returns a copy of holder's lease and whether it has one (expired or not).
func (p *Ledger) Lease(holder string) (Lease, bool) {
	i, found := p.find(holder)
	if !found {
		return Lease{}, false
	}
	return p.Held[i], true
}

// Enqueue puts waiter at the back of the queue and reports true, or reports false and
// changes nothing if it is already queued.
func (p *Ledger) Enqueue(waiter string) bool {
	p.mine()
	if _, ok := p.queued[waiter]; ok {
		return false
	}
	// Appending past every copy's length changes nothing any copy can see.
	p.Waiting = append(p.Waiting, waiter)
	if p.Keys != nil {
		p.Keys = append(p.Keys, 0)
	}
	p.queued[waiter] = struct{}{}
	return true
}

// SetKey notes key, the attempt a queued waiter waits for (0: none named), until it leaves
// the queue. The waiter just enqueued (the last) costs constant time; another, a scan.
func (p *Ledger) SetKey(waiter string, key uint32) {
	p.mine()
	if _, ok := p.queued[waiter]; !ok || (key == 0 && p.Keys == nil) {
		return
	}
	i := len(p.Waiting) - 1
	if p.Waiting[i] != waiter {
		i = slices.Index(p.Waiting, waiter)
	}
	switch {
	case p.Keys == nil:
		p.Keys = make([]uint32, len(p.Waiting))
	case i != len(p.Waiting)-1:
		// Copies may share the array up to their length: change a new one.
		p.Keys = slices.Clone(p.Keys)
	}
	p.Keys[i] = key
}

// FirstKey is the key noted for the first in line (SetKey), 0 if none.
func (p *Ledger) FirstKey() uint32 {
	if len(p.Keys) == 0 {
		return 0
	}
	return p.Keys[0]
}

// Queued reports whether waiter is in the queue.
func (p *Ledger) Queued(waiter string) bool {
	p.mine()
	_, ok := p.queued[waiter]
	return ok
}

// Remove takes waiter out of the queue and reports whether it was queued. Taking the first
// in line, the common case, costs constant time.
func (p *Ledger) Remove(waiter string) bool {
	p.mine()
	if _, ok := p.queued[waiter]; !ok {
		return false
	}
	delete(p.queued, waiter)
	if p.Waiting[0] == waiter {
		p.Waiting = p.Waiting[1:]
		if p.Keys != nil {
			p.Keys = p.Keys[1:]
		}
		return true
	}
	// Copies may share the array: take the waiter out of a new one.
	i := slices.Index(p.Waiting, waiter)
	p.Waiting = slices.Delete(slices.Clone(p.Waiting), i, i+1)
	if p.Keys != nil {
		p.Keys = slices.Delete(slices.Clone(p.Keys), i, i+1)
	}
	return true
}

// ToFront moves a queued waiter to the front of the queue (a scan: rare).
func (p *Ledger) ToFront(waiter string) {
	p.mine()
	if _, ok := p.queued[waiter]; !ok || p.Waiting[0] == waiter {
		return
	}
	i := slices.Index(p.Waiting, waiter)
	w := make([]string, 0, len(p.Waiting))
	w = append(append(append(w, waiter), p.Waiting[:i]...), p.Waiting[i+1:]...)
	p.Waiting = w
	if p.Keys != nil {
		k := make([]uint32, 0, len(p.Keys))
		p.Keys = append(append(append(k, p.Keys[i]), p.Keys[:i]...), p.Keys[i+1:]...)
	}
}

// UnmarshalJSON reads a ledger, dropping what p knew of the queue it replaces: the index
// is built again, from the queue read, before the next change.
func (p *Ledger) UnmarshalJSON(b []byte) error {
	type plain Ledger // the fields without this method
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = Ledger(v)
	if len(p.Keys) != len(p.Waiting) {
		p.Keys = nil // not aligned with the queue: written by no Herald; forget them
	}
	return nil
}

// mine makes p the owner of its queue: a copy, or a ledger decoded from JSON, clones the
// queue and indexes it, once.
func (p *Ledger) mine() {
	if p.own == p {
		return
	}
	p.Waiting = slices.Clone(p.Waiting)
	if p.Keys != nil {
		p.Keys = slices.Clone(p.Keys)
	}
	p.queued = make(map[string]struct{}, len(p.Waiting))
	for _, w := range p.Waiting {
		p.queued[w] = struct{}{}
	}
	p.own = p
}

// find returns where holder's lease is, or would be inserted, in the sorted Held.
func (p *Ledger) find(holder string) (int, bool) {
	return slices.BinarySearchFunc(p.Held, holder, func(l Lease, h string) int {
		return strings.Compare(l.Holder, h)
	})
}
