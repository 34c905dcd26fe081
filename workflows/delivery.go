package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

// Limits that keep a delivery's history bounded however often it is replayed.
const (
	// continueAsNewEvents: past this many history events, a replay continues as new.
	continueAsNewEvents = 2000
	// attemptTimeout bounds the local activity of one attempt; the attempt's own HTTP
	// timeout (an endpoint setting, at most herald.MaxAttemptTimeout) is shorter.
	attemptTimeout = herald.MaxAttemptTimeout + 30*time.Second
)

// DeliveryWorkflow is the workflow of one event: it runs the retry ladder with durable
// timers, parks as a dead letter when the ladder is exhausted, and runs again on a replay
// signal. It counts dead letters and replays in MetricDeadLetters and MetricReplays.
type DeliveryWorkflow struct{}

// Run is the delivery workflow's function.
func (w *DeliveryWorkflow) Run(ctx workflow.Context, in herald.DeliveryInput) (herald.Status, error) {
	d := &delivery{in: in, status: herald.Status{
		Event:    in.Event.Summary(),
		State:    herald.StateScheduled,
		Round:    in.Round,
		Attempts: in.Attempts,
		Dropped:  in.Dropped,
	}}
	if err := workflow.SetQueryHandler(ctx, herald.QueryStatus, func() (herald.Status, error) { return d.status, nil }); err != nil {
		return d.status, err
	}
	if err := workflow.SetQueryHandler(ctx, herald.QueryEvent, func() (herald.Event, error) { return d.in.Event, nil }); err != nil {
		return d.status, err
	}
	d.replays = workflow.GetSignalChannel(ctx, herald.SignalReplay)
	d.permits = workflow.GetSignalChannel(ctx, herald.SignalPermit)
	if err := d.setCancelHandler(ctx); err != nil {
		return d.status, err
	}
	if err := d.setNudgeHandler(ctx); err != nil {
		return d.status, err
	}
	if err := d.setPassHandler(ctx); err != nil {
		return d.status, err
	}
	d.startOrdering(ctx)
	st, err := d.run(ctx)
	if err == nil {
		// A delivery cancelled while it waited for its turn keeps its place until the
		// turn comes, and hands it on then: the key's order holds.
		d.awaitTurnPassing(ctx)
		d.releaseTurn(ctx, string(st.State))
	}
	// Settle before the ordering does: a successor's signal that comes during the settle
	// timer is handed the turn, and orderingSettle waits for that.
	d.settleAttempt(ctx)
	d.orderingSettle(ctx)
	return st, err
}

type delivery struct {
	in      herald.DeliveryInput
	status  herald.Status
	replays workflow.ReceiveChannel
	permits workflow.ReceiveChannel
	permit  *policy.Grant
	// held is set once the gate has held an attempt back (the status left the fast path).
	held bool
	// skipped is set when the delivery ended without a request: its endpoint was disabled.
	skipped bool
	// cancel is the cancel accepted, if any (delivery_cancel.go).
	cancel cancelling
	// order is the delivery's part in its ordering key; nil without one (ordering.go).
	order *orderingRun
	// waited is set once the delivery has waited for its endpoint; mayPermit once it waited
	// on a hold that may bring a permit signal, even late (herald.Hold.MayPermit).
	waited, mayPermit bool
	// owed counts the permit signals that may still come: one per wait on a hold that may
	// bring one, less one per permit taken (settleOwedVersion); taken counts the permits
	// taken, for the key of the delivery's waits (policy.WaitKey).
	owed, taken int
	// unsettled is set while the result of an attempt that made a request is known only to
	// the workflow task that ran it (no timer or wait since): see settleAttempt.
	unsettled bool
	// forRoom is set while the delivery waits for room in its endpoint's full queue
	// (herald.Hold.Full): only then does it take a nudge, which nudges wakes it with.
	forRoom bool
	nudges  workflow.Channel
	// awaiting is set while the delivery waits for its endpoint (wait): only then does it
	// take a pass update (herald.UpdatePass), which passes carries to the wait.
	awaiting bool
	passes   workflow.Channel
	// byUpdate is set once the delivery has taken a pass by update, which no history
	// recorded before versionPassUpdates holds (settleAttempt).
	byUpdate bool
}

