package herald

import (
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/policy"
)

// AdmissionView answers QueryAdmission (and is published in the memo, MemoAdmission): the
// endpoint's configuration and its limiter's snapshot.
type AdmissionView struct {
	Endpoint Endpoint        `json:"endpoint"`
	Snapshot policy.Snapshot `json:"snapshot"`
}

// WaitRequest asks an endpoint workflow for a permit for each of Waiters (deliveries'
// workflow ids, in the order they came): now if one may go, else when its turn in the
// queue comes.
type WaitRequest struct {
	Waiters []string `json:"waiters"`
	// Keys names each of Waiters' waits (policy.WaitKey: its attempt and the permits it
	// took): a waiter that holds a permit or pass granted for the same key gets no second
	// one (policy.Limiter.Answered). Gates before it send none: 0 for each.
	Keys []uint32 `json:"keys,omitempty"`
	// Renew lists those of Waiters that hand back a permit or pass they were given and
	// could not use (the second it was for is over, it expired, or no room came for the
	// pass): they are granted again, whatever their key.
	Renew []string `json:"renew,omitempty"`
}

// Key returns the key Keys names for Waiters[i], 0 if none.
func (w WaitRequest) Key(i int) uint32 {
	if i < len(w.Keys) {
		return w.Keys[i]
	}
	return 0
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
}

// LeaseReply is the endpoint workflow's answer: the holder's lease, what became of its
// waiters, and the endpoint's current configuration.
type LeaseReply struct {
	policy.LeaseReply
	Endpoint Endpoint `json:"endpoint"`
	// Snapshot is the endpoint after this renewal.
	Snapshot policy.Snapshot `json:"snapshot,omitzero"`
}

// Done returns a delivery's own permit to the endpoint workflow, with the outcome of the
// attempt it made (nil if it made none).
type Done struct {
	Waiter  string          `json:"waiter"`
	Outcome *policy.Outcome `json:"outcome,omitempty"`
	// Refused, when set, says only that Waiter had no use for the pass good until Refused
	// (UpdatePass refused, or its delivery gone): the endpoint forgets that pass, and
	// nothing else (policy.Limiter.Refused).
	Refused time.Time `json:"refused,omitzero"`
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
	// (zero: policy.HoldRecheck decides).
	Recheck Duration `json:"recheck,omitempty"`
	// Circuit is the endpoint's circuit state when the hold came from its breaker or cap
	// (empty for a hold of the worker's own).
	// While it is open, RetryAt is when the probe is due.
	Circuit policy.CircuitState `json:"circuit,omitempty"`
	// Disabled: the endpoint is disabled. The attempt neither goes nor waits; the delivery
	// ends as skipped or parks as a dead letter (policy.OnDisabled).
	Disabled bool `json:"disabled,omitempty"`
	// Full: the endpoint's queue was full, so the delivery was not queued. It asks again at
	// its recheck, or sooner when the endpoint workflow, its queue half empty again, nudges
	// it (UpdateNudge).
	Full bool `json:"queue_full,omitempty"`
}

// NudgeRequest asks activities.Operator.NudgeWaiting to nudge (UpdateNudge) at most Limit
// of the deliveries turned away from Endpoint's full queue, oldest first among the newest
// Window of its waiting deliveries.
type NudgeRequest struct {
	Endpoint string `json:"endpoint"`
	Limit    int    `json:"limit"`
	Window   int    `json:"window"`
}

// PassWake asks activities.Operator.WakeWaiters to hand Grants, passes of Endpoint's
// queue, to their deliveries (UpdatePass).
type PassWake struct {
	Endpoint string         `json:"endpoint"`
	Grants   []policy.Grant `json:"grants"`
}

// PassWoken is what WakeWaiters did: Sent passes are on their way; the Declined waiters'
// passes it had no room for (the endpoint workflow signals those itself).
type PassWoken struct {
	Sent     int      `json:"sent,omitempty"`
	Declined []string `json:"declined,omitempty"`
}

// NudgeCount is what NudgeWaiting did: Found deliveries waiting on the endpoint that it
// does not hold (at most Limit are asked), of which Nudged accepted the nudge.
type NudgeCount struct {
	Found  int `json:"found"`
	Nudged int `json:"nudged"`
}

// MayPermit reports whether a delivery that waited on h may later get a permit signal,
// even a late or duplicated one: it was queued at the endpoint workflow, or the hold is not
// brief (an endpoint workflow that could not be reached may have taken the request all the
// same). A brief hold that is not queued (a rate-limited attempt booked for a later second,
// a wait for the gate's lease to grow) asked the endpoint workflow for nothing, and so did
// a full queue's (Full: the gate turned it away on the endpoint's snapshot). A nudge
// (UpdateNudge) is an update, which cannot make the server refuse a delivery's last task.
func (h Hold) MayPermit() bool { return h.Queued || !h.Brief && !h.Full }

// DisableRequest disables an endpoint by hand (UpdateDisable).
type DisableRequest struct {
	// Reason says why, for whoever looks at the endpoint later.
	Reason string `json:"reason,omitempty"`
}

// MaxDisableReason is the longest reason a disablement by hand may give.
const MaxDisableReason = 500

// ReplayRequest is the payload of a replay signal (SignalReplay). None, as the stock Temporal
// CLI sends without --input, reads as the zero request: go now.
type ReplayRequest struct {
	// DeadBefore, when set, replays the delivery only if it became a dead letter at or
	// before this time: a bulk replay sets it to when it was asked to run, so a dead letter
	// that another replay already replayed, and that parked again since, is not replayed twice.
	DeadBefore time.Time `json:"dead_before,omitzero"`
}

