package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
)

// Ordered delivery per key (herald/ordering.go says what it promises).
//
// The sequencer of a key holds two workflow ids, the key's tail and the tail's
// predecessor, whatever the number of events: UpdateOrderingAppend makes the caller the
// new tail and answers the old one. The starter appends before it starts the delivery, so
// the order is the order sends were accepted. Since versionOrderingPlaced the sequencer
// looks where the old tail is first (sequencerPlacing): closed, the new one starts with its
// turn; never started, the new one goes after the old tail's predecessor. A delivery with
// a predecessor still running then signals
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

// sequencerChainMax bounds a sequencer's chain (herald.SequencerInput.Chain): appends
// that find it full wait, a second at a time, until the sends before them have started
// their deliveries. A variable for the tests only.
var sequencerChainMax = 64

// sequencerStartGrace: a tail not found as the next delivery is appended may still be
// starting (its send appended it and is starting it); the sequencer looks again, once a
// second, until this long after its append, and then takes it for a send that failed.
const sequencerStartGrace = 10 * time.Second

// SequencerWorkflow is the workflow of one ordering key (herald.SequencerWorkflowID). Its
// state is two workflow ids: bounded whatever the number of events in its key.
func SequencerWorkflow(ctx workflow.Context, in herald.SequencerInput) error {
	switch workflow.GetVersion(ctx, versionOrderingPlaced, workflow.DefaultVersion, orderingChainVersion) {
	case orderingChainVersion:
		return sequencerChained(ctx, in)
	case 1:
		return sequencerPlacing(ctx, in)
	}
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
		workflow.UpdateHandlerOptions{Validator: validateAppend})
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

// sequencerPlacing is SequencerWorkflow since versionOrderingPlaced. An append finds where
// the tail is (activities.Ops.Presence) before it answers: a closed tail makes the new one
// ready (its turn is there: it tells nobody it waits); a tail that was never started (its
// send failed after its append) is passed over, and the new one goes after the tail's own
// predecessor, so that no send that failed opens a gap in the key. Appends are placed one
// at a time. One timer per idle period, not one per append.
func sequencerPlacing(ctx workflow.Context, in herald.SequencerInput) error {
	appends := 0
	err := setAppendHandler(ctx, &appends,
		func(ctx workflow.Context, req herald.OrderingAppend) (herald.OrderingPlace, error) {
			if req.Delivery != in.Tail { // else the same delivery again (a retried call): the same place
				after, ready := in.Tail, in.Tail == ""
				if in.Tail != "" {
					switch tailPresence(ctx, in.Tail, in.TailAt) {
					case herald.PresenceClosed:
						ready = true
					case herald.PresenceMissing:
						// Its send failed: the new one takes its place, after its predecessor.
						workflow.GetLogger(ctx).Info("ordering: the tail was never started, passed over", "tail", in.Tail, "after", in.TailAfter)
						after, ready = in.TailAfter, in.TailAfter == ""
					}
				}
				in.TailAfter, in.Tail, in.TailAt, in.TailReady = after, req.Delivery, workflow.Now(ctx), ready
				in.Seq++
			}
			return herald.OrderingPlace{After: in.TailAfter, Seq: in.Seq, Ready: in.TailReady}, nil
		})
	if err != nil {
		return err
	}
	return sequencerLoop(ctx, in.Idle, &appends, func() herald.SequencerInput {
		return herald.SequencerInput{
			Tail: in.Tail, TailAfter: in.TailAfter, Seq: in.Seq, Idle: in.Idle, TailAt: in.TailAt, TailReady: in.TailReady,
		}
	}, func() bool {
		return in.Tail == "" || tailPresence(ctx, in.Tail, time.Time{}) != herald.PresenceRunning
	})
}