func (d *delivery) run(ctx workflow.Context) (herald.Status, error) {
	if stopped, err := d.schedule(ctx); err != nil || stopped {
		if stopped {
			d.stop(ctx)
		}
		return d.done(ctx, err)
	}
	if d.awaitTurn(ctx) {
		d.stop(ctx)
		return d.done(ctx, nil)
	}
	for {
		last, delivered, err := d.ladder(ctx)
		if err != nil {
			return d.status, err
		}
		if delivered && d.status.Round > 0 {
			d.emitOps(ctx, herald.OpsRecovered, "")
		}
		if delivered || d.skipped || d.status.State == herald.StateCancelled {
			return d.done(ctx, nil)
		}
		if d.cancelled() {
			// Cancelled while its last attempt was in flight: no dead letter.
			d.stop(ctx)
			return d.done(ctx, nil)
		}
		d.orderingDeadLetter(ctx, last.OrderingOnDeadLetter)
		if !d.deadLetter(ctx, last) {
			return d.done(ctx, nil)
		}
		d.orderingReplayed(ctx)
		// Replayed: run the ladder again with the same event id.
		d.status.Round++
		endpointMetrics(ctx, d.in.Event.EndpointID).Counter(MetricReplays).Inc(1)
		// Leave the dead letters list at once, so a bulk replay doesn't count it twice.
		d.setState(ctx, herald.StateAttempting, true)
		if historyLong(ctx, continueAsNewEvents) {
			return d.status, d.continueAsNew(ctx)
		}
	}
}

