package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
)

const (
	orderSelf = "delivery:" + testEventID
	orderPrev = "delivery:evt_before"
	orderNext = "delivery:evt_after"
)

// orderedEnv is a delivery test environment for an ordered delivery (workflow id
// orderSelf) whose signals to other workflows are recorded on signals.
func orderedEnv(t *testing.T, s script, signals *tape[string]) (*testsuite.TestWorkflowEnvironment, *recorder) {
	t.Helper()
	env, rec := newDeliveryEnv(t, s)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: orderSelf})
	env.OnUpsertMemo(mock.Anything).Return(nil)
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", mock.Anything, mock.Anything).Return(
		func(_, wfID, _, name string, arg any) error {
			signals.add(name + "→" + wfID + "@" + env.Now().Sub(testStart).String())
			if wfID == "delivery:evt_closed" {
				return errors.New("unknown external workflow execution")
			}
			return nil
		})
	// Since versionOrderingPlaced the signals go from a local activity: the same tape.
	env.OnActivity((&activities.Ops{}).SignalOrdering, mock.Anything, mock.Anything).Return(
		func(_ context.Context, s herald.OrderingSignal) (bool, error) {
			signals.add(s.Name + "→" + s.To + "@" + env.Now().Sub(testStart).String())
			return s.To != "delivery:evt_closed", nil
		})
	return env, rec
}

func orderedInput(after string) herald.DeliveryInput {
	ev := testEvent()
	ev.OrderingKey = "customer:42"
	return herald.DeliveryInput{Event: ev, Ordering: &herald.Ordering{Key: ev.OrderingKey, After: after}}
}

// TestOrderedWaitsForItsTurn: a delivery with a predecessor tells it it waits, makes no
// attempt (and uses no timer) until the predecessor hands it the turn, ignores a replay
// meanwhile, and once delivered hands the turn to the successor that said it waits.
func TestOrderedWaitsForItsTurn(t *testing.T) {
	var signals tape[string]
	env, rec := orderedEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return deliveredAttempt(now, defaultPolicy()), nil
	}, &signals)
	var waiting herald.Status
	env.RegisterDelayedCallback(func() {
		waiting = queryStatus(t, env)
		env.SignalWorkflow(herald.SignalReplay, nil)
		env.SignalWorkflow(herald.SignalOrderingNext, orderNext)
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalOrderingTurn, herald.OrderingTurn{From: orderPrev, Reason: "delivered"})
	}, 3*time.Hour)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, orderedInput(orderPrev))
	st := workflowStatus(t, env)

	if waiting.State != herald.StateWaitingTurn || waiting.Ordering == nil || waiting.Ordering.WaitingFor != "evt_before" || waiting.Ordering.Key != "customer:42" {
		t.Errorf("while waiting: state %q, ordering %+v; want waiting_turn for evt_before in customer:42", waiting.State, waiting.Ordering)
	}
	calls := rec.wantCalls(t, 1, "one, after the turn")
	if got := calls[0].At.Sub(testStart); got != 3*time.Hour {
		t.Errorf("first attempt at +%s, want +3h (when the turn came)", got)
	}
	if st.State != herald.StateDelivered || st.Ordering == nil || st.Ordering.WaitingFor != "" {
		t.Errorf("final state %q, ordering %+v", st.State, st.Ordering)
	}
	// Waiting for the turn uses no timer, and an ordered delivery that did not wait for its
	// endpoint completes without the settle.
	if tm := rec.timerDurations(); len(tm) != 0 {
		t.Errorf("timers %v: waiting for the turn uses none", tm)
	}
	want := []string{herald.SignalOrderingNext + "→" + orderPrev + "@0s", herald.SignalOrderingTurn + "→" + orderNext + "@3h0m0s"}
	if got := signals.all(); !equalStrings(got, want) {
		t.Errorf("signals %v, want %v", got, want)
	}
}

// TestOrderedPredecessorClosed: a predecessor that cannot be signalled (closed) is no
// wait: the first attempt goes at once, and no successor means no turn to hand.
func TestOrderedPredecessorClosed(t *testing.T) {
	var signals tape[string]
	env, rec := orderedEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return deliveredAttempt(now, defaultPolicy()), nil
	}, &signals)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, orderedInput("delivery:evt_closed"))
	st := workflowStatus(t, env)
	if calls := rec.wantCalls(t, 1, "one"); !calls[0].At.Equal(testStart) || st.State != herald.StateDelivered {
		t.Errorf("attempt at %s, state %q; want at once, delivered", calls[0].At, st.State)
	}
	if got := signals.all(); len(got) != 1 {
		t.Errorf("signals %v, want only the one to the closed predecessor", got)
	}
	for _, s := range rec.statuses() {
		if s == herald.StateWaitingTurn {
			t.Error("it waited for a closed predecessor")
		}
	}
}