// sequencerChained is SequencerWorkflow since orderingChainVersion. An append is answered
// at once: its place names the newest delivery seen started (After) and, newest first, the
// ones appended since that were not (Starting), which the new delivery looks for itself. A
// delivery appended in the same workflow task is not looked for (its send has no answer
// yet); the others are, newest first, until one is found started (policy.ChainWalk). The
// state is the chain (at most sequencerChainMax) and its base: bounded whatever the
// number of events.
func sequencerChained(ctx workflow.Context, in herald.SequencerInput) error {
	if !in.Chained {
		// Continued from a run before orderingChainVersion: its tail is not known started.
		in.Chained, in.Base, in.Chain = true, in.TailAfter, nil
		if in.Tail != "" {
			in.Chain = []policy.ChainLink{{ID: in.Tail, At: in.TailAt, Seq: in.Seq}}
			in.Place = &herald.OrderingPlace{After: in.TailAfter, Seq: in.Seq, Ready: in.TailReady}
		}
		in.TailAfter, in.TailAt, in.TailReady = "", time.Time{}, false
	}
	appends := 0
	walk := func(ctx workflow.Context) policy.ChainPlace {
		p := policy.ChainWalk(in.Chain, in.Base, workflow.Now(ctx), sequencerStartGrace, func(id string) string {
			return presence(ctx, id)
		})
		in.Chain, in.Base = p.Starting, p.Base
		return p
	}
	err := setAppendHandler(ctx, &appends,
		func(ctx workflow.Context, req herald.OrderingAppend) (herald.OrderingPlace, error) {
			if req.Delivery == in.Tail && in.Place != nil {
				return *in.Place, nil // the same delivery again (a retried call): the same place
			}
			if i := slices.IndexFunc(in.Chain, func(l policy.ChainLink) bool { return l.ID == req.Delivery }); i >= 0 {
				// Appended before and not seen started: a retried call that another append
				// passed. Its place again (what came before it, as known now), not a second one
				// after the appends since, which would make them wait for each other.
				p := policy.ChainPlace{Base: in.Base, Starting: slices.Clone(in.Chain[i+1:])}
				return herald.OrderingPlace{After: p.Base, Seq: in.Chain[i].Seq, Ready: p.Ready(), Starting: p.Starting}, nil
			}
			p := walk(ctx)
			for len(in.Chain) >= sequencerChainMax {
				// Full: let this task's answers go, so that their sends start them.
				if err := workflow.Sleep(ctx, time.Second); err != nil {
					return herald.OrderingPlace{}, err
				}
				p = walk(ctx)
			}
			in.Seq++
			place := herald.OrderingPlace{After: p.Base, Seq: in.Seq, Ready: p.Ready(), Starting: p.Starting}
			in.Tail, in.Place = req.Delivery, &place
			in.Chain = append([]policy.ChainLink{{ID: req.Delivery, At: workflow.Now(ctx), Seq: in.Seq}}, in.Chain...)
			return place, nil
		})
	if err != nil {
		return err
	}
	return sequencerLoop(ctx, in.Idle, &appends, func() herald.SequencerInput {
		return herald.SequencerInput{Tail: in.Tail, Seq: in.Seq, Idle: in.Idle, Chained: true, Chain: in.Chain, Base: in.Base, Place: in.Place}
	}, func() bool {
		// Closed once nothing of the key is open or may still be starting.
		p := walk(ctx)
		return len(p.Starting) == 0 && (p.Base == "" || p.Closed || slices.Contains([]string{herald.PresenceClosed, herald.PresenceMissing}, presence(ctx, p.Base)))
	})
}

// setAppendHandler sets a sequencer's append handler to place, one append at a time (the
// next waits until the one before it is answered), counting them in appends.
func setAppendHandler(ctx workflow.Context, appends *int, place func(workflow.Context, herald.OrderingAppend) (herald.OrderingPlace, error)) error {
	mu := workflow.NewMutex(ctx)
	return workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateOrderingAppend,
		func(ctx workflow.Context, req herald.OrderingAppend) (herald.OrderingPlace, error) {
			*appends++
			if err := mu.Lock(ctx); err != nil {
				return herald.OrderingPlace{}, err
			}
			defer mu.Unlock()
			return place(ctx, req)
		},
		workflow.UpdateHandlerOptions{Validator: validateAppend})
}

// sequencerLoop is a sequencer's life after its append handler is set: it continues as new
// (with the input next gives) after sequencerAppendsPerRun appends, and closes once an idle
// period passes with no append and closable finds nothing of the key open (the next append
// then starts a new run with no tail). One timer per idle period.
func sequencerLoop(ctx workflow.Context, idle time.Duration, appends *int, next func() herald.SequencerInput, closable func() bool) error {
	if idle <= 0 {
		idle = sequencerIdle
	}
	for {
		seen := *appends
		if _, err := workflow.AwaitWithTimeout(ctx, idle, func() bool { return *appends >= sequencerAppendsPerRun }); err != nil {
			return err
		}
		if *appends >= sequencerAppendsPerRun {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, herald.SequencerWorkflow, next())
		}
		if *appends != seen || !workflow.AllHandlersFinished(ctx) {
			continue // not idle
		}
		if closable() && *appends == seen && workflow.AllHandlersFinished(ctx) {
			return nil
		}
	}
}

