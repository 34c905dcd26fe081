package herald

import (
	"time"

	"github.com/heraldhq/herald/policy"
)

// The inputs of Herald's workflows: what a producer hands a workflow when it starts one,
// and what a run carries when it continues as new. They are recorded in histories.

// DeliveryInput starts a delivery workflow. A replay that continues as new carries Round
// and Attempts forward, and starts the ladder at once.
type DeliveryInput struct {
	Event Event `json:"event"`
	// Round counts replays: 0 for the first run of the ladder.
	Round int `json:"round,omitempty"`
	// Attempts are the records carried over from earlier runs (the newest MaxKeptAttempts).
	Attempts []AttemptRecord `json:"attempts,omitempty"`
	Dropped  int             `json:"dropped,omitempty"`
}

// MaxKeptAttempts is how many attempt records survive a delivery's continue-as-new: it
// keeps a delivery's history bounded however often it is replayed.
const MaxKeptAttempts = 50

// EndpointInput starts (or continues as new) an endpoint workflow.
type EndpointInput struct {
	ID string `json:"id"`
	// Endpoint is nil until the first put registers it.
	Endpoint *Endpoint `json:"endpoint,omitempty"`
	// Since is when the endpoint's counters started (EndpointState.CountersSince): the run
	// that first started. The counters themselves are in the stats shards.
	Since time.Time `json:"since,omitzero"`
	// Limiter is the circuit breaker, the concurrency cap, the leases and the queue.
	Limiter *policy.Limiter `json:"limiter,omitempty"`
	// Circuit is the circuit state last written to the HeraldCircuit search attribute.
	Circuit policy.CircuitState `json:"circuit,omitempty"`
	// Disabled is the cause last written to the HeraldDisabled search attribute (empty:
	// unset).
	Disabled policy.DisableCause `json:"disabled,omitempty"`
}

// EventTypesInput starts (or continues as new) the catalog of event types.
type EventTypesInput struct {
	Catalog EventTypeCatalog `json:"catalog"`
}

// BulkReplayInput asks for every dead letter a filter selects to be replayed, now or at a time.
type BulkReplayInput struct {
	Filter DeadLetterFilter `json:"filter"`
	// At is when to replay; zero or past means at once.
	At time.Time `json:"at,omitzero"`
}

// BulkReplayResult says how many dead letters were replayed, and how many were skipped
// and why.
type BulkReplayResult struct {
	Replayed int `json:"replayed"`
	// Skipped counts the dead letters listed that had ended (expired, or replayed by
	// someone else) before their replay signal reached them; SkippedWhy says so.
	Skipped    int       `json:"skipped"`
	SkippedWhy string    `json:"skipped_why,omitempty"`
	ReplayedAt time.Time `json:"replayed_at,omitzero"`
}

// SkippedGone is BulkReplayResult.SkippedWhy for dead letters that had ended.
const SkippedGone = "no longer a dead letter when its replay was sent (expired, or replayed by someone else since it was listed)"