// TestOrderedDeadLetterBlocks: under block (the default), a dead letter holds its key:
// ordering.blocked is emitted, the successor gets no turn while it is a dead letter, and
// gets it once a replay delivers it.
func TestOrderedDeadLetterBlocks(t *testing.T) {
	var signals tape[string]
	fail := true
	p := withRetention(48 * time.Hour)
	p.Ladder.Attempts = 2
	env, _ := orderedEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		if fail {
			return failedAttempt(now, p), nil
		}
		return deliveredAttempt(now, p), nil
	}, &signals)
	var parked herald.Status
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalOrderingNext, orderNext) }, time.Second)
	env.RegisterDelayedCallback(func() {
		parked = queryStatus(t, env)
		fail = false
		env.SignalWorkflow(herald.SignalReplay, nil)
	}, 24*time.Hour)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, orderedInput(""))
	st := workflowStatus(t, env)

	if parked.State != herald.StateDeadLetter || parked.Ordering == nil || !parked.Ordering.Blocking {
		t.Errorf("parked: state %q, ordering %+v; want a blocking dead letter", parked.State, parked.Ordering)
	}
	got := signals.all()
	if len(got) != 1 || got[0] != herald.SignalOrderingTurn+"→"+orderNext+"@24h0m0s" {
		t.Errorf("signals %v, want the turn only once the replay delivered (at +24h)", got)
	}
	if st.State != herald.StateDelivered || st.Ordering.Blocking {
		t.Errorf("final %q, ordering %+v", st.State, st.Ordering)
	}
	var blocked int
	for _, ev := range emittedOps(env) {
		if ev.Type == herald.OpsOrderingBlocked {
			blocked++
		}
	}
	if blocked != 1 {
		t.Errorf("%d ordering.blocked events, want 1", blocked)
	}
}

// TestOrderedDeadLetterSkip: under skip, the dead letter hands the turn on as it parks
// and says it was passed; a successor that comes later gets the turn at once.
func TestOrderedDeadLetterSkip(t *testing.T) {
	var signals tape[string]
	p := withRetention(48 * time.Hour)
	p.Ladder.Attempts = 1
	p.OrderingOnDeadLetter = herald.OrderingSkip
	env, _ := orderedEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return failedAttempt(now, p), nil
	}, &signals)
	var parked herald.Status
	env.RegisterDelayedCallback(func() {
		parked = queryStatus(t, env)
		env.SignalWorkflow(herald.SignalOrderingNext, orderNext)
	}, time.Hour)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, orderedInput(""))
	st := workflowStatus(t, env)
	if parked.State != herald.StateDeadLetter || parked.Ordering == nil || !parked.Ordering.Passed || parked.Ordering.Blocking {
		t.Errorf("parked: state %q, ordering %+v; want a passed dead letter", parked.State, parked.Ordering)
	}
	got := signals.all()
	if len(got) != 1 || got[0] != herald.SignalOrderingTurn+"→"+orderNext+"@1h0m0s" {
		t.Errorf("signals %v, want the turn at once when the successor came (+1h)", got)
	}
	if st.State != herald.StateExpired {
		t.Errorf("final %q, want expired", st.State)
	}
	for _, ev := range emittedOps(env) {
		if ev.Type == herald.OpsOrderingBlocked {
			t.Error("ordering.blocked under skip")
		}
	}
}

