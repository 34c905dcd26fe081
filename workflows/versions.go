package workflows

import "go.temporal.io/sdk/workflow"

// Versioned changes of the workflows (workflow.GetVersion).
//
// Herald 0.1.0 is the baseline: its workflows carry no change ids, and the histories in
// tests/testdata/histories (replayed by tests/replay_test.go) were recorded on it. From
// 0.1.0 on, every change to the commands a workflow issues (a timer, an activity, a signal,
// a search attribute or memo upsert, a continue-as-new, or their order or arguments) goes
// behind workflow.GetVersion with a change id declared in the const block below, because a
// worker of the new release replays the histories that the release before it wrote.
//
// To add one:
//
//  1. Declare the id below: a short kebab-case name, with a comment saying what the new
//     branch does, the date, and which recorded histories take the old branch.
//  2. In the workflow, ask at the point where the commands start to differ, and keep in
//     the old branch exactly what the release before did (see the example below).
//  3. Before the change, record a history that reaches the changed point with the code as
//     it was (go test ./tests -run TestRecordHistories -record, or the recorder of that
//     path), and keep it under a name that says so (delivery_retry_after_before_x.json):
//     it is the proof that the old branch replays. After the change, re-record the
//     current histories so that they carry the new marker (README, "Determinism and replay
//     tests", lists the recorders).
//  4. Say in CHANGELOG.md that runs started before the upgrade keep the old behaviour.
//
// A change can go, with its old branch and the histories that take it, once no run started
// before it is open:
//   - a delivery run lives for its ladder plus its dead-letter retention (30 days by
//     default), and again after each replay until it continues as new;
//   - an endpoint run lives until it continues as new, which a busy endpoint does every few
//     thousand events but a quiet one may never do: list the old runs with a visibility
//     query on StartTime before retiring an endpoint change;
//   - a bulk replay lives until its At plus one activity.
//
// Never reuse an id, retired ones included: old histories carry their markers.
//
// For example, a change that spreads retries differently:
//
//	if workflow.GetVersion(ctx, versionSpreadRetries, workflow.DefaultVersion, 1) == 1 {
//		next = newSpread(next) // the new commands
//	}
//	// else: what 0.1.0 did, untouched
const (
	// versionSubscriptionAttrs (2026-12-02, 0.2.0): a put that changes an endpoint's tenant
	// or subscription upserts HeraldTenant and HeraldSubscriptions, where its tenant's sends
	// look it up (the per-tenant directory workflow is gone). An endpoint put before
	// carries neither, and its 0.1.0 histories (endpoint_*.json) take the old branch: no
	// upsert (endpoint_put_before_subscription_attrs.json keeps one of them, a first put
	// and a changed one, as 0.1.0 recorded it); endpoint_subscription_changed.json takes
	// the new one.
	versionSubscriptionAttrs = "subscription-attrs"
	// versionStatsSpill (2026-12-02): a stats shard holds at most its capacity of
	// endpoints (herald.StatsCapacity) and hands the counts of those it heard from least
	// recently to their endpoint workflows (SignalExternalWorkflow, herald.SignalCounts).
	// Asked once, as a run starts. The old branch (statsBeforeSpill) keeps every endpoint:
	// tests/testdata/histories/endpoint_stats_before_spill.json takes it.
	// Version 2 (2026-12-04): the shard holds a budget of bytes (herald.StatsBudget, its
	// entries encoded) instead of 100 endpoints, and a count only if its input sets one;
	// version 1 (endpoint_stats_spill.json) keeps the count, 0 read as 100, and no budget.
	// endpoint_stats_budget.json takes version 2.
	versionStatsSpill = "stats-spill"
	// versionScheduledSend (2026-12-02): a delivery whose input carries a future DeliverAt
	// (a scheduled send) upserts HeraldStatus scheduled and waits on a timer before its
	// first attempt. Asked only for such an input, so every recorded delivery (none has
	// one) stays off it; the old branch is a run an older worker started, which ignored
	// the field and attempted at once (delivery_first_try.json and the other delivery_*
	// histories replay unchanged; delivery_scheduled_cancelled.json takes the new one).
	versionScheduledSend = "scheduled-send"
	// versionCancel (2026-12-02): a delivery accepts a cancel (herald.UpdateCancel) and,
	// once the update is accepted, stops where it waits: it upserts the MemoCancelled memo
	// field and HeraldStatus cancelled, returns a permit it holds, and completes. Asked in
	// the update's handler: no recorded history before it has a cancel (older workers
	// reject the update, which leaves no event), so all delivery_* histories replay
	// unchanged; delivery_scheduled_cancelled.json and delivery_waiting_retry_cancelled.json
	// take the new branch.
	versionCancel = "cancel"
	// versionEndpointRecovery (2026-12-02): an endpoint disabled for failing is probed on
	// the recovery ladder (policy.RecoveryLadder, the worker's, recorded by a side
	// effect as probing starts): a timer for each probe, a local activity
	// that sends it, and on success the endpoint is enabled, a bulk replay of its dead
	// letters started and endpoint.recovered emitted. Asked once, when a run finds the
	// endpoint disabled for failing with no recovery decided. The old branch never probes:
	// tests/testdata/histories/endpoint_disabled_failing_before_recovery.json takes it;
	// endpoint_recovered.json takes the new one.
	versionEndpointRecovery = "endpoint-recovery"
	// versionDrainBeforeContinue (2026-12-02): an endpoint run that continues as new takes
	// the gates' signals (waits, dones, outcomes) that come while its last permits are on
	// their way, until a workflow task leaves none unread; before, those were lost, and a
	// delivery that had asked to wait believed it was queued while no run held it (issue 24,
	// "waiters are lost"). The old branch only waits for the permits:
	// tests/testdata/histories/endpoint_rate_limited_continued_before_drain.json takes it,
	// endpoint_rate_limited_continued.json the new one.
	versionDrainBeforeContinue = "drain-before-continue"
	// versionLateDones (2026-12-02): a done that carries an outcome no longer takes its
	// waiter out of the queue, nor a rate-limited grant whose second its request did not
	// start in (policy.Limiter.Done): it came after the waiter asked again (a send that timed
	// out at the gate and still arrived), and that request stands. Asked at a run's first
	// such done. The old branch (policy.Limiter.DoneDequeuing) is taken by the histories
	// recorded before: endpoint_rate_limited.json and
	// endpoint_rate_limited_continued_before_drain.json; endpoint_rate_limited_continued.json
	// takes the new one.
	versionLateDones = "late-dones"
	// versionQueueOverflow (2026-12-02): a waiter whose gate sent it to the queue is queued
	// even when the queue is full (policy.Limiter.Wait): the gate saw it not full and told
	// the delivery it is queued. Before (policy.Limiter.WaitRefusingWhenFull) it was
	// dropped, and its delivery waited for a permit nobody would send. Asked when a wait
	// finds the queue full: tests/testdata/histories/endpoint_queue_full_before_overflow.json
	// takes the old branch, endpoint_queue_full.json the new one.
	versionQueueOverflow = "queue-overflow"
	// versionOrdering (2026-12-02): a delivery sent with an ordering key waits for its turn
	// in the key and hands it on (workflows/ordering.go). Asked only by ordered deliveries,
	// which no release before ran: every recorded delivery history (delivery_*.json, none
	// ordered; delivery_first_try_before_ordering.json and
	// delivery_dead_letter_replayed_before_ordering.json keep two as the code before it
	// recorded them) never reaches it; delivery_ordered_waited.json and
	// delivery_ordered_blocked_replayed.json take the new branch (TestRecordOrderedHistories).
	// No longer asked since versionOrderingPlaced (the code before it did not branch on it;
	// the marker in older histories is skipped by the SDK's replay check): kept, never reuse.
	//lint:ignore U1000 retired: kept so that its id is never given to another change.
	versionOrdering = "ordering"
	// versionOrderingPlaced (2026-12-02): an ordering key's sequencer finds where its tail
	// is before it answers an append (a local activity, activities.Ops.Presence): a closed
	// tail makes the new delivery ready (herald.OrderingPlace.Ready: its turn is there, it
	// signals nobody), a tail that was never started is passed over (its send failed after
	// the append: the new one goes after the tail's predecessor); appends are placed one at
	// a time, and the idle timer is one per idle period, not one per append. Asked as a
	// sequencer run starts: ordering_sequencer_before_placed.json takes the old branch,
	// ordering_sequencer.json the new one.
	// An ordered delivery sends its ordering signals (the successor's ordering-next, the
	// turn) from local activities (activities.Ops.SignalOrdering) in the task that decides
	// them, not as SignalExternalWorkflow commands, and may hand the turn to more than one
	// successor (herald.Ordering.Also). Asked where those commands start to differ (its
	// first ordering signal, or the first successor that says it waits), so a delivery
	// whose turn is there as it starts and that has no successor records no marker at all:
	// delivery_ordered_waited_before_placed.json and
	// delivery_ordered_blocked_replayed_before_placed.json take the old branch,
	// delivery_ordered_waited.json and delivery_ordered_blocked_replayed.json the new one.
	versionOrderingPlaced = "ordering-placed"
	// versionRateLease (2026-12-02): a rate-limited endpoint's limiter leases rate budgets
	// to the workers' gates with their lease renewals (policy.Limiter.LeaseRates: each
	// aligned second's requests split among the gates and the endpoint's own queue), and
	// leases them permits of the cap as to any endpoint; before, every attempt waited for
	// a grant of its own. Asked before each pass of the loop and each lease renewal while
	// the endpoint is rate-limited and does not lease budgets yet. The histories recorded
	// before (endpoint_rate_limited.json, endpoint_rate_limited_continued*.json,
	// endpoint_queue_full*.json and endpoint_rate_limited_before_rate_lease.json) take the
	// old branch; endpoint_rate_leased.json takes the new one.
	versionRateLease = "rate-lease"
	// versionDrainPasses (2026-12-02, issue 24): an endpoint run wakes its queue, while the
	// circuit is closed, with passes (policy.Limiter.TickPasses: up to policy.PassWindow
	// waiters at once, each admitted by its worker's gate under the gate's lease) instead
	// of a permit of its own for each, so a backlog drains at the pace the cap and the
	// receiver allow. Asked the first time the queue could be woken in a run, or a gate
	// reports passes. The old branch (policy.Limiter.Tick) is taken by
	// tests/testdata/histories/endpoint_drain_before_passes.json; endpoint_drain.json
	// takes the new one (TestRecordDrainHistory).
	versionDrainPasses = "drain-passes"
	// versionSettleAttempt (2026-12-02, issue 27): a delivery that waited for its endpoint
	// and is about to complete in the workflow task that ran its last attempt first ends
	// that task with a 1 ms timer (delivery.settleAttempt; the server fires it up to a
	// second later). A signal that came during that task (a late or duplicated permit) made
	// the server refuse the completion (UnhandledCommand), which dropped the attempt's
	// local-activity result, and the request was sent again: the chaos run's unexplained
	// repeats. Asked only there. The histories recorded before take the old branch
	// (delivery_held_by_breaker.json, delivery_rate_limited.json and
	// delivery_held_delivered_before_settle.json, among others); delivery_held_delivered.json
	// takes the new one (TestRecordSettleHistory).
	versionSettleAttempt = "settle-attempt"
	// versionRateQueuePasses (2026-12-02, issue 24): a rate-limited endpoint whose limiter
	// leases rate budgets drains its queue, while the circuit is closed, through the gates'
	// shares (policy.Limiter.DrainRates): queued waiters are woken with passes
	// (policy.Limiter.TickPasses, at most policy.RatePassWindow at once) that their gate
	// admits against its share of the second (policy.LocalLease.AdmitPass), and the gates
	// keep being lent shares while some are queued; before, the limiter lent nothing new
	// while any waited and granted each queued waiter a request of its own budget
	// (RateLedger.TakeOwn), at the pace of its own workflow tasks. Asked once per run, the
	// first time a queue forms while the circuit is closed (policy.Limiter.RateDrainDue);
	// the new branch also asks versionDrainPasses there. Every history recorded before it
	// carries no marker and takes the old branch;
	// tests/testdata/histories/endpoint_rate_queue_before_rate_queue_passes.json is one that
	// reaches it (a queue drained by grants after the circuit was closed by hand), and
	// endpoint_rate_queue.json takes the new one (TestRecordRateQueueHistory).
	versionRateQueuePasses = "rate-queue-passes"
)