// presence asks where workflow id is (herald.PresenceRunning, PresenceClosed or
// PresenceMissing), or policy.LinkUnknown when the question cannot be answered.
func presence(ctx workflow.Context, id string) string {
	var ops *activities.Ops
	opts := opsOptions
	opts.Summary = "where is " + herald.OrderingEventID(id) + "?"
	var p string
	if err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), ops.Presence, id).Get(ctx, &p); err != nil {
		workflow.GetLogger(ctx).Warn("ordering: cannot tell where a delivery is", "delivery", id, "error", err)
		return policy.LinkUnknown
	}
	return p
}

// tailPresence asks where the tail is (herald.PresenceRunning, PresenceClosed or
// PresenceMissing). A tail not found before sequencerStartGrace has passed since
// appendedAt is looked for again each second: its send may still be starting it. When the
// question cannot be answered, the tail counts as running: the next delivery asks it
// itself.
func tailPresence(ctx workflow.Context, tail string, appendedAt time.Time) string {
	var ops *activities.Ops
	opts := opsOptions
	opts.Summary = "where is the tail?"
	for {
		var p string
		if err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), ops.Presence, tail).Get(ctx, &p); err != nil {
			workflow.GetLogger(ctx).Warn("ordering: cannot tell where the tail is", "tail", tail, "error", err)
			return herald.PresenceRunning
		}
		if p != herald.PresenceMissing || workflow.Now(ctx).Sub(appendedAt) >= sequencerStartGrace {
			return p
		}
		if err := workflow.Sleep(ctx, time.Second); err != nil {
			return herald.PresenceRunning
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
	// local is set since versionOrderingPlaced: the ordering signals go from local
	// activities (activities.Ops.SignalOrdering), in the task that decides them, not as
	// SignalExternalWorkflow commands whose result takes another workflow task.
	local bool
	// asked is set once versionOrderingPlaced was asked (isLocal); chain is set when it
	// answered orderingChainVersion (followStarting).
	asked bool
	chain bool
}

// startOrdering sets up an ordered delivery's part: the status's key, and the goroutine that
// takes its successor's signal, answering it at once once the turn has gone.
func (d *delivery) startOrdering(ctx workflow.Context) {
	if d.in.Ordering == nil {
		return
	}
	// No version is asked here: versionOrderingPlaced is asked where the commands start to
	// differ (isLocal), so a delivery that signals nobody (its turn there as it starts, no
	// successor) records no marker. The versionOrdering marker that runs before it recorded
	// here is skipped by the SDK's replay check, and the code before it did not branch on it.
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
			if r.isLocal(ctx) && r.o.Next != "" && r.o.Next != next {
				// A second successor (two sends at once): it gets the turn too.
				if !slices.Contains(r.o.Also, next) {
					r.o.Also = append(r.o.Also, next)
				}
			} else {
				r.o.Next = next
			}
			if r.o.Released {
				r.sendTurn(ctx, next, "its turn had ended")
			}
		}
	})
}

// followStarting looks for the delivery's predecessor among those its sequencer had not
// seen started (herald.Ordering.Starting, newest first): it tells the first it finds
// running that it waits (policy.FateWait, r.o.After set to it), has its turn at one it
// finds closed (policy.FateTurn), looks again a second later for one that may still be
// starting, and passes over one still missing after sequencerStartGrace. Past them all
// (policy.FatePassed) the delivery goes after r.o.After, the newest its sequencer saw
// started, as any other.
func (d *delivery) followStarting(ctx workflow.Context) policy.LinkFate {
	r := d.order
	var ops *activities.Ops
	for _, l := range r.o.Starting {
		opts := opsOptions
		opts.Summary = "follow " + herald.OrderingEventID(l.ID)
		for {
			p := policy.LinkUnknown
			s := herald.OrderingSignal{To: l.ID, Name: herald.SignalOrderingNext, Next: r.self}
			if err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), ops.Follow, s).Get(ctx, &p); err != nil {
				workflow.GetLogger(ctx).Warn("ordering: cannot tell where the delivery before is", "before", l.ID, "error", err)
			}
			fate := policy.JudgeLink(p, l.At, workflow.Now(ctx), sequencerStartGrace)
			switch fate {
			case policy.FateWait, policy.FateTurn:
				if fate == policy.FateWait {
					r.o.After = l.ID
				}
				r.o.Starting = nil
				return fate
			case policy.FatePassed:
				workflow.GetLogger(ctx).Info("ordering: the delivery before was never started, passed over", "before", l.ID)
			case policy.FateStarting:
				d.status.Ordering.WaitingFor = herald.OrderingEventID(l.ID)
				if err := workflow.Sleep(ctx, time.Second); err != nil {
					return policy.FatePassed // cancelled: the run ends
				}
				continue
			}
			break
		}
	}
	r.o.Starting = nil
	return policy.FatePassed
}