// TestSequencerAppends: the sequencer answers each delivery its predecessor, the same
// answer to the same tail again, and closes when idle with its tail closed.
func TestSequencerAppends(t *testing.T) {
	env := newTestEnv()
	env.RegisterWorkflowWithOptions(SequencerWorkflow, workflow.RegisterOptions{Name: herald.SequencerWorkflow})
	open := true
	env.OnActivity((&activities.Ops{}).Closed, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string) (bool, error) { return !open, nil })
	env.OnActivity((&activities.Ops{}).Presence, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string) (string, error) {
			if open {
				return herald.PresenceRunning, nil
			}
			return herald.PresenceClosed, nil
		})
	ids := []string{"delivery:a", "delivery:b", "delivery:b", "delivery:c", "endpoint:x"} // b twice: the same call again
	outs := make([]*updateOutcome[herald.OrderingPlace], len(ids))
	for i, id := range ids {
		env.RegisterDelayedCallback(func() {
			outs[i] = sendUpdate[herald.OrderingPlace](env, herald.UpdateOrderingAppend, herald.OrderingAppend{Delivery: id})
		}, time.Duration(i+1)*time.Second)
	}
	env.RegisterDelayedCallback(func() { open = false }, 90*time.Minute)
	env.ExecuteWorkflow(herald.SequencerWorkflow, herald.SequencerInput{})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var got []string
	for i, o := range outs[:4] {
		if o.check(t, "append "+ids[i]) {
			got = append(got, fmt.Sprintf("%s<%s#%d", ids[i], o.result.After, o.result.Seq))
		}
	}
	want := []string{"delivery:a<#1", "delivery:b<delivery:a#2", "delivery:b<delivery:a#2", "delivery:c<delivery:b#3"}
	if !equalStrings(got, want) {
		t.Errorf("places %v, want %v", got, want)
	}
	if outs[4] == nil || outs[4].rejected == nil {
		t.Error("a non-delivery id was accepted")
	}
	// Idle at +4s: the check at +1h finds the tail open, the one at +2h closed.
	if d := env.Now().Sub(testStart); d < 2*time.Hour || d > 2*time.Hour+time.Minute {
		t.Errorf("closed at +%s, want about +2h", d)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSequencerContinuesAsNew: after sequencerAppendsPerRun appends the sequencer
// continues as new with its tail, so the next append finds its predecessor.
func TestSequencerContinuesAsNew(t *testing.T) {
	defer func(n int) { sequencerAppendsPerRun = n }(sequencerAppendsPerRun)
	sequencerAppendsPerRun = 5
	env := newTestEnv()
	env.RegisterWorkflowWithOptions(SequencerWorkflow, workflow.RegisterOptions{Name: herald.SequencerWorkflow})
	for i := range sequencerAppendsPerRun {
		env.RegisterDelayedCallback(func() {
			sendUpdate[herald.OrderingPlace](env, herald.UpdateOrderingAppend, herald.OrderingAppend{Delivery: fmt.Sprintf("delivery:e%d", i)})
		}, time.Duration(i+1)*time.Millisecond)
	}
	env.OnActivity((&activities.Ops{}).Presence, mock.Anything, mock.Anything).Return(herald.PresenceRunning, nil)
	env.ExecuteWorkflow(herald.SequencerWorkflow, herald.SequencerInput{Tail: "delivery:before", Idle: time.Hour})
	_, next := continuedAsNew[herald.SequencerInput](t, env)
	last := fmt.Sprintf("delivery:e%d", sequencerAppendsPerRun-1)
	prev := fmt.Sprintf("delivery:e%d", sequencerAppendsPerRun-2)
	if next.Tail != last || next.TailAfter != prev || next.Seq != int64(sequencerAppendsPerRun) || next.Idle != time.Hour {
		t.Errorf("continues with %+v, want tail %s after %s, idle 1h", next, last, prev)
	}
}

// TestOrderedCancelledWhileWaitingKeepsItsPlace: a delivery cancelled while it waits for its
// turn stops at once (no attempt, state cancelled, the cancel answered), but hands the turn
// to its successor only when its own turn comes: the one after it does not go before the
// one before it.
func TestOrderedCancelledWhileWaitingKeepsItsPlace(t *testing.T) {
	var signals tape[string]
	env, rec := orderedEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return deliveredAttempt(now, defaultPolicy()), nil
	}, &signals)
	env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil)
	var cancel *updateOutcome[herald.Status]
	var afterCancel herald.Status
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalOrderingNext, orderNext) }, time.Hour)
	env.RegisterDelayedCallback(func() {
		cancel = sendUpdate[herald.Status](env, herald.UpdateCancel, herald.CancelRequest{Reason: "wrong plan", By: "operator"})
	}, 2*time.Hour)
	env.RegisterDelayedCallback(func() { afterCancel = queryStatus(t, env) }, 2*time.Hour+time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalOrderingTurn, herald.OrderingTurn{From: orderPrev, Reason: "delivered"})
	}, 5*time.Hour)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, orderedInput(orderPrev))
	st := workflowStatus(t, env)

	cancel.mustSucceed(t, "cancel while waiting for the turn")
	if afterCancel.State != herald.StateCancelled {
		t.Errorf("state after the cancel %q, want cancelled at once", afterCancel.State)
	}
	rec.wantCalls(t, 0, "none: cancelled before its turn")
	if st.State != herald.StateCancelled || st.Cancelled == nil || st.Cancelled.Phase != herald.StateWaitingTurn {
		t.Errorf("final state %q, cancelled %+v; want cancelled from waiting_turn", st.State, st.Cancelled)
	}
	var turn []string
	for _, s := range signals.all() {
		if strings.HasPrefix(s, herald.SignalOrderingTurn+"→") {
			turn = append(turn, s)
		}
	}
	if want := []string{herald.SignalOrderingTurn + "→" + orderNext + "@5h0m0s"}; !slices.Equal(turn, want) {
		t.Errorf("turn signals %q, want %q: handed on when its own turn came, not at the cancel", turn, want)
	}
}