// ladder runs attempts until one succeeds or the ladder is exhausted. It returns the last
// attempt's policy (for the dead letter's retention) and whether the event was delivered.
func (d *delivery) ladder(ctx workflow.Context) (herald.Settings, bool, error) {
	ev := d.in.Event
	round := d.status.Round
	var acts *activities.Activities
	for n := 1; ; n++ {
		if d.cancelled() {
			// A cancel came as the wait before this attempt ended: it goes no further.
			d.stop(ctx)
			return herald.Settings{}, false, nil
		}
		d.setState(ctx, herald.StateAttempting, false)
		d.status.NextAttemptAt = time.Time{}
		in := activities.AttemptInput{
			Event: ev, Round: round, Number: n,
			Waiter: workflow.GetInfo(ctx).WorkflowExecution.ID, Permit: d.permit,
			WaitKey: policy.WaitKey(round, n, d.taken),
		}
		d.permit = nil
		var res herald.Result
		opts := workflow.LocalActivityOptions{
			StartToCloseTimeout: attemptTimeout,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
			Summary:             fmt.Sprintf("%s → %s", stepName(round, n), ev.EndpointID),
		}
		err := d.awaitAttempt(ctx, workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), acts.Attempt, in), n, &res)
		if err != nil {
			var canceled *temporal.CanceledError
			if errors.As(err, &canceled) {
				return herald.Settings{}, false, err
			}
			// The attempt never reached the receiver (no slot in time, the worker stopping):
			// it uses none of the ladder. Wait, then make attempt n again.
			d.wait(ctx, &herald.Hold{Reason: "the attempt could not start: " + err.Error(), Recheck: herald.Duration(policy.NotStartedRecheck)}, round, n)
			n--
			continue
		}
		d.unsettled = res.Held == nil
		if res.Held != nil && res.Held.Disabled {
			// The endpoint is disabled: no request, no attempt used, and no waiting.
			d.status.Waiting = nil
			d.status.Reason = res.Held.Reason
			if policy.OnDisabled(len(d.status.Attempts)) == policy.DisabledSkip {
				d.skipped = true
				d.setState(ctx, herald.StateSkipped, true)
				workflow.GetLogger(ctx).Info("skipped: endpoint disabled", "event", ev.ID, "endpoint", ev.EndpointID)
				return herald.Settings{}, false, nil
			}
			return lastPolicy(d.status.Attempts), false, nil
		}
		if res.Held != nil {
			// The endpoint's gate or breaker held the attempt back: no request was made,
			// no attempt is used up. Wait for a permit, then try attempt n again.
			d.wait(ctx, res.Held, round, n)
			n--
			continue
		}
		d.status.Waiting = nil
		rec := herald.AttemptRecord{Round: round, Number: n, Result: res}
		if res.Outcome == herald.OutcomeTransformCancelled {
			// The endpoint's transformation cancelled the delivery: it ends, with the
			// reason, neither retried nor dead-lettered. (No recorded history holds this
			// outcome: every run before it replays as it ran.)
			d.record(rec)
			d.skipped = true
			d.status.Reason = "cancelled by the endpoint's transformation: " + res.Error
			d.setState(ctx, herald.StateSkipped, true)
			workflow.GetLogger(ctx).Info("cancelled by the endpoint's transformation", "event", ev.ID, "endpoint", ev.EndpointID, "reason", res.Error)
			return herald.Settings{}, false, nil
		}
		if res.Delivered() {
			d.record(rec)
			d.status.DeliveredAt = res.StartedAt.Add(res.Duration.Std())
			// A first-try success stays on the fast path: no search attribute update.
			// A delivery that was held wrote waiting_endpoint: overwrite it.
			d.setState(ctx, herald.StateDelivered, n > 1 || round > 0 || d.held)
			return res.Policy, true, nil
		}
		ra := res.RetryAfter()
		next := policy.Next(res.Policy.Ladder, n, ra, policy.JitterKey(ev.ID, round, n))
		if res.Spread != nil {
			// The gate placed this failure among the endpoint's others: retry evenly spread.
			next = policy.NextAt(res.Policy.Ladder, n, ra, *res.Spread)
		}
		step := &herald.NextStep{NextAttempt: next}
		rec.Next = step
		if !next.Retry {
			d.record(rec)
			return res.Policy, false, nil
		}
		step.At = workflow.Now(ctx).Add(next.Delay.Std())
		d.record(rec)
		d.status.NextAttemptAt = step.At
		d.setState(ctx, herald.StateWaitingRetry, true)
		summary := fmt.Sprintf("%s → %s; retry %d in %s (%s)", stepName(round, n), res.Summary(), n+1,
			duration.Duration(next.Delay.Std().Round(time.Second)), retryReason(next, ra, res.Policy.Ladder))
		if err := d.awaitRetry(ctx, next.Delay.Std(), summary, n+1, step.At); err != nil {
			return herald.Settings{}, false, err
		}
	}
}

// stepName names attempt n of a round in the Temporal UI's timeline: "round 1 · attempt 2".
// round is the status's (0 for the first run, then one more per replay); people read
// rounds from 1, as the dashboard and herald status show them.
func stepName(round, n int) string { return fmt.Sprintf("round %d · attempt %d", round+1, n) }

// awaitAttempt waits for attempt n's local activity f and decodes its result into res. A
// replay that comes meanwhile is recorded as ignored: the attempt is in flight.
func (d *delivery) awaitAttempt(ctx workflow.Context, f workflow.Future, n int, res *herald.Result) error {
	done := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(workflow.Future) { done = true })
	sel.AddReceive(d.replays, func(c workflow.ReceiveChannel, _ bool) {
		d.ignoreReplay(ctx, c, fmt.Sprintf("attempt %d is in flight", n))
	})
	for !done {
		sel.Select(ctx)
	}
	return f.Get(ctx, res)
}

