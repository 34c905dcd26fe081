package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
)

// Ordered delivery per key (herald/ordering.go says what it promises).
//
// The sequencer of a key holds two workflow ids, the key's tail and the tail's
// predecessor, whatever the number of events: UpdateOrderingAppend makes the caller the
// new tail and answers the old one. The starter appends before it starts the delivery, so
// the order is the order sends were accepted. A delivery with a predecessor then signals
// it (SignalOrderingNext, its own workflow id) and waits on a signal channel for its turn
// (SignalOrderingTurn): no timer, no activity, no worker slot. The predecessor hands the
// turn on when its own ends: delivered, skipped, dead-lettered under OrderingSkip, or, under
// OrderingBlock, once a replay delivers it or its dead letter expires. A predecessor that is
// already closed cannot be signalled: the failed signal is the turn, so a successor that
// comes after its predecessor finished never waits (no lost wake-up). A predecessor that
// gets the successor's signal after its turn ended answers at once, and one that closes
// waits first for every such signal it got (orderingSettle).

// sequencerAppendsPerRun: a sequencer continues as new after this many appends (the server
// allows 2,000 updates per run). A variable for the tests only.
var sequencerAppendsPerRun = 1000

// Sequencer limits.
const (
	// sequencerIdle: a sequencer with no append for this long asks whether its tail is
	// closed, and closes if it is (the next append starts a new run, with no tail).
	sequencerIdle = time.Hour
)

// SequencerWorkflow is the workflow of one ordering key (herald.SequencerWorkflowID). Its
// state is two workflow ids: bounded whatever the number of events in its key.
func SequencerWorkflow(ctx workflow.Context, in herald.SequencerInput) error {
	appends := 0
	err := workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateOrderingAppend,
		func(ctx workflow.Context, req herald.OrderingAppend) (herald.OrderingPlace, error) {
			appends++
			if req.Delivery != in.Tail { // else the same delivery again (a retried call): the same place
				in.TailAfter, in.Tail = in.Tail, req.Delivery
				in.Seq++
			}
			return herald.OrderingPlace{After: in.TailAfter, Seq: in.Seq}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req herald.OrderingAppend) error {
			if _, _, ok := herald.ParseDeliveryID(req.Delivery); !ok {
				return fmt.Errorf("append: %q is not a delivery's workflow id", req.Delivery)
			}
			// Appends accepted while the run waits to continue as new still count: the
			// new run starts from the tail they leave (2,000 updates per run leave room).
			return nil
		}})
	if err != nil {
		return err
	}
	idle := in.Idle
	if idle <= 0 {
		idle = sequencerIdle
	}
	for {
		seen := appends
		moved, err := workflow.AwaitWithTimeout(ctx, idle, func() bool { return appends != seen || appends >= sequencerAppendsPerRun })
		if err != nil {
			return err
		}
		if appends >= sequencerAppendsPerRun {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, herald.SequencerWorkflow, herald.SequencerInput{Tail: in.Tail, TailAfter: in.TailAfter, Seq: in.Seq, Idle: in.Idle})
		}
		if moved {
			continue
		}
		closed := in.Tail == ""
		if !closed {
			var ops *activities.Ops
			opts := opsOptions
			opts.Summary = "is the tail closed?"
			if err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), ops.Closed, in.Tail).Get(ctx, &closed); err != nil {
				workflow.GetLogger(ctx).Warn("ordering: cannot tell whether the tail is closed", "tail", in.Tail, "error", err)
				continue
			}
		}
		if closed && appends == seen && workflow.AllHandlersFinished(ctx) {
			return nil // idle, its tail done: the next append starts a new run with no tail
		}
	}
}

// orderingRun is the ordering part of one ordered delivery run.
type orderingRun struct {
	o     *herald.Ordering
	self  string
	next  workflow.ReceiveChannel
	turns workflow.ReceiveChannel
	// sending counts turn signals on their way to the successor.
	sending int
}

// startOrdering sets up an ordered delivery's part: the status's key, and the goroutine that
// takes its successor's signal, answering it at once once the turn has gone.
func (d *delivery) startOrdering(ctx workflow.Context) {
	if d.in.Ordering == nil {
		return
	}
	// Only ordered runs ask, and none ran before this release: no old branch to keep.
	workflow.GetVersion(ctx, versionOrdering, workflow.DefaultVersion, 1)
	r := &orderingRun{
		o:     d.in.Ordering,
		self:  workflow.GetInfo(ctx).WorkflowExecution.ID,
		next:  workflow.GetSignalChannel(ctx, herald.SignalOrderingNext),
		turns: workflow.GetSignalChannel(ctx, herald.SignalOrderingTurn),
	}
	d.order = r
	d.status.Ordering = &herald.OrderingStatus{Key: r.o.Key, Seq: r.o.Seq}
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var next string
			r.next.Receive(ctx, &next)
			r.o.Next = next
			if r.o.Released {
				r.sendTurn(ctx, "its turn had ended")
			}
		}
	})
}