// TestSequencerPlaces: an append finds where the tail is: after a running tail the new
// delivery waits; after a closed one it is ready; a tail that was never started (its send
// failed after its append) is looked for until sequencerStartGrace has passed and then
// passed over, so the next delivery goes after the missing one's predecessor, not at once.
func TestSequencerPlaces(t *testing.T) {
	env := newTestEnv()
	env.RegisterWorkflowWithOptions(SequencerWorkflow, workflow.RegisterOptions{Name: herald.SequencerWorkflow})
	presence := map[string]string{"delivery:a": herald.PresenceRunning, "delivery:b": herald.PresenceMissing, "delivery:c": herald.PresenceClosed}
	var asked tape[string]
	env.OnActivity((&activities.Ops{}).Presence, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string) (string, error) {
			asked.add(id + "@" + env.Now().Sub(testStart).String())
			if p, ok := presence[id]; ok {
				return p, nil
			}
			return herald.PresenceClosed, nil
		})
	env.OnActivity((&activities.Ops{}).Closed, mock.Anything, mock.Anything).Return(true, nil)
	ids := []string{"delivery:a", "delivery:b", "delivery:c", "delivery:d"}
	outs := make([]*updateOutcome[herald.OrderingPlace], len(ids))
	for i, id := range ids {
		env.RegisterDelayedCallback(func() {
			outs[i] = sendUpdate[herald.OrderingPlace](env, herald.UpdateOrderingAppend, herald.OrderingAppend{Delivery: id})
		}, time.Duration(i+1)*time.Second)
	}
	env.RegisterDelayedCallback(func() { presence["delivery:a"] = herald.PresenceClosed }, time.Hour)
	env.ExecuteWorkflow(herald.SequencerWorkflow, herald.SequencerInput{Idle: 2 * time.Hour})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var got []string
	for i, o := range outs {
		if o.check(t, "append "+ids[i]) {
			got = append(got, fmt.Sprintf("%s<%s#%d ready=%v", ids[i], o.result.After, o.result.Seq, o.result.Ready))
		}
	}
	want := []string{
		"delivery:a<#1 ready=true",            // first: nothing before it
		"delivery:b<delivery:a#2 ready=false", // a runs: b waits for it
		"delivery:c<delivery:a#3 ready=false", // b never started: c goes after a, not at once
		"delivery:d<delivery:c#4 ready=true",  // c closed: d's turn is there
	}
	if !equalStrings(got, want) {
		t.Errorf("places %v, want %v", got, want)
	}
	var forB int
	for _, a := range asked.all() {
		if strings.HasPrefix(a, "delivery:b@") {
			forB++
		}
	}
	if forB < 2 {
		t.Errorf("asked %v: b, not found, was not looked for again within the grace", asked.all())
	}
}

// TestOrderedReadyGoesAtOnce: a delivery whose place is ready (its predecessor closed as it
// was appended: the starter sets Turn) attempts at once and signals nobody.
func TestOrderedReadyGoesAtOnce(t *testing.T) {
	var signals tape[string]
	env, rec := orderedEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return deliveredAttempt(now, defaultPolicy()), nil
	}, &signals)
	in := orderedInput(orderPrev)
	in.Ordering.Turn = true
	env.ExecuteWorkflow(herald.DeliveryWorkflow, in)
	st := workflowStatus(t, env)
	if calls := rec.wantCalls(t, 1, "one"); !calls[0].At.Equal(testStart) || st.State != herald.StateDelivered {
		t.Errorf("attempt at %s, state %q; want at once, delivered", calls[0].At, st.State)
	}
	if got := signals.all(); len(got) != 0 {
		t.Errorf("signals %v, want none", got)
	}
}

// TestOrderedTwoSuccessors: two deliveries that both said they wait after this one (two
// sends at once) both get the turn when it ends.
func TestOrderedTwoSuccessors(t *testing.T) {
	var signals tape[string]
	env, _ := orderedEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return deliveredAttempt(now, defaultPolicy()), nil
	}, &signals)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalOrderingNext, orderNext)
		env.SignalWorkflow(herald.SignalOrderingNext, "delivery:evt_also")
		env.SignalWorkflow(herald.SignalOrderingNext, orderNext) // again: no second turn
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalOrderingTurn, herald.OrderingTurn{From: orderPrev, Reason: "delivered"})
	}, 2*time.Hour)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, orderedInput(orderPrev))
	workflowStatus(t, env)
	want := []string{herald.SignalOrderingNext + "→" + orderPrev + "@0s",
		herald.SignalOrderingTurn + "→" + orderNext + "@2h0m0s", herald.SignalOrderingTurn + "→delivery:evt_also@2h0m0s"}
	if got := signals.all(); !equalStrings(got, want) {
		t.Errorf("signals %v, want %v", got, want)
	}
}