// awaitRetry waits for the ladder's timer of retry next (due at at), and returns its
// error. A replay sends the retry at once and cuts the timer short: the attempt numbers
// and the ladder's remaining attempts stay as they are.
func (d *delivery) awaitRetry(ctx workflow.Context, delay time.Duration, summary string, next int, at time.Time) error {
	d.unsettled = false
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, delay, workflow.TimerOptions{Summary: summary})
	var err error
	fired, now, stopped := false, false, false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(f workflow.Future) { fired, err = true, f.Get(ctx, nil) })
	d.addCancel(ctx, sel, &stopped)
	sel.AddReceive(d.replays, func(c workflow.ReceiveChannel, _ bool) {
		var req herald.ReplayRequest
		c.Receive(ctx, &req)
		due := at.UTC().Format(time.RFC3339)
		switch {
		case !req.DeadBefore.IsZero():
			d.noteReplay(ctx, fmt.Sprintf("ignored: a bulk replay replays dead letters only; retry %d waits until %s", next, due), false)
		default:
			now = true
			d.noteReplay(ctx, fmt.Sprintf("retry %d goes now, its timer cut short (it was due at %s)", next, due), false)
		}
	})
	for !fired && !now && !stopped {
		sel.Select(ctx)
	}
	return err
}

// ignoreReplay receives a replay signal from c and records it as ignored, saying why.
func (d *delivery) ignoreReplay(ctx workflow.Context, c workflow.ReceiveChannel, why string) {
	c.Receive(ctx, nil)
	d.noteReplay(ctx, "ignored: "+why, false)
}

// noteReplay records what became of a replay signal in the MemoReplay memo field (one
// history event), with the time and the round it came in; clearDead also removes the
// MemoDeadLetter field.
func (d *delivery) noteReplay(ctx workflow.Context, outcome string, clearDead bool) {
	note := fmt.Sprintf("%s round %d: %s", workflow.Now(ctx).UTC().Format(time.RFC3339), d.status.Round+1, outcome)
	memo := map[string]any{herald.MemoReplay: note}
	if clearDead {
		memo[herald.MemoDeadLetter] = nil
	}
	// Upsert fails only on values that do not encode, and strings do.
	_ = workflow.UpsertMemo(ctx, memo)
	workflow.GetLogger(ctx).Info("replay signal: "+outcome, "event", d.in.Event.ID)
}

// wait waits for the endpoint workflow to hand attempt n of round a permit, or until it is
// time to ask again. A replay that comes meanwhile is recorded as ignored: the endpoint's
// protection (its cap, its circuit) decides when the attempt goes.
func (d *delivery) wait(ctx workflow.Context, h *herald.Hold, round, n int) {
	now := workflow.Now(ctx)
	d.waited, d.unsettled = true, false
	d.mayPermit = d.mayPermit || h.MayPermit()
	if h.MayPermit() {
		d.owed++
	}
	d.status.Waiting = &herald.Waiting{Hold: *h, Since: now}
	if !h.Brief {
		d.held = true
		d.setState(ctx, herald.StateWaitingEndpoint, true)
	}
	again := h.Recheck
	if again <= 0 { // a hold that names no recheck
		again = herald.Duration(policy.HoldRecheck(h.Queued, h.RetryAt, now))
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(tctx, again.Std(), workflow.TimerOptions{
		Summary: stepName(round, n) + " " + waitSummary(h),
	})
	done := false
	take := func(p policy.Grant) {
		d.permit = &p
		d.owed = max(d.owed-1, 0)
		d.taken++
		done = true
	}
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(d.permits, func(c workflow.ReceiveChannel, _ bool) {
		var p policy.Grant
		c.Receive(ctx, &p)
		take(p)
	})
	d.awaiting = true
	defer func() { d.awaiting = false }()
	sel.AddReceive(d.passes, func(c workflow.ReceiveChannel, _ bool) {
		var p policy.Grant
		c.Receive(ctx, &p)
		d.byUpdate = true
		take(p)
	})
	sel.AddFuture(timer, func(workflow.Future) { done = true })
	d.addCancel(ctx, sel, &done)
	sel.AddReceive(d.replays, func(c workflow.ReceiveChannel, _ bool) {
		d.ignoreReplay(ctx, c, fmt.Sprintf("attempt %d waits for its endpoint (%s): a replay does not override the endpoint's protection; the attempt goes when the endpoint admits it", n, h.Reason))
	})
	if h.Full {
		// Turned away by a full queue: the endpoint workflow nudges it when it has room.
		for d.nudges.ReceiveAsync(nil) { // a nudge left from an earlier wait is spent
		}
		d.forRoom = true
		defer func() { d.forRoom = false }()
		sel.AddReceive(d.nudges, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			done = true
		})
	}
	for !done {
		sel.Select(ctx)
	}
}

