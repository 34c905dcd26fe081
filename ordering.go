package herald

import (
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/policy"
)

// Ordered delivery per key (issue 26). A send may carry an ordering key: the deliveries
// of one endpoint that share a key are attempted in the order they were accepted, each
// one's first request starting only after the one before it is delivered, dead-lettered
// (as the endpoint's OrderingOnDeadLetter says) or skipped. Other keys and sends without a
// key are never held.
//
// A small sequencer workflow per (tenant, endpoint, key), SequencerWorkflowID, hands each
// new delivery its predecessor (the key's tail) through UpdateOrderingAppend and records
// the new tail: a bounded chain of ids, whatever the number of events. It looks where its
// tail is first (PresenceRunning, PresenceClosed, PresenceMissing): after a closed tail the
// new delivery is ready (OrderingPlace.Ready: its turn is there); a tail not seen started
// yet (its send may still be starting it) is listed in OrderingPlace.Starting for the new
// delivery to look for itself, and one still missing after a grace (its send failed) is
// passed over: the new delivery goes after the one before it. Otherwise the successor
// tells its predecessor it waits (SignalOrderingNext), and the predecessor hands it the turn
// (SignalOrderingTurn) when its own turn ends; a predecessor that is already closed cannot
// be signalled, and that failure is the turn.

// MaxOrderingKeyLen is the longest ordering key, in bytes.
const MaxOrderingKeyLen = 128

// ValidateOrderingKey checks an ordering key: 1 to MaxOrderingKeyLen ASCII letters,
// digits, '-', '_', '.', ':' and '@' (an entity id such as "customer:42").
func ValidateOrderingKey(k string) error {
	if k == "" || len(k) > MaxOrderingKeyLen {
		return fmt.Errorf("ordering key must be 1 to %d characters, got %d", MaxOrderingKeyLen, len(k))
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:@", c) >= 0) {
			return fmt.Errorf("ordering key %q: character %q at %d is not allowed (ASCII letters, digits, '-', '_', '.', ':' and '@')", k, c, i)
		}
	}
	return nil
}

// What a dead letter at the head of an ordering key does (Overrides.OrderingOnDeadLetter).
const (
	// OrderingBlock (the default): the key waits until the dead letter is replayed and
	// delivered, or expires; herald status says which event holds the key.
	OrderingBlock = "block"
	// OrderingSkip: the next delivery of the key goes; the dead letter records that it was
	// passed, and a replay of it is delivered out of order.
	OrderingSkip = "skip"
)

// ValidateOrderingOnDeadLetter checks an endpoint's OrderingOnDeadLetter: "", block or skip.
func ValidateOrderingOnDeadLetter(v string) error {
	switch v {
	case "", OrderingBlock, OrderingSkip:
		return nil
	}
	return fmt.Errorf("ordering on dead letter %q: want %s or %s", v, OrderingBlock, OrderingSkip)
}

// SequencerWorkflowID is the workflow id of the sequencer of ordering key key at endpoint
// endpointID of tenant: "ordering:<tenant>:<endpoint>:<key>" (tenants and endpoint ids
// have no ':'; a key may, and it comes last).
func SequencerWorkflowID(tenant, endpointID, key string) string {
	return "ordering:" + TenantOrDefault(tenant) + ":" + endpointID + ":" + key
}

// Names of the ordering messages.
const (
	// SequencerWorkflow is the workflow type of an ordering key's sequencer.
	SequencerWorkflow = "OrderingSequencer"
	// UpdateOrderingAppend appends a delivery to a key (OrderingAppend), answering its
	// predecessor (OrderingPlace).
	UpdateOrderingAppend = "append"
	// SignalOrderingNext tells a delivery that the delivery named in the payload (a workflow
	// id) comes next in its key and waits for its turn.
	SignalOrderingNext = "ordering-next"
	// SignalOrderingTurn hands a delivery its turn (OrderingTurn).
	SignalOrderingTurn = "ordering-turn"
	// MemoOrdering is the memo field of an ordered delivery that parked as a dead letter:
	// its OrderingStatus (the dead-letter list reads Blocking from it).
	MemoOrdering = "ordering"
)

// OrderingAppend asks a key's sequencer to append a delivery.
type OrderingAppend struct {
	// Delivery is the delivery's workflow id.
	Delivery string `json:"delivery"`
}

// OrderingPlace is a delivery's place in its key: the delivery before it ("" for none),
// and its number in the key (1 for the first since the key's sequencer last started).
type OrderingPlace struct {
	After string `json:"after,omitempty"`
	Seq   int64  `json:"seq,omitempty"`
	// Ready is set when the delivery before it was closed as it was appended (or it has
	// none): its turn is already there, and it tells nobody it waits.
	Ready bool `json:"ready,omitempty"`
	// Starting lists, newest first, the deliveries appended before it that the sequencer
	// has not seen started yet (their sends may still be starting them); After is then the
	// newest one seen started. The delivery looks for them itself: it waits for the first
	// it finds running, has its turn at one it finds closed, and passes over one still
	// missing after the sequencer's grace (its send failed). Empty from a sequencer before
	// versionOrderingPlaced's version 2.
	Starting []policy.ChainLink `json:"starting,omitempty"`
}

