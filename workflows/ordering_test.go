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
	"github.com/heraldhq/herald/policy"
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
	if next.Tail != last || next.Base != prev || len(next.Chain) != 1 || next.Chain[0].ID != last || !next.Chained ||
		next.Place == nil || next.Place.After != prev || next.Seq != int64(sequencerAppendsPerRun) || next.Idle != time.Hour {
		t.Errorf("continues with %+v, want tail %s (not seen started yet) after %s, its place, idle 1h", next, last, prev)
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
// delivery waits; after a closed one it is ready; a tail not found (its send may still be
// starting it, or failed) is not waited for: the new delivery is placed after the newest
// one seen started, with the missing one to look for itself (Starting), and the sequencer
// asks no more about it.
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
	ids := []string{"delivery:a", "delivery:b", "delivery:c", "delivery:d"}
	outs := make([]*updateOutcome[herald.OrderingPlace], len(ids))
	for i, id := range ids {
		env.RegisterDelayedCallback(func() {
			outs[i] = sendUpdate[herald.OrderingPlace](env, herald.UpdateOrderingAppend, herald.OrderingAppend{Delivery: id})
		}, time.Duration(i+1)*time.Second)
	}
	env.ExecuteWorkflow(herald.SequencerWorkflow, herald.SequencerInput{Idle: 2 * time.Hour})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	got := places(t, ids, outs)
	want := []string{
		"delivery:a<#1 ready=true starting=[]",                         // first: nothing before it
		"delivery:b<delivery:a#2 ready=false starting=[]",              // a runs: b waits for it
		"delivery:c<delivery:a#3 ready=false starting=[delivery:b@2s]", // b not found: c looks for it
		"delivery:d<delivery:c#4 ready=true starting=[]",               // c closed: d's turn is there
	}
	if !equalStrings(got, want) {
		t.Errorf("places %v, want %v", got, want)
	}
	if want := []string{"delivery:a@2s", "delivery:b@3s", "delivery:c@4s", "delivery:d@4h0m0s"}; !equalStrings(asked.all(), want) {
		t.Errorf("asked %v, want %v: each once, and no timer for the missing one", asked.all(), want)
	}
}

// places renders the answers of appends ids for comparison.
func places(t *testing.T, ids []string, outs []*updateOutcome[herald.OrderingPlace]) []string {
	t.Helper()
	var got []string
	for i, o := range outs {
		if o.check(t, "append "+ids[i]) {
			var st []string
			for _, l := range o.result.Starting {
				st = append(st, fmt.Sprintf("%s@%s", l.ID, l.At.Sub(testStart)))
			}
			got = append(got, fmt.Sprintf("%s<%s#%d ready=%v starting=%v", ids[i], o.result.After, o.result.Seq, o.result.Ready, st))
		}
	}
	return got
}

// TestSequencerBurst: appends that come in one workflow task (sends of one key at once) are
// answered in that task, none waiting for the one before it to start: they cannot have
// started, since their answers leave with the task, so the sequencer does not ask. A chain
// that reaches sequencerChainMax makes the next append wait (a second at a time) until the
// ones before it are seen started. A retried append of one of them, after later appends,
// gets its place again.
func TestSequencerBurst(t *testing.T) {
	defer func(n int) { sequencerChainMax = n }(sequencerChainMax)
	sequencerChainMax = 3
	env := newTestEnv()
	env.RegisterWorkflowWithOptions(SequencerWorkflow, workflow.RegisterOptions{Name: herald.SequencerWorkflow})
	var asked tape[string]
	env.OnActivity((&activities.Ops{}).Presence, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string) (string, error) {
			asked.add(id + "@" + env.Now().Sub(testStart).String())
			if env.Now().Sub(testStart) > time.Minute {
				return herald.PresenceClosed, nil // all delivered: the idle sequencer closes
			}
			return herald.PresenceRunning, nil
		})
	ids := []string{"delivery:a", "delivery:b", "delivery:c", "delivery:b", "delivery:d"}
	outs := make([]*updateOutcome[herald.OrderingPlace], len(ids))
	env.RegisterDelayedCallback(func() {
		for i, id := range ids {
			outs[i] = sendUpdate[herald.OrderingPlace](env, herald.UpdateOrderingAppend, herald.OrderingAppend{Delivery: id})
		}
	}, time.Second)
	var timers tape[time.Duration]
	recordTimers(env, &timers)
	env.ExecuteWorkflow(herald.SequencerWorkflow, herald.SequencerInput{Idle: time.Minute})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	got := places(t, ids, outs)
	want := []string{
		"delivery:a<#1 ready=true starting=[]",
		"delivery:b<#2 ready=false starting=[delivery:a@1s]",
		"delivery:c<#3 ready=false starting=[delivery:b@1s delivery:a@1s]",
		"delivery:b<#2 ready=false starting=[delivery:a@1s]", // a retried call: its place again, not a new one
		"delivery:d<delivery:c#4 ready=false starting=[]",    // the chain was full: a second later, c runs
	}
	if !equalStrings(got, want) {
		t.Errorf("places %v, want %v", got, want)
	}
	if want := []string{"delivery:c@2s"}; len(asked.all()) == 0 || asked.all()[0] != want[0] {
		t.Errorf("asked %v, want first %v: none asked in the task that appended them", asked.all(), want)
	}
	if got := timers.all(); !slices.Equal(got, []time.Duration{time.Minute, time.Second, time.Minute}) {
		t.Errorf("timers %v, want the idle minute, the full chain's one second, the idle minute", got)
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

// followEnv is orderedEnv with the Follow local activity answering where as each
// predecessor's presence at the time (and recording the signal when it runs).
func followEnv(t *testing.T, signals *tape[string], where func(id string, at time.Duration) string) (*testsuite.TestWorkflowEnvironment, *recorder) {
	t.Helper()
	env, rec := orderedEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return deliveredAttempt(now, defaultPolicy()), nil
	}, signals)
	env.OnActivity((&activities.Ops{}).Follow, mock.Anything, mock.Anything).Return(
		func(_ context.Context, s herald.OrderingSignal) (string, error) {
			at := env.Now().Sub(testStart)
			p := where(s.To, at)
			signals.add("follow→" + s.To + "@" + at.String() + "=" + p)
			return p, nil
		})
	return env, rec
}

