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
	// DeliverAt, for a scheduled send, is when the first attempt goes: the delivery
	// waits on a durable timer until then (policy.CheckDeliverAt bounds it).
	DeliverAt time.Time `json:"deliver_at,omitzero"`
	// Ordering is set for a delivery sent with an ordering key: its place in the key.
	Ordering *Ordering `json:"ordering,omitempty"`
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
	// that first started. The counters are Counts plus the endpoint's entry in its stats
	// shard.
	Since time.Time `json:"since,omitzero"`
	// Limiter is the circuit breaker, the concurrency cap, the leases and the queue.
	Limiter *policy.Limiter `json:"limiter,omitempty"`
	// Circuit is the circuit state last written to the HeraldCircuit search attribute.
	Circuit policy.CircuitState `json:"circuit,omitempty"`
	// Disabled is the cause last written to the HeraldDisabled search attribute (empty:
	// unset).
	Disabled policy.DisableCause `json:"disabled,omitempty"`
	// Counts are the attempt counts the endpoint's stats shard handed over when it made
	// room (SignalCounts); the shard holds those counted since.
	Counts Report `json:"counts,omitzero"`
	// CountsSpill is the number of the newest spill merged into Counts (SpilledCounts.Spill).
	CountsSpill int64 `json:"counts_spill,omitempty"`
}

// StatsInput starts (or continues as new) a stats shard.
type StatsInput struct {
	// Counts is the state a shard of 0.1.0 continued as new with: every endpoint it ever
	// counted, sorted by endpoint. A shard that starts with it spills it down to Capacity.
	Counts []EndpointCounts `json:"counts,omitempty"`
	// Entries are the endpoints the shard holds, sorted by endpoint: at most Capacity.
	Entries []StatsEntry `json:"entries,omitempty"`
	// Capacity, if set, is how many endpoints the shard holds before it spills (0: no
	// count, only Budget; a shard run started before the budget reads 0 as StatsCapacity).
	// A worker sets it when its gate starts the shard (worker.Options.StatsCapacity).
	Capacity int `json:"capacity,omitempty"`
	// Budget is how many bytes the shard's entries take encoded before it spills; 0 is
	// StatsBudget. A worker sets it when its gate starts the shard (worker.Options.StatsBudget).
	Budget int `json:"budget,omitempty"`
	// Clock counts the batches of counts the shard has received (StatsEntry.Touched).
	Clock int64 `json:"clock,omitempty"`
	// NextSpill is the number the shard's next spill takes (SpilledCounts.Spill).
	NextSpill int64 `json:"next_spill,omitempty"`
}

// StatsEntry is one endpoint's counts in a stats shard's input, with short field names: a
// shard's whole state is one payload, and the bound on it (StatsBudget) is counted in
// entries of this form.
type StatsEntry struct {
	Endpoint               string `json:"e"`
	Attempts               int    `json:"a,omitempty"`
	Successes              int    `json:"s,omitempty"`
	Failures               int    `json:"f,omitempty"`
	RetryAfterHonoured     int    `json:"h,omitempty"`
	RetryAfterCapped       int    `json:"c,omitempty"`
	RetryAfterIgnored      int    `json:"i,omitempty"`
	RetryAfterBackpressure int    `json:"b,omitempty"`
	// LastAttemptAt is in Unix nanoseconds.
	LastAttemptAt int64  `json:"t,omitempty"`
	LastOutcome   string `json:"o,omitempty"`
	// Touched is the shard's Clock when the endpoint's counts last grew: the shard spills
	// the least recently touched first.
	Touched int64 `json:"u,omitempty"`
}

// NewStatsEntry is the entry of endpoint id's counts r, touched at touched.
func NewStatsEntry(id string, r Report, touched int64) StatsEntry {
	e := StatsEntry{
		Endpoint: id, Attempts: r.Attempts, Successes: r.Successes, Failures: r.Failures,
		RetryAfterHonoured: r.RetryAfterHonoured, RetryAfterCapped: r.RetryAfterCapped,
		RetryAfterIgnored: r.RetryAfterIgnored, RetryAfterBackpressure: r.RetryAfterBackpressure,
		LastOutcome: r.LastOutcome, Touched: touched,
	}
	if !r.LastAttemptAt.IsZero() {
		e.LastAttemptAt = r.LastAttemptAt.UnixNano()
	}
	return e
}

// Report is the entry's counts.
func (e StatsEntry) Report() Report {
	r := Report{
		Attempts: e.Attempts, Successes: e.Successes, Failures: e.Failures,
		RetryAfterHonoured: e.RetryAfterHonoured, RetryAfterCapped: e.RetryAfterCapped,
		RetryAfterIgnored: e.RetryAfterIgnored, RetryAfterBackpressure: e.RetryAfterBackpressure,
		LastOutcome: e.LastOutcome,
	}
	if e.LastAttemptAt != 0 {
		r.LastAttemptAt = time.Unix(0, e.LastAttemptAt).UTC()
	}
	return r
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