// setNudgeHandler registers the nudge update (herald.UpdateNudge). Its validator refuses,
// without a trace in history, a delivery that is not waiting for room in its endpoint's
// full queue; an accepted nudge ends that wait, and the attempt asks its endpoint again.
func (d *delivery) setNudgeHandler(ctx workflow.Context) error {
	d.nudges = workflow.NewBufferedChannel(ctx, 1)
	return workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateNudge,
		func(ctx workflow.Context) error {
			d.nudges.SendAsync(struct{}{})
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context) error {
			if !d.forRoom {
				return errNotWaitingForRoom
			}
			return nil
		}})
}

// setPassHandler registers the pass update (herald.UpdatePass). Its validator refuses,
// without a trace in history, a delivery that is not waiting for its endpoint, or that
// already has a pass to take; an accepted pass ends the wait as a permit signal does.
func (d *delivery) setPassHandler(ctx workflow.Context) error {
	d.passes = workflow.NewBufferedChannel(ctx, 1)
	return workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdatePass,
		func(ctx workflow.Context, p policy.Grant) error {
			d.passes.SendAsync(p)
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, p policy.Grant) error {
			if !d.awaiting || d.passes.Len() > 0 || !p.Pass {
				return errNotWaitingForPermit
			}
			return nil
		}})
}

// errNotWaitingForPermit is a pass's refusal by a delivery that is not waiting for one.
var errNotWaitingForPermit = temporal.NewNonRetryableApplicationError("the delivery is not waiting for its endpoint", herald.NotWaitingForPermit, nil)

// errNotWaitingForRoom is a nudge's refusal by a delivery that is not waiting for room.
var errNotWaitingForRoom = temporal.NewNonRetryableApplicationError("the delivery is not waiting for room in its endpoint's queue", "NotWaitingForRoom", nil)

