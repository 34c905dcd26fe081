package policy

import "time"

// Ordered delivery: where an appended delivery stands when nobody has seen it started yet.
//
// A send appends its delivery to the key's sequencer and starts it only once the append
// has answered, so a sequencer that takes several appends of one key in one workflow task
// cannot find the earlier ones started: their answers leave with that task. Rather than
// wait for each (a second per place, and the sends wait with it), the sequencer answers at
// once with the appended deliveries it has not seen started, newest first, and the one
// before them that it has (ChainWalk); the new delivery looks for its predecessor itself
// (JudgeLink), and passes over one that is still missing after the grace (its send failed).

// ChainLink is a delivery appended to an ordering key and not yet seen started, with the
// time it was appended.
type ChainLink struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Seq is the number its append gave it in the key.
	Seq int64 `json:"seq,omitempty"`
	// Asked is when a walk last asked where it is and did not find it started.
	Asked time.Time `json:"asked,omitzero"`
}

// Where a delivery is, as a local activity found it (the workflows map the activity's
// answer onto these).
const (
	// LinkRunning: started, still open: the successor waits for it.
	LinkRunning = "running"
	// LinkClosed: started and closed: its turn is over, and so is every one before it.
	LinkClosed = "closed"
	// LinkMissing: no run of it exists.
	LinkMissing = "missing"
	// LinkUnknown: the question could not be answered.
	LinkUnknown = "unknown"
)

// LinkFate is what a delivery not yet seen started means for the one after it.
type LinkFate int

// The fates JudgeLink tells.
const (
	// FateWait: it is running; the one after it waits for its turn.
	FateWait LinkFate = iota
	// FateTurn: it is closed; the one after it has its turn.
	FateTurn
	// FateStarting: it is not found yet, but its send may still be starting it (appended
	// less than the grace ago), or the question went unanswered: look again.
	FateStarting
	// FatePassed: still not found past the grace: its send failed, it never will be; the
	// one after it goes after the one before it.
	FatePassed
)

// JudgeLink says what presence (LinkRunning, LinkClosed, LinkMissing or LinkUnknown) of a
// delivery appended at appended means at now, with grace the longest a send may take to
// start a delivery after its append.
func JudgeLink(presence string, appended, now time.Time, grace time.Duration) LinkFate {
	switch presence {
	case LinkRunning:
		return FateWait
	case LinkClosed:
		return FateTurn
	case LinkMissing:
		if now.Sub(appended) >= grace {
			return FatePassed
		}
	}
	return FateStarting
}

// ChainPlace is where a sequencer's walk of its unconfirmed links ends.
type ChainPlace struct {
	// Starting are the links that may still be starting, newest first: the new delivery
	// looks for them itself, in this order.
	Starting []ChainLink
	// Base is the newest link seen started (running or closed), or the walk's base when
	// none was; Closed says it was seen closed by this walk.
	Base   string
	Closed bool
}

// ChainWalk walks a sequencer's unconfirmed links, newest first, above base (the newest
// delivery seen started, "" for none), asking look where each is, and stops at the first
// seen started. A link appended at now (in the workflow task that runs the walk) is not
// asked: its send cannot have started it yet, since its answer leaves with this task; nor
// is one already asked at now (by an earlier append of the same task): the answer would
// hardly differ, and a burst of appends would ask each other link once per append. Links
// passed over (missing past grace) are dropped. look is called in order, at most once per
// link, so a workflow may back it with local activities.
func ChainWalk(links []ChainLink, base string, now time.Time, grace time.Duration, look func(id string) string) ChainPlace {
	p := ChainPlace{Base: base}
	for _, l := range links {
		if !l.At.Before(now) || l.Asked.Equal(now) {
			p.Starting = append(p.Starting, l)
			continue
		}
		l.Asked = now
		switch JudgeLink(look(l.ID), l.At, now, grace) {
		case FateWait:
			p.Base = l.ID
			return p
		case FateTurn:
			p.Base, p.Closed = l.ID, true
			return p
		case FateStarting:
			p.Starting = append(p.Starting, l)
		}
	}
	return p
}

// Ready reports whether a delivery placed after p has its turn at once: nothing before it
// that may still be starting, and its base closed or none.
func (p ChainPlace) Ready() bool {
	return len(p.Starting) == 0 && (p.Base == "" || p.Closed)
}
