package workflows

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
	versionStatsSpill = "stats-spill"
	// versionOrdering (2026-12-02): a delivery sent with an ordering key waits for its turn
	// in the key and hands it on (workflows/ordering.go). Asked only by ordered deliveries,
	// which no release before ran: every recorded delivery history (delivery_*.json, none
	// ordered; delivery_first_try_before_ordering.json and
	// delivery_dead_letter_replayed_before_ordering.json keep two as the code before it
	// recorded them) never reaches it; delivery_ordered_waited.json and
	// delivery_ordered_blocked_replayed.json take the new branch (TestRecordOrderedHistories).
	versionOrdering = "ordering"
)