// Stale reports whether r asks to replay an earlier dead letter than the one parked at deadAt.
func (r ReplayRequest) Stale(deadAt time.Time) bool {
	return !r.DeadBefore.IsZero() && deadAt.After(r.DeadBefore)
}

// DeadLetterFilter selects dead letters: by endpoint (empty for all) and by when the event
// was sent (zero times are open ends).
type DeadLetterFilter struct {
	EndpointID string `json:"endpoint_id,omitempty"`
	// Tenant, if set, keeps only the dead letters of events that tenant sent: an endpoint
	// moved to another tenant keeps its old tenant's dead letters out of the new one's
	// lists and bulk replays.
	Tenant string    `json:"tenant,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	Until  time.Time `json:"until,omitzero"`
	// DeadBefore, set by a bulk replay to when it was asked to run, keeps only dead letters
	// parked by then: checked by each delivery as it receives the replay (see ReplayRequest),
	// not by the visibility query.
	DeadBefore time.Time `json:"dead_before,omitzero"`
}

// Query is the visibility query for the dead letters f selects.
func (f DeadLetterFilter) Query() string {
	q := Workflows(DeliveryWorkflow).Running().Is(AttrStatus, string(StateDeadLetter))
	if f.EndpointID != "" {
		q = q.Is(AttrEndpoint, f.EndpointID)
	}
	if f.Tenant != "" {
		q = q.Is(AttrTenant, f.Tenant)
	}
	return q.StartedSince(f.Since).StartedUntil(f.Until).String()
}

// Report counts attempt outcomes for one endpoint: a worker's gate adds up what it saw,
// and the stats shards add it to the endpoint's counters.
type Report struct {
	Attempts  int `json:"attempts"`
	Successes int `json:"successes"`
	Failures  int `json:"failures"`
	// Retry-After decisions on failed responses.
	RetryAfterHonoured int `json:"retry_after_honoured"`
	RetryAfterCapped   int `json:"retry_after_capped"`
	RetryAfterIgnored  int `json:"retry_after_ignored"`
	// RetryAfterBackpressure counts Retry-After values of a backpressure-aware receiver
	// (policy.RetryAfter.Backpressure).
	RetryAfterBackpressure int       `json:"retry_after_backpressure"`
	LastAttemptAt          time.Time `json:"last_attempt_at,omitzero"`
	LastOutcome            string    `json:"last_outcome,omitempty"`
}

// Add counts one attempt's result.
func (r *Report) Add(res Result) {
	r.Attempts++
	if res.Delivered() {
		r.Successes++
	} else {
		r.Failures++
		ra := res.RetryAfter()
		switch ra.Action {
		case policy.RetryAfterHonoured:
			r.RetryAfterHonoured++
		case policy.RetryAfterCapped:
			r.RetryAfterCapped++
		case policy.RetryAfterIgnored:
			r.RetryAfterIgnored++
		}
		if ra.Backpressure() {
			r.RetryAfterBackpressure++
		}
	}
	if res.StartedAt.After(r.LastAttemptAt) {
		r.LastAttemptAt = res.StartedAt
		r.LastOutcome = res.Summary()
	}
}

// Merge adds another report's counts.
func (r *Report) Merge(o Report) {
	r.Attempts += o.Attempts
	r.Successes += o.Successes
	r.Failures += o.Failures
	r.RetryAfterHonoured += o.RetryAfterHonoured
	r.RetryAfterCapped += o.RetryAfterCapped
	r.RetryAfterIgnored += o.RetryAfterIgnored
	r.RetryAfterBackpressure += o.RetryAfterBackpressure
	if o.LastAttemptAt.After(r.LastAttemptAt) {
		r.LastAttemptAt, r.LastOutcome = o.LastAttemptAt, o.LastOutcome
	}
}

// EndpointCounts are one endpoint's attempt counts, as the stats shards keep them.
type EndpointCounts struct {
	Endpoint string `json:"endpoint"`
	Counts   Report `json:"counts"`
	// Spill, in a shard's answer to QueryStats, says when the endpoint's own workflow has
	// these counts too: once it has merged a spill numbered Spill or later
	// (EndpointState.CountsSpill ≥ Spill), they are in its counters and must not be added
	// again. Zero (a shard of 0.1.0): never.
	Spill int64 `json:"spill,omitempty"`
}

// IncludedIn reports whether the endpoint's own counters, which have merged the shard's
// spills up to spill (EndpointState.CountsSpill), hold these counts already.
func (c EndpointCounts) IncludedIn(spill int64) bool { return c.Spill != 0 && spill >= c.Spill }

// SpilledCounts are the attempt counts a stats shard hands to an endpoint's own workflow
// when it makes room (SignalCounts).
type SpilledCounts struct {
	Counts Report `json:"counts"`
	// Spill numbers the shard's spill: increasing in each shard, so that a reader of both
	// the endpoint and its shard counts nothing twice (EndpointCounts.Spill).
	Spill int64 `json:"spill"`
}

// TrimOutcome cuts LastOutcome to at most n bytes, at a character boundary.
func (r *Report) TrimOutcome(n int) {
	if len(r.LastOutcome) <= n {
		return
	}
	s := r.LastOutcome[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	r.LastOutcome = s
}
