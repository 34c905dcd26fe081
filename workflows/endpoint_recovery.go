package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
)

// Recovery of an endpoint disabled for failing: the endpoint workflow probes it on the
// recovery ladder (the worker's, recorded as a side effect as probing starts; the
// limiter's state decides when), each probe a
// local activity (activities.Prober.Probe) run in a coroutine of its own so the main loop
// never waits for it. The first probe that succeeds enables the endpoint; once every
// worker's gate knows (policy.ConfigSettle), a bulk replay of the endpoint's dead letters
// starts (activities.Ops.ReplayRecovered) and endpoint.recovered is emitted.

// probeOptions bound a probe's local activity: one try, within the longest attempt.
var probeOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: attemptTimeout,
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
}

// recover starts the recovery ladder of an endpoint found disabled for failing (once per
// run, behind versionEndpointRecovery), and the probe due at now, if one is.
func (e *endpointRun) recover(ctx workflow.Context, now time.Time) {
	lim := e.in.Limiter
	if lim.RecoveryUnset() && !e.noRecovery {
		if workflow.GetVersion(ctx, versionEndpointRecovery, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			e.noRecovery = true // a run of a release that never probed: it stays so
			return
		}
		// The ladder is the worker's setting: recorded (a side effect), so that a worker set
		// otherwise replays this run as it ran.
		ladder := policy.DefaultRecoveryLadder()
		if err := workflow.SideEffect(ctx, func(workflow.Context) any {
			if e.ladder.Validate() != nil {
				return policy.DefaultRecoveryLadder()
			}
			return e.ladder
		}).Get(&ladder); err != nil {
			workflow.GetLogger(ctx).Error("recovery ladder not read: the default is used", "error", err)
		}
		lim.StartRecovery(ladder)
		workflow.GetLogger(ctx).Info("endpoint disabled for failing: probing", "endpoint", e.in.ID, "first", lim.Disabled.Recovery.NextAt)
	}
	if e.probing {
		return
	}
	n, ok := lim.BeginProbe(now)
	if !ok {
		return
	}
	e.probing = true
	in := activities.ProbeInput{Endpoint: *e.in.Endpoint, Number: n, DisabledAt: lim.Disabled.At}
	workflow.Go(ctx, func(gctx workflow.Context) {
		defer func() { e.probing = false }()
		e.probe(gctx, in)
	})
}

// probe sends probe in.Number and acts on its outcome.
func (e *endpointRun) probe(ctx workflow.Context, in activities.ProbeInput) {
	opts := probeOptions
	opts.Summary = fmt.Sprintf("recovery probe %d → %s", in.Number, e.in.ID)
	var p *activities.Prober
	var res herald.Result
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), p.Probe, in).Get(ctx, &res)
	summary := res.Summary()
	if err != nil {
		summary = "the probe could not be sent: " + err.Error()
	}
	at := res.StartedAt
	if at.IsZero() {
		at = workflow.Now(ctx)
	}
	now := workflow.Now(ctx)
	lim := e.in.Limiter
	if lim == nil || !lim.EndProbe(at, now, err == nil && res.Delivered(), fmt.Sprintf("probe %d: %s", in.Number, summary)) {
		e.dirty = true
		workflow.GetLogger(ctx).Info("recovery probe failed", "endpoint", e.in.ID, "probe", in.Number, "result", summary)
		return
	}
	e.dirty = true
	workflow.GetLogger(ctx).Info("endpoint recovered: enabled again", "endpoint", e.in.ID, "probe", in.Number)
	e.replayRecovered(ctx, in, now, fmt.Sprintf("probe %d answered %s, %s after the endpoint was disabled for failing",
		in.Number, summary, now.Sub(in.DisabledAt).Round(time.Second)))
}

// replayRecovered waits until every worker's gate knows the endpoint is enabled, starts
// the bulk replay of its dead letters, and emits endpoint.recovered.
func (e *endpointRun) replayRecovered(ctx workflow.Context, in activities.ProbeInput, at time.Time, reason string) {
	if err := workflow.NewTimerWithOptions(ctx, policy.ConfigSettle, workflow.TimerOptions{
		Summary: "the enable reaches every worker before the dead letters are replayed",
	}).Get(ctx, nil); err != nil {
		return
	}
	tenant := herald.TenantOrDefault(in.Endpoint.Tenant)
	id := herald.RecoveryReplayID(e.in.ID, at)
	var ops *activities.Ops
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opsOptions), ops.ReplayRecovered, id,
		herald.BulkReplayInput{Filter: herald.DeadLetterFilter{EndpointID: e.in.ID, Tenant: tenant}}).Get(ctx, &id)
	if err != nil {
		workflow.GetLogger(ctx).Error("dead letters of a recovered endpoint not replayed: replay them with herald replay --endpoint", "endpoint", e.in.ID, "error", err)
		id, reason = "", reason+"; its dead letters could not be replayed: "+err.Error()
	}
	if herald.IsOps(tenant, e.in.ID) {
		return
	}
	emitOps(ctx, herald.OpsEndpointRecovered, fmt.Sprintf("%s|%d", e.in.ID, at.UnixNano()), herald.OpsData{
		EndpointID: e.in.ID, Tenant: tenant, At: at, Reason: reason, BulkReplayID: id,
	})
}
