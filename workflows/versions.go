package workflows

// Change ids of the workflows' versioned changes (workflow.GetVersion), all from 2026-11.
//
// "Replayed by" names the histories in tests/testdata/histories (replayed by
// tests/replay_test.go) that take the old branch, the one for workflow.DefaultVersion.
// "Marked in" names those that record the id's marker. A change can go, with its old branch
// and the histories that take it, once no run started before the change is open:
//   - a delivery run lives for its ladder plus its dead-letter retention (30 days by
//     default), and again after each replay until it continues as new;
//   - an endpoint run lives until it continues as new, which a busy endpoint does every few
//     thousand events but a quiet one may never do: list the old runs with a visibility
//     query on StartTime before retiring an endpoint change;
//   - a bulk replay lives until its At plus one activity.
//
// Never reuse an id, retired ones included: old histories carry their markers.
const (
	// versionEndpointGuard: the endpoint run holds the circuit breaker, the cap and the
	// queue (runLimiter) instead of configuration and counters only (runCounters).
	// Replayed by endpoint_put_and_reports_before_gate.json. Marked in endpoint_*.json.
	versionEndpointGuard = "endpoint-guard"

	// versionReplayMarksAttempting: a replayed dead letter is marked attempting at once.
	// Replayed by delivery_dead_letter_replayed_before_gate.json. Marked in
	// delivery_dead_letter_replayed.json and delivery_dead_letter_replayed_before_admission.json.
	versionReplayMarksAttempting = "replay-marks-attempting"

	// versionGateSpread: a failed attempt's retry takes its place in the jitter window from
	// the gate (Result.Spread) rather than from a hash of the event. Replayed by
	// delivery_*_before_gate.json (the old branch only changes a timer's length, which
	// replay does not compare). Marked in delivery_retry_after*, delivery_dead_letter_replayed
	// and delivery_held_by_breaker* (those without _before_gate).
	versionGateSpread = "gate-spread"

	// versionHeldDeliveredUpsert: a delivery that was held and then delivered at its first
	// attempt overwrites the waiting_endpoint search attribute. No recorded history reaches it.
	versionHeldDeliveredUpsert = "held-delivered-upsert"

	// versionNoAttemptWithoutRequest: an attempt whose local activity failed (no slot in
	// time, the worker stopping) never reached the receiver and uses no attempt; before,
	// it counted as a failed attempt under lastPolicy. No recorded history reaches it.
	versionNoAttemptWithoutRequest = "no-attempt-without-request"

	// versionBulkReplayDeadBefore: a bulk replay replays only what was a dead letter when it
	// was asked for. Replayed by bulk_replay_at_before_dead_before.json and
	// bulk_replay_at_before_gate.json (the old branch only changes the activity's input).
	// Marked in bulk_replay_at.json.
	versionBulkReplayDeadBefore = "bulk-replay-dead-before"

	// versionAdmissionMemo: the endpoint run publishes its admission view in its memo.
	// Replayed by endpoint_breaker_probe_before_admission.json and
	// endpoint_put_and_leases_before_admission.json. Marked in endpoint_breaker_probe.json
	// and endpoint_put_and_leases.json.
	versionAdmissionMemo = "admission-memo"

	// versionOwnQueue: an endpoint run continues as new on the endpoints' own task queue.
	// No recorded history reaches it (none continues as new).
	versionOwnQueue = "endpoint-own-queue"

	// versionPutSettles: a change to a registered endpoint returns once every worker's
	// gate uses it (a policy.ConfigSettle timer). Marked in endpoint_put_and_leases.json;
	// no recorded history takes the old branch.
	versionPutSettles = "put-settles"

	// versionRateLimit (issue 12, part D: rate limits): the endpoint run enforces an
	// endpoint's rate limit (grants per aligned second, timers in mid-second); a run
	// replaying a history made before drops the limit, which its worker ignored. Asked
	// for only once an endpoint has a rate limit. Marked in endpoint_rate_limited.json; no
	// recorded history takes the old branch.
	versionRateLimit = "endpoint-rate-limit"

	// versionEndpointLifecycle (part C, issue 12): the endpoint run decides its lifecycle —
	// disable and enable by hand, disabled on a 410 or a long failing spell — and shows it
	// in the HeraldDisabled search attribute. Replayed by endpoint_put_and_leases*.json and
	// endpoint_breaker_probe*.json. Marked in endpoint_disabled_enabled.json.
	versionEndpointLifecycle = "endpoint-lifecycle"

	// versionDisabledEndpoint (part C, issue 12): a delivery whose endpoint is disabled ends
	// as skipped (no attempt made) or parks as a dead letter. Marked in
	// delivery_skipped_disabled.json and delivery_dead_letter_disabled_replayed.json.
	versionDisabledEndpoint = "disabled-endpoint"

	// versionOpsEvents (part C, issue 12): a delivery that parks as a dead letter, or is
	// delivered after a replay, emits an operational event (emitOps). The endpoint run's
	// operational events ride on versionEndpointLifecycle. Marked in
	// delivery_dead_letter_disabled_replayed.json; delivery_dead_letter_replayed*.json take the
	// old branch.
	versionOpsEvents = "ops-events"

	// versionReplayAnyState (issue 14, part C: temporal): a replay signal has an effect in
	// every state of the ladder, recorded in the MemoReplay memo: a retry waiting on its
	// timer goes at once; a delivery held by its endpoint, or with an attempt in flight,
	// records it as ignored. A dead letter publishes MemoDeadLetter and no longer drops the
	// replays that came during its last attempt. Asked for when a replay arrives during the
	// ladder, and when a delivery parks as a dead letter. Replayed by
	// delivery_replay_*_before_any_state.json (a replay during a retry's timer, a hold and an
	// attempt in flight, dropped, recorded by the code before the change) and
	// delivery_dead_letter_replayed*.json (drained at the dead letter). Marked in
	// delivery_replay_{waiting_retry,held,in_flight,dead_letter}.json.
	versionReplayAnyState = "replay-any-state"

	// versionKeepFlight: the endpoint run's limiter counts what a worker's gate may admit
	// while its lease renewal is on its way (policy.Limiter.KeepFlight), so that a renewal
	// that cuts the lease (others queued, the cap halved) frees no permit still in use. It
	// changes which waiters the run wakes and when. Replayed by
	// endpoint_put_and_leases_before_keep_flight.json and the other endpoint histories
	// recorded before it; marked in endpoint_put_and_leases.json.
	versionKeepFlight = "keep-flight"

	// Retired: "endpoint-gate" was asked for in delivery.wait and its result ignored; it
	// guarded nothing (a pre-gate run never waits: its attempts never return a Hold).
	// Marked in delivery_held_by_breaker.json, which replays without the call: the SDK
	// skips version markers no GetVersion call asks for.
)