// Where a workflow is, as an ordering key's sequencer finds its tail (activities.Ops.Presence).
const (
	// PresenceRunning: its latest run is open.
	PresenceRunning = policy.LinkRunning
	// PresenceClosed: its latest run is closed.
	PresenceClosed = policy.LinkClosed
	// PresenceMissing: no run of it exists (its send failed after it was appended, or it
	// is past its retention).
	PresenceMissing = policy.LinkMissing
)

// OrderingSignal is an ordering signal that a delivery sends from a local activity: to
// workflow To, Name is SignalOrderingNext (with Next, the sender's workflow id) or
// SignalOrderingTurn (with Turn).
type OrderingSignal struct {
	To   string       `json:"to"`
	Name string       `json:"name"`
	Next string       `json:"next,omitempty"`
	Turn OrderingTurn `json:"turn,omitzero"`
}

// OrderingTurn hands a delivery its turn: the predecessor that ended its turn, and how.
type OrderingTurn struct {
	From   string `json:"from"`
	Reason string `json:"reason"`
}

// Ordering is an ordered delivery's place in its key (DeliveryInput.Ordering).
type Ordering struct {
	Key string `json:"key"`
	// After is the workflow id of the delivery before it; "" when it was first.
	After string `json:"after,omitempty"`
	// Seq is its number in the key (OrderingPlace.Seq).
	Seq int64 `json:"seq,omitempty"`
	// Turn is set once the delivery had its turn (carried over a continue-as-new).
	Turn bool `json:"turn,omitempty"`
	// Next is the workflow id of the delivery after it, once that one said it waits.
	Next string `json:"next,omitempty"`
	// Released is set once the delivery handed its successor the turn (or would have).
	Released bool `json:"released,omitempty"`
	// Starting is OrderingPlace.Starting, until the delivery has found its predecessor.
	Starting []policy.ChainLink `json:"starting,omitempty"`
	// Also lists the other deliveries that said they wait after it, in the order they
	// said so: two sends of one key at once may both find the delivery between them not
	// started yet, and both wait on it. Each gets the turn with Next.
	Also []string `json:"also,omitempty"`
}

// OrderingStatus is an ordered delivery's key in its status: what it waits on, or that it
// holds the key as a dead letter, or that it was passed.
type OrderingStatus struct {
	Key string `json:"key"`
	// Seq is the delivery's number in its key (1 for the first since the key's sequencer
	// last started; 0 if unknown).
	Seq int64 `json:"seq,omitempty"`
	// WaitingFor is the event id of the delivery it waits for, while it waits for its turn.
	WaitingFor string `json:"waiting_for,omitempty"`
	// Blocking is set while it is a dead letter holding its key (OrderingBlock).
	Blocking bool `json:"blocking,omitempty"`
	// Passed is set when it was dead-lettered under OrderingSkip and the key went on.
	Passed bool `json:"passed,omitempty"`
}

// OrderingEventID is the event id in a delivery workflow id (for status), or the id itself.
func OrderingEventID(workflowID string) string {
	if _, id, ok := ParseDeliveryID(workflowID); ok {
		return id
	}
	return workflowID
}

// SequencerInput starts (or continues as new) an ordering key's sequencer.
type SequencerInput struct {
	// Tail is the workflow id of the key's last delivery; TailAfter is the one before it.
	Tail      string `json:"tail,omitempty"`
	TailAfter string `json:"tail_after,omitempty"`
	// Seq is the number the tail got (OrderingPlace.Seq).
	Seq int64 `json:"seq,omitempty"`
	// TailAt is when the tail was appended, and TailReady whether its turn was already
	// there (OrderingPlace.Ready).
	TailAt    time.Time `json:"tail_at,omitzero"`
	TailReady bool      `json:"tail_ready,omitempty"`
	// Chained is set by a sequencer since versionOrderingPlaced's version 2, whose state is
	// Chain and Base (and Tail, Seq, Place) instead of TailAfter, TailAt and TailReady.
	Chained bool `json:"chained,omitempty"`
	// Chain lists the appended deliveries not yet seen started, newest first (bounded by
	// the sequencer); Base is the newest seen started ("" for none).
	Chain []policy.ChainLink `json:"chain,omitempty"`
	Base  string             `json:"base,omitempty"`
	// Place is the place the tail was given, answered again to a retried append of it.
	Place *OrderingPlace `json:"place,omitempty"`
	// Idle overrides how long the sequencer waits without an append before it asks
	// whether its tail is closed, and closes if it is (tests; default one hour).
	Idle time.Duration `json:"idle,omitempty"`
}

// Text says in a line what the key means for the delivery, e.g. "key customer:42, waits for
// evt_1 (the delivery before it in the key)"; "" for no status.
func (o *OrderingStatus) Text() string {
	if o == nil {
		return ""
	}
	s := "key " + o.Key
	if o.Seq > 0 {
		s += fmt.Sprintf(" (#%d in the key)", o.Seq)
	}
	switch {
	case o.WaitingFor != "":
		s += ", waits for " + o.WaitingFor + " (the delivery before it in the key)"
	case o.Blocking:
		s += ", held by this dead letter: the key's next deliveries wait until it is replayed and delivered, or expires"
	case o.Passed:
		s += ", passed: this dead letter's key went on without it (ordering on dead letter: skip)"
	}
	return s
}