// awaitTurn waits until the delivery before this one in its key hands it the turn. A replay
// that comes meanwhile is recorded as ignored: nothing was attempted yet. It reports whether
// a cancel came first (the delivery then stops, and hands the turn on once it comes:
// awaitTurnPassing).
func (d *delivery) awaitTurn(ctx workflow.Context) (cancelled bool) {
	r := d.order
	if r == nil || r.o.Turn {
		return false
	}
	if r.o.After == "" {
		r.o.Turn = true
		return false
	}
	err := workflow.SignalExternalWorkflow(ctx, r.o.After, "", herald.SignalOrderingNext, r.self).Get(ctx, nil)
	if err != nil {
		// The predecessor is closed (or was never started: its send failed): its turn is over.
		workflow.GetLogger(ctx).Info("ordering: the predecessor is closed, the turn is ours", "after", r.o.After, "error", err)
		r.o.Turn = true
		return false
	}
	waitingFor := herald.OrderingEventID(r.o.After)
	d.status.Ordering.WaitingFor = waitingFor
	// The state (one upsert) lists it among waiting_turn; the status query says for what.
	d.setState(ctx, herald.StateWaitingTurn, true)
	sel := workflow.NewSelector(ctx)
	r.addTurn(ctx, sel)
	sel.AddReceive(d.replays, func(c workflow.ReceiveChannel, _ bool) {
		d.ignoreReplay(ctx, c, fmt.Sprintf("it waits for its turn in key %s, after %s", r.o.Key, waitingFor))
	})
	d.addCancel(ctx, sel, &cancelled)
	for !r.o.Turn && !cancelled {
		sel.Select(ctx)
	}
	if r.o.Turn {
		d.status.Ordering.WaitingFor = ""
	}
	return cancelled && !r.o.Turn
}

// addTurn makes sel take the turn when the delivery before it hands it on.
func (r *orderingRun) addTurn(ctx workflow.Context, sel workflow.Selector) {
	sel.AddReceive(r.turns, func(c workflow.ReceiveChannel, _ bool) {
		var t herald.OrderingTurn
		c.Receive(ctx, &t)
		r.o.Turn = true
		workflow.GetLogger(ctx).Info("ordering: turn handed on", "from", t.From, "reason", t.Reason)
	})
}

// awaitTurnPassing waits, in a delivery that ended (cancelled) while it waited for its turn,
// until the turn comes, so that it hands it on only then (releaseTurn): the one after it
// does not go before the one before it.
func (d *delivery) awaitTurnPassing(ctx workflow.Context) {
	r := d.order
	if r == nil || r.o.Turn || r.o.Released {
		return
	}
	sel := workflow.NewSelector(ctx)
	r.addTurn(ctx, sel)
	sel.AddReceive(d.replays, func(c workflow.ReceiveChannel, _ bool) {
		d.ignoreReplay(ctx, c, "it was cancelled")
	})
	for !r.o.Turn {
		sel.Select(ctx)
	}
	d.status.Ordering.WaitingFor = ""
}

// memoOrdering records the status's ordering in the MemoOrdering memo field (one history
// event), when a dead letter blocks or is passed: the Temporal UI and the visibility list
// (blocked keys) show it.
func (d *delivery) memoOrdering(ctx workflow.Context) {
	// Upsert fails only on values that do not encode, and this one does.
	_ = workflow.UpsertMemo(ctx, map[string]any{herald.MemoOrdering: *d.status.Ordering})
}

// releaseTurn ends the delivery's turn in its key, saying why, and hands it to the
// successor if one waits (else the successor's signal gets the turn when it comes).
func (d *delivery) releaseTurn(ctx workflow.Context, reason string) {
	r := d.order
	if r == nil || r.o.Released {
		return
	}
	r.o.Released = true
	if d.status.Ordering != nil {
		d.status.Ordering.Blocking = false
	}
	if r.o.Next != "" {
		r.sendTurn(ctx, reason)
	}
}

// sendTurn signals the successor its turn. A successor that is gone needs none.
func (r *orderingRun) sendTurn(ctx workflow.Context, reason string) {
	r.sending++
	defer func() { r.sending-- }()
	err := workflow.SignalExternalWorkflow(ctx, r.o.Next, "", herald.SignalOrderingTurn, herald.OrderingTurn{From: r.self, Reason: reason}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Info("ordering: the successor is gone", "next", r.o.Next, "error", err)
	}
}

// orderingDeadLetter applies the endpoint's choice for a dead letter at the head of its key
// (mode, from the last attempt's settings): under OrderingSkip the turn goes on and the dead
// letter records it was passed; under OrderingBlock the key waits, and ordering.blocked says so.
func (d *delivery) orderingDeadLetter(ctx workflow.Context, mode string) {
	r := d.order
	if r == nil || r.o.Released {
		return
	}
	if mode == herald.OrderingSkip {
		d.status.Ordering.Passed = true
		d.releaseTurn(ctx, "dead letter, passed (skip)")
		d.memoOrdering(ctx)
		return
	}
	d.status.Ordering.Blocking = true
	d.memoOrdering(ctx)
	d.emitOps(ctx, herald.OpsOrderingBlocked, "key "+r.o.Key+" blocked by dead letter "+d.in.Event.ID)
}

// orderingReplayed notes that a blocking dead letter was replayed: it keeps its place, and
// leaves the blocked keys.
func (d *delivery) orderingReplayed(ctx workflow.Context) {
	if d.order != nil && d.status.Ordering.Blocking {
		d.status.Ordering.Blocking = false
		d.memoOrdering(ctx)
	}
}

// orderingSettle waits until every successor's signal has been answered, so that the run
// closes (or continues as new, carrying the successor) with none lost: a signal that comes
// as the run closes fails the close, and the task runs again with it.
func (d *delivery) orderingSettle(ctx workflow.Context) {
	r := d.order
	if r == nil {
		return
	}
	_ = workflow.Await(ctx, func() bool { return r.sending == 0 && r.next.Len() == 0 })
}