// isLocal asks versionOrderingPlaced, once, where the ordering commands start to differ:
// the first ordering signal the run sends, or the first successor that says it waits.
func (r *orderingRun) isLocal(ctx workflow.Context) bool {
	if !r.asked {
		r.asked = true
		v := workflow.GetVersion(ctx, versionOrderingPlaced, workflow.DefaultVersion, orderingChainVersion)
		r.local, r.chain = v >= 1, v >= orderingChainVersion
	}
	return r.local
}

// signalLocal sends s from a local activity and reports whether its target is running. It
// tries again, a minute apart, until the server answers: a turn or a successor must not be
// lost to an outage.
func (r *orderingRun) signalLocal(ctx workflow.Context, s herald.OrderingSignal) bool {
	var ops *activities.Ops
	opts := opsOptions
	opts.Summary = s.Name + " → " + herald.OrderingEventID(s.To)
	for {
		var running bool
		err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), ops.SignalOrdering, s).Get(ctx, &running)
		if err == nil {
			return running
		}
		workflow.GetLogger(ctx).Warn("ordering: signal not sent, again in a minute", "signal", s.Name, "to", s.To, "error", err)
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return false
		}
	}
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
	followed := false
	if len(r.o.Starting) > 0 && r.isLocal(ctx) && r.chain {
		switch d.followStarting(ctx) {
		case policy.FateTurn:
			r.o.Turn = true
			return false
		case policy.FateWait:
			followed = true
		}
	}
	if r.o.After == "" && !followed {
		r.o.Turn = true
		return false
	}
	if !followed && !d.tellPredecessor(ctx) {
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

// tellPredecessor tells the delivery before this one (r.o.After, seen started by the
// sequencer) that this one waits, and reports whether it is running; a closed one's turn is
// over.
func (d *delivery) tellPredecessor(ctx workflow.Context) bool {
	r := d.order
	if r.isLocal(ctx) {
		if !r.signalLocal(ctx, herald.OrderingSignal{To: r.o.After, Name: herald.SignalOrderingNext, Next: r.self}) {
			// The predecessor is closed (the sequencer checked it was started): its turn is over.
			workflow.GetLogger(ctx).Info("ordering: the predecessor is closed, the turn is ours", "after", r.o.After)
			return false
		}
	} else if err := workflow.SignalExternalWorkflow(ctx, r.o.After, "", herald.SignalOrderingNext, r.self).Get(ctx, nil); err != nil {
		// The predecessor is closed (or was never started: its send failed): its turn is over.
		workflow.GetLogger(ctx).Info("ordering: the predecessor is closed, the turn is ours", "after", r.o.After, "error", err)
		return false
	}
	return true
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
		r.sendTurn(ctx, r.o.Next, reason)
	}
	for _, next := range r.o.Also {
		r.sendTurn(ctx, next, reason)
	}
}

// sendTurn signals successor next its turn. A successor that is gone needs none.
func (r *orderingRun) sendTurn(ctx workflow.Context, next, reason string) {
	r.sending++
	defer func() { r.sending-- }()
	turn := herald.OrderingTurn{From: r.self, Reason: reason}
	if r.isLocal(ctx) {
		if !r.signalLocal(ctx, herald.OrderingSignal{To: next, Name: herald.SignalOrderingTurn, Turn: turn}) {
			workflow.GetLogger(ctx).Info("ordering: the successor is gone", "next", next)
		}
		return
	}
	err := workflow.SignalExternalWorkflow(ctx, next, "", herald.SignalOrderingTurn, turn).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Info("ordering: the successor is gone", "next", next, "error", err)
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

// validateAppend refuses an append that does not name a delivery's workflow id. Appends
// accepted while a run waits to continue as new still count: the new run starts from the
// tail they leave (2,000 updates per run leave room).
func validateAppend(_ workflow.Context, req herald.OrderingAppend) error {
	if _, _, ok := herald.ParseDeliveryID(req.Delivery); !ok {
		return fmt.Errorf("append: %q is not a delivery's workflow id", req.Delivery)
	}
	return nil
}
