package gate

import (
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// Reads offered by the process. An API in the worker's process (herald dev, herald worker
// --api-listen) reads an endpoint's admission view to accept a send to it, a moment before
// the delivery's first attempt reaches this gate, which would read it again: for an
// endpoint the gate does not know (a cold one) that is two describes of a workflow the
// server has not cached. The API offers its read instead (Offer), and the gate's first
// attempt to the endpoint takes it while it is as fresh as a read of the gate's own.

// MaxOffers is the most offered reads a gate keeps; past it, it forgets them all (an
// attempt then reads the endpoint itself). An offer older than the renewal interval is
// of no use and is dropped as new ones come.
const MaxOffers = 10_000

type offer struct {
	v  herald.AdmissionView
	at time.Time // when the read was asked
}

// offers are the reads offered and not yet taken, by endpoint id (max 0: MaxOffers).
type offers = capped[offer]

// runNoter is implemented by Endpoints that remember each endpoint workflow's run.
type runNoter interface{ noteRun(id, run string) }

// Offer gives the gate a read of endpoint id's admission view (herald.ReadAdmissionRun,
// asked at at, of run run) that another part of the process made. The next attempt to the
// endpoint that finds the gate's knowledge of it too old takes it instead of reading,
// if it is younger than the gate's renewal interval (and policy.MaxConfigAge) then.
func (g *Gate) Offer(id, run string, v herald.AdmissionView, at time.Time) {
	if n, ok := g.calls.(runNoter); ok && run != "" {
		n.noteRun(id, run)
	}
	g.offered.put(id, offer{v: v, at: at}, MaxOffers,
		func(old offer) bool { return time.Since(old.at) >= g.offerAge() },
		func(old offer) bool { return !old.at.After(at) })
}

// take returns and forgets the read offered for endpoint id, if it is still fresh.
func (g *Gate) take(id string) (offer, bool) {
	f, ok := g.offered.take(id)
	return f, ok && time.Since(f.at) < g.offerAge()
}

func (g *Gate) offerAge() time.Duration { return min(g.every, policy.MaxConfigAge) }

// offeredCount is how many offers the gate keeps.
func (g *Gate) offeredCount() int { return g.offered.size() }