// deadLetter parks the delivery until a replay signal (true) or the retention window ends (false).
func (d *delivery) deadLetter(ctx workflow.Context, p herald.Settings) bool {
	d.unsettled = false
	now := workflow.Now(ctx)
	d.status.DeadAt = now
	d.status.ExpiresAt = now.Add(p.Retention.Std())
	d.setState(ctx, herald.StateDeadLetter, true)
	endpointMetrics(ctx, d.in.Event.EndpointID).Counter(MetricDeadLetters).Inc(1)
	reason := d.status.Reason
	if reason == "" {
		reason = "ladder exhausted"
		if n := len(d.status.Attempts); n > 0 {
			reason += "; last: " + d.status.Attempts[n-1].Result.Summary()
		}
	}
	workflow.GetLogger(ctx).Info("dead letter: "+reason, "event", d.in.Event.ID, "endpoint", d.in.Event.EndpointID)
	// A replay that came as the last attempt ended (after it, in the same workflow task) is
	// kept: it replays this dead letter, as the one who sent it asked.
	until := d.status.ExpiresAt.UTC().Format(time.RFC3339)
	_ = workflow.UpsertMemo(ctx, map[string]any{herald.MemoDeadLetter: "dead letter until " + until + ": " + reason})
	d.emitOps(ctx, herald.OpsDeadLettered, reason)

	tctx, cancelTimer := workflow.WithCancel(ctx)
	expired := false
	timer := workflow.NewTimerWithOptions(tctx, p.Retention.Std(), workflow.TimerOptions{
		Summary: fmt.Sprintf("round %d · dead letter: waiting for a replay until %s", d.status.Round+1, d.status.ExpiresAt.UTC().Format(time.RFC3339)),
	})
	replayed := false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(d.replays, func(c workflow.ReceiveChannel, _ bool) {
		var req herald.ReplayRequest
		c.Receive(ctx, &req)
		if req.Stale(d.status.DeadAt) {
			// A bulk replay asked before this dead letter parked: it meant an earlier one.
			workflow.GetLogger(ctx).Info("replay request ignored: it predates this dead letter", "event", d.in.Event.ID)
			d.noteReplay(ctx, fmt.Sprintf("ignored: a bulk replay for the dead letters parked by %s; this one parked at %s",
				req.DeadBefore.UTC().Format(time.RFC3339), d.status.DeadAt.UTC().Format(time.RFC3339)), false)
			return
		}
		replayed = true
	})
	sel.AddFuture(timer, func(workflow.Future) { expired = true })
	stopped := false
	d.addCancel(ctx, sel, &stopped)
	for !replayed && !expired && !stopped {
		sel.Select(ctx)
	}
	cancelTimer()
	if stopped {
		d.stop(ctx)
		return false
	}
	if expired {
		d.setState(ctx, herald.StateExpired, true)
		return false
	}
	d.noteReplay(ctx, fmt.Sprintf("dead letter replayed: round %d starts", d.status.Round+2), true)
	d.status.DeadAt, d.status.ExpiresAt, d.status.Reason = time.Time{}, time.Time{}, ""
	return true
}

// done ends the run with its status and err, once the handlers of a cancel have answered.
func (d *delivery) done(ctx workflow.Context, err error) (herald.Status, error) {
	if err == nil && d.cancelled() {
		err = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	}
	return d.status, err
}

func (d *delivery) continueAsNew(ctx workflow.Context) error {
	d.orderingSettle(ctx)
	kept, dropped := d.status.Attempts, d.status.Dropped
	if len(kept) > herald.MaxKeptAttempts {
		dropped += len(kept) - herald.MaxKeptAttempts
		kept = kept[len(kept)-herald.MaxKeptAttempts:]
	}
	return workflow.NewContinueAsNewError(ctx, herald.DeliveryWorkflow, herald.DeliveryInput{
		Event: d.in.Event, Round: d.status.Round, Attempts: kept, Dropped: dropped, Ordering: d.in.Ordering,
	})
}

func (d *delivery) record(rec herald.AttemptRecord) {
	d.status.Attempts = append(d.status.Attempts, rec)
}

// setState records the state for the query and, when upsert is set, in the HeraldStatus
// search attribute (one history event, so only off the fast path).
func (d *delivery) setState(ctx workflow.Context, state herald.State, upsert bool) {
	d.status.State = state
	details := fmt.Sprintf("**%s** — round %d, %d attempts", state, d.status.Round+1, len(d.status.Attempts))
	if n := len(d.status.Attempts); n > 0 {
		last := d.status.Attempts[n-1].Result
		details += fmt.Sprintf("; last: attempt %d → %s", last.Number, last.Summary())
	}
	if state == herald.StateDeadLetter && !d.status.ExpiresAt.IsZero() {
		details += "; dead letter until " + d.status.ExpiresAt.UTC().Format(time.RFC3339)
	}
	workflow.SetCurrentDetails(ctx, details)
	if upsert {
		// Upsert fails only on bad keys, which are constants here.
		_ = workflow.UpsertTypedSearchAttributes(ctx, herald.AttrStatus.ValueSet(string(state)))
	}
}