// Versions of a change id past 1. A change to a path that already asks a change id may
// raise that id's highest version instead of asking a new id: a run records one marker
// either way, and the histories recorded before keep replaying on the version they carry.
const (
	// settleQueuedVersion (2026-12-04, issue 24) is versionSettleAttempt's version 2: only a
	// delivery that waited in a way that may bring a permit signal (queued at its endpoint
	// workflow, or a hold that is not brief) settles its last attempt with the 1 ms timer.
	// One whose waits were all brief and unqueued (a rate-limited attempt booked for a later
	// second, a wait for its gate's lease to grow) asked the endpoint workflow for nothing,
	// so no permit can come during its last task: it completes in that task, one workflow
	// task and timer (5 history events) fewer. Version 1 settles after any wait:
	// delivery_rate_leased_before_settle_queued.json (booked, then settled) takes it;
	// delivery_rate_leased.json takes version 2 (TestRecordRateLeaseHistories).
	settleQueuedVersion = 2
	// versionWaitOnce (2026-12-04, issue 24): a gate's wait carries a key, its attempt and
	// the permits the delivery took (herald.WaitRequest.Keys, policy.WaitKey); a waiter
	// that holds a permit or pass granted for that key gets no second permit signal, only
	// its permit renewed
	// (policy.Limiter.Answered): its waiting attempt ran twice (a workflow task retried
	// after a worker died) and the first signal is on its way, or already in the delivery's
	// history. Before, the endpoint signalled the permit again, and the second could come
	// during the delivery's last attempt's task. A wait with another key (the delivery took
	// the permit and waits again, for its next attempt or because it could not use it, and
	// the endpoint has not heard yet), or one that hands a permit or pass back (Renew), is
	// granted as before. Asked the first time the same wait comes again in a
	// run: every history recorded before has none and takes the old branch;
	// endpoint_wait_once.json takes the new one (TestRecordWaitOnceHistory).
	versionWaitOnce = "wait-once"
	// versionNudgeOverflow (2026-12-05, issue 24): an endpoint workflow remembers that its
	// queue was full (policy.Limiter.NoteFull) and, once the queue is half empty again,
	// runs activities.Operator.NudgeWaiting, which finds the deliveries its gates turned
	// away meanwhile (they wait on their own recheck, up to 10 minutes) through visibility
	// and asks them to come back now (herald.UpdateNudge). Before, a backlog larger than
	// the queue delivered its first 10,000 and then waited for those rechecks. Asked the
	// first time a run finds its queue full or carries a full queue's overflow, so a run
	// started before the upgrade nudges once its queue fills after it, and not if it filled
	// before: the histories recorded before take the old branch (endpoint_queue_full.json
	// among them);
	// endpoint_nudge_overflow.json takes the new one (TestBacklogBeyondTheQueue -record).
	versionNudgeOverflow = "nudge-overflow"
	// versionPassUpdates (2026-12-05): an endpoint run that drains its queue with passes
	// hands them to their deliveries from the worker, by update (herald.UpdatePass, one
	// local activity per workflow task: activities.Operator.WakeWaiters), not with a
	// SignalExternalWorkflow command each, and hands out again a pass no gate reported
	// used in time (policy.Limiter.RewakePasses). Asked at a run's first pass. The runs
	// recorded before (endpoint_drain*.json and every endpoint history with passes) take
	// the old branch: a signal per pass.
	versionPassUpdates = "pass-updates"
	// settleOwedVersion (2026-12-04, issue 24) is versionSettleAttempt's version 3: a
	// delivery settles its last attempt only while a permit signal may still come, that is
	// while it has waited on more holds that may bring one (herald.Hold.MayPermit) than it
	// has taken permits. Each permit answers one wait: the endpoint workflow grants a wait
	// once, the same wait sent again (versionWaitOnce) included, and a pass that expires is
	// forgotten, not granted again.
	// A delivery woken from its endpoint's queue that took its permit or pass therefore
	// completes in its attempt's workflow task: a workflow task and a timer (5 history
	// events) fewer per drained delivery. Version 2 settles after any such wait:
	// delivery_held_delivered_before_owed.json takes it; delivery_held_delivered.json
	// takes version 3 (TestRecordSettleHistory).
	settleOwedVersion = 3
	// orderingChainVersion (2026-12-03, issue 26) is versionOrderingPlaced's version 2. A
	// sequencer no longer waits for a tail it cannot find started (a second at a time, up to
	// sequencerStartGrace, with every later append of the key and its send waiting behind
	// it): a tail appended in the same workflow task cannot have been started, since its
	// answer leaves with that task. The sequencer answers at once with the appended
	// deliveries it has not seen started (herald.OrderingPlace.Starting, policy.ChainWalk),
	// and the new delivery looks for them itself (activities.Ops.Follow,
	// policy.JudgeLink): it waits for the first it finds running, and passes over one
	// still missing after the grace. Asked as a sequencer run starts, and by a delivery
	// where versionOrderingPlaced was asked before (isLocal); a delivery branches on it only
	// when its place lists such deliveries, which no sequencer before it gave.
	// Version 1 is taken by the histories recorded before: ordering_sequencer_burst_before_chain.json
	// (six sends at once, five one-second waits), ordering_sequencer_before_chain.json,
	// delivery_ordered_waited_before_chain.json and
	// delivery_ordered_blocked_replayed_before_chain.json; version 2 by
	// ordering_sequencer.json, delivery_ordered_waited.json and
	// delivery_ordered_blocked_replayed.json (TestRecordOrderedHistories),
	// ordering_sequencer_burst.json and delivery_ordered_starting.json
	// (TestRecordOrderedBurstHistory).
	orderingChainVersion workflow.Version = 2
)