// TestOrderedFollowsStarting: a delivery whose sequencer had not seen its predecessor
// started looks for it itself, a second apart, finds it running, tells it (one Follow) and
// waits for its turn; it does not go after the one before.
func TestOrderedFollowsStarting(t *testing.T) {
	var signals tape[string]
	const starting = "delivery:evt_starting"
	env, rec := followEnv(t, &signals, func(id string, at time.Duration) string {
		if id == starting && at >= 2*time.Second {
			return herald.PresenceRunning
		}
		return herald.PresenceMissing
	})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalOrderingTurn, herald.OrderingTurn{From: starting, Reason: "delivered"})
	}, time.Hour)
	in := orderedInput(orderPrev)
	in.Ordering.Starting = []policy.ChainLink{{ID: starting, At: testStart}}
	env.ExecuteWorkflow(herald.DeliveryWorkflow, in)
	st := workflowStatus(t, env)
	calls := rec.wantCalls(t, 1, "one, after the turn")
	if got := calls[0].At.Sub(testStart); got != time.Hour || st.State != herald.StateDelivered {
		t.Errorf("first attempt at +%s, state %q; want +1h (when the turn came), delivered", got, st.State)
	}
	want := []string{"follow→" + starting + "@0s=missing", "follow→" + starting + "@1s=missing", "follow→" + starting + "@2s=running"}
	if got := signals.all(); !equalStrings(got, want) {
		t.Errorf("signals %v, want %v (none to %s)", got, want, orderPrev)
	}
}

// TestOrderedPassesOverNeverStarted: a predecessor still missing after the grace (its send
// failed) is passed over: the delivery goes after the one its sequencer saw started, and
// waits for that one; a predecessor found closed is the turn at once.
func TestOrderedPassesOverNeverStarted(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		var signals tape[string]
		env, rec := followEnv(t, &signals, func(string, time.Duration) string { return herald.PresenceMissing })
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(herald.SignalOrderingTurn, herald.OrderingTurn{From: orderPrev, Reason: "delivered"})
		}, time.Hour)
		in := orderedInput(orderPrev)
		in.Ordering.Starting = []policy.ChainLink{{ID: "delivery:evt_lost", At: testStart.Add(-5 * time.Second)}}
		env.ExecuteWorkflow(herald.DeliveryWorkflow, in)
		calls := rec.wantCalls(t, 1, "one, after the turn")
		if got := calls[0].At.Sub(testStart); got != time.Hour {
			t.Errorf("first attempt at +%s, want +1h: it waits for %s", got, orderPrev)
		}
		got := signals.all()
		if n := len(got); n != 7 || got[5] != "follow→delivery:evt_lost@5s=missing" || got[6] != herald.SignalOrderingNext+"→"+orderPrev+"@5s" {
			t.Errorf("signals %v: want five looks a second apart until the grace, then %s told", got, orderPrev)
		}
	})
	t.Run("closed", func(t *testing.T) {
		var signals tape[string]
		env, rec := followEnv(t, &signals, func(string, time.Duration) string { return herald.PresenceClosed })
		in := orderedInput(orderPrev)
		in.Ordering.Starting = []policy.ChainLink{{ID: "delivery:evt_done", At: testStart}}
		env.ExecuteWorkflow(herald.DeliveryWorkflow, in)
		if calls := rec.wantCalls(t, 1, "one, at once"); !calls[0].At.Equal(testStart) {
			t.Errorf("first attempt at %s, want at once", calls[0].At)
		}
		if got, want := signals.all(), []string{"follow→delivery:evt_done@0s=closed"}; !equalStrings(got, want) {
			t.Errorf("signals %v, want %v", got, want)
		}
	})
}