// waitSummary says in the UI's timeline why the delivery waits, e.g. "waiting: circuit open
// after 5 consecutive failures, probe at 12:08:00Z".
func waitSummary(h *herald.Hold) string {
	s := "waiting: " + h.Reason
	if !h.RetryAt.IsZero() && h.Circuit == policy.CircuitOpen {
		s += ", probe at " + h.RetryAt.UTC().Format("15:04:05Z")
	}
	if h.Queued && h.Position > 1 {
		s += fmt.Sprintf(" (behind %d or more)", h.Position-1)
	}
	return s
}

// lastPolicy is the policy a delivery parked at a disabled endpoint keeps its dead letter
// under: the last recorded attempt's policy, else Herald's built-in defaults. Its
// retention sets the dead letter's timer, so a change to what it answers is a change to
// the workflow's commands.
func lastPolicy(recs []herald.AttemptRecord) herald.Settings {
	for i := len(recs) - 1; i >= 0; i-- {
		if p := recs[i].Result.Policy; p.Ladder.Attempts > 0 {
			return p
		}
	}
	return herald.DefaultSettings().Apply(herald.Overrides{})
}

func retryReason(next policy.NextAttempt, ra policy.RetryAfter, l policy.Ladder) string {
	if next.Source == policy.SourceRetryAfter {
		return fmt.Sprintf("Retry-After %s %s", ra.Raw, ra.Action)
	}
	return fmt.Sprintf("ladder %s ±%.0f%%", next.BaseDelay, l.Jitter*100)
}

// settleDelay is the timer that ends an attempt's workflow task before the delivery completes.
const settleDelay = time.Millisecond

// settleAttempt keeps a delivery from completing in the workflow task that ran its last
// attempt when a signal may come during that task: the server refuses a completion while a
// signal is unread, the task fails, and the attempt's local-activity result, kept only by a
// task that completes, is lost, so the request is sent again. A delivery that waited for
// its endpoint on a hold that may bring a permit (late, or twice: mayPermit) first
// completes that task with a short timer; since settleOwedVersion, only while a permit may
// still come (owed: each permit answers one such wait, so a delivery woken from its
// endpoint's queue that took its permit completes in the task of its attempt). The fast
// path (no wait) gets such a signal only from a person (a replay, a cancel) and stays one
// task. An ordered delivery that did not wait is left out too, though a successor's signal
// can come during its last task: the server fires the timer up to a second late, and a
// head that lives a second longer makes its successors wait on it (the ordered bench fell
// from 0.50× to 0.18× the unordered rate with them in).
func (d *delivery) settleAttempt(ctx workflow.Context) {
	if !d.unsettled || !d.waited {
		return
	}
	if d.byUpdate && d.owed == 0 {
		// What the latest version decides, without asking it: a delivery that took a pass
		// by update runs no release older than that version, and asking would cost its
		// marker and a TemporalChangeVersion upsert (a visibility write) per drained delivery.
		d.unsettled = false
		return
	}
	v := workflow.GetVersion(ctx, versionSettleAttempt, workflow.DefaultVersion, settleOwedVersion)
	if v == workflow.DefaultVersion {
		return
	}
	d.unsettled = false
	if v >= settleOwedVersion && d.owed == 0 {
		// Every wait that could bring a permit has had its permit: none can come now.
		return
	}
	if v >= settleQueuedVersion && !d.mayPermit {
		// No permit can come: nothing is signalled during this task but what may come on
		// the fast path too (a person's replay, an ordering successor).
		return
	}
	// Its only error is a cancelled workflow, which completes anyway.
	_ = workflow.NewTimerWithOptions(ctx, settleDelay, workflow.TimerOptions{
		Summary: "the attempt's result is recorded before the delivery completes",
	}).Get(ctx, nil)
	// A successor's ordering signal that came in the same task as the timer was handed
	// straight to the ordering's receiving coroutine, which has not run yet, so the queue
	// looks empty: yield once, so that it runs and sends the turn that orderingSettle then
	// waits for (without this the delivery completed first and the key stalled).
	yielded := false
	_ = workflow.Await(ctx, func() bool {
		done := yielded
		yielded = true
		return done
	})
}
