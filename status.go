package herald

import (
	"time"

	"github.com/heraldhq/herald/policy"
)

// Status is the answer of the status query (QueryStatus): where a delivery stands and
// every attempt so far.
type Status struct {
	Event         EventSummary    `json:"event"`
	State         State           `json:"state"`
	Round         int             `json:"round"`
	Attempts      []AttemptRecord `json:"attempts"`
	Dropped       int             `json:"dropped_attempts,omitempty"`
	NextAttemptAt time.Time       `json:"next_attempt_at,omitzero"`
	DeliveredAt   time.Time       `json:"delivered_at,omitzero"`
	DeadAt        time.Time       `json:"dead_lettered_at,omitzero"`
	ExpiresAt     time.Time       `json:"expires_at,omitzero"`
	// Waiting says why the next attempt is held back, while it is.
	Waiting *Waiting `json:"waiting,omitempty"`
	// Reason says why a delivery was skipped, or dead-lettered before its ladder ran out
	// (its endpoint was disabled).
	Reason string `json:"reason,omitempty"`
	// DeliverAt is when a scheduled send's first attempt goes (its deliver_at); zero for
	// a send delivered at once.
	DeliverAt time.Time `json:"deliver_at,omitzero"`
	// Cancelled says when, by whom and why the delivery was cancelled (StateCancelled).
	Cancelled *Cancellation `json:"cancelled,omitempty"`
	// Busy is set on a status read while an attempt was in flight: a delivery answers only
	// between attempts, so this one comes from its search attributes and shows no attempts.
	Busy *Busy `json:"busy,omitempty"`
	// Ordering is an ordered delivery's key and what it waits on (see ordering.go).
	Ordering *OrderingStatus `json:"ordering,omitempty"`
}

// Busy says a delivery could not answer because an attempt is in flight, since when.
type Busy struct {
	Since time.Time `json:"since,omitzero"`
}

// AttemptRecord is one attempt as the status query shows it.
type AttemptRecord struct {
	Round  int       `json:"round"`
	Number int       `json:"number"`
	Result Result    `json:"result"`
	Next   *NextStep `json:"next,omitempty"`
}

// NextStep is what the ladder decided after a failed attempt, and when the retry goes.
type NextStep struct {
	policy.NextAttempt
	At time.Time `json:"at,omitzero"`
}

// Waiting is a hold on a delivery by its endpoint's gate or breaker, since when it holds.
type Waiting struct {
	Hold
	Since time.Time `json:"since,omitzero"`
}
