package activities

import (
	"time"

	"github.com/heraldhq/herald/policy"
)

// Messages between a worker's gate and the endpoint workflows. Package workflows re-exports them.
const (
	// UpdateLease asks an endpoint workflow for permits (LeaseRequest → LeaseReply).
	UpdateLease = "lease"
	// SignalDone returns a waiter's own permit with its outcome (Done).
	SignalDone = "done"
	// SignalPermit, sent by an endpoint workflow to a waiting delivery, hands it a permit (Permit).
	SignalPermit = "permit"
	// QueryAdmission returns what a gate needs to admit attempts on its own (AdmissionView),
	// for an endpoint workflow that does not publish it in its memo yet.
	QueryAdmission = "admission"
	// MemoAdmission is the memo field where an endpoint workflow publishes its
	// AdmissionView (with a coarse snapshot, policy.Snapshot.Coarse) whenever it changes;
	// a gate reads it with a describe, which involves no worker and adds no event.
	MemoAdmission = "admission"
	// SignalWait puts a delivery the gate could not admit in the endpoint's queue (WaitRequest).
	SignalWait = "wait"
	// SignalDones returns several deliveries' own permits at once ([]Done).
	SignalDones = "dones"
	// SignalOutcomes reports the outcomes of attempts a gate admitted without a lease (OutcomeReport).
	SignalOutcomes = "outcomes"
)

// AdmissionView answers QueryAdmission: the endpoint's configuration and its guard's snapshot.
type AdmissionView struct {
	Endpoint Endpoint        `json:"endpoint"`
	Snapshot policy.Snapshot `json:"snapshot"`
}

// WaitRequest asks an endpoint workflow for a permit for each of Waiters (deliveries'
// workflow ids, in the order they came): now if one may go, else when its turn in the
// queue comes.
type WaitRequest struct {
	Waiters []string `json:"waiters"`
}

// OutcomeReport carries the outcomes of attempts a gate admitted without a lease (their
// counts go to the stats shards).
type OutcomeReport struct {
	Holder   string           `json:"holder"`
	Outcomes []policy.Outcome `json:"outcomes"`
}

// LeaseRequest is what a worker's gate sends to an endpoint workflow: the permits it wants
// and the outcomes since its last request.
type LeaseRequest struct {
	policy.LeaseRequest
	// Report counts the outcomes for the endpoint's own counters: sent by gates of the
	// version before the stats shards, during a rolling upgrade.
	Report Report `json:"report"`
}

// LeaseReply is the endpoint workflow's answer: the holder's lease, what became of its
// waiters, and the endpoint's current configuration.
type LeaseReply struct {
	policy.LeaseReply
	Endpoint Endpoint `json:"endpoint"`
	// Threshold is how many consecutive failures make the gate stop admitting at once,
	// before the endpoint workflow has heard of them. Gates read it from Snapshot now; it
	// stays for gates of the version before, during a rolling upgrade.
	Threshold int `json:"threshold"`
	// Snapshot is the endpoint after this renewal (zero from workflows of an older version).
	Snapshot policy.Snapshot `json:"snapshot,omitzero"`
}

// Permit is a permit of its own handed to one delivery: for a probe, a half-open attempt,
// or a queued attempt whose turn has come.
type Permit struct {
	Ticket policy.Ticket `json:"ticket"`
	Until  time.Time     `json:"until"`
}

// Done returns a delivery's own permit to the endpoint workflow, with the outcome of the
// attempt it made (nil if it made none).
type Done struct {
	Waiter  string          `json:"waiter"`
	Outcome *policy.Outcome `json:"outcome,omitempty"`
	// Report is sent by gates of the version before the stats shards only.
	Report Report `json:"report"`
}

// Hold says why an attempt did not go: the endpoint's gate or breaker held it back. A held
// attempt is not a failed attempt and uses none of the ladder.
type Hold struct {
	Reason string `json:"reason"`
	// Queued is true when the delivery waits in the endpoint's queue, at Position, for a
	// Permit signal; otherwise it asks again at RetryAt.
	Queued   bool      `json:"queued,omitempty"`
	Position int       `json:"position,omitempty"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
	// Brief marks a short wait that changes nothing the delivery shows (this worker's lease
	// is growing): no search attribute is written for it.
	Brief bool `json:"brief,omitempty"`
	// Recheck is how long the delivery waits before it asks again if no permit reaches it
	// (zero in results recorded before it existed: see policy.HoldRecheck).
	Recheck time.Duration `json:"recheck,omitempty"`
	// Circuit is the endpoint's circuit state when the hold came from its breaker or cap
	// (empty for a hold of the worker's own, and in results recorded before it existed).
	// While it is open, RetryAt is when the probe is due.
	Circuit policy.CircuitState `json:"circuit,omitempty"`
}
