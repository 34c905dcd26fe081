package bench

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
)

// The ordering floors: what the engine itself does when each send first makes one update
// to a workflow that serialises its key, with nothing of Herald's. The ordered scenario
// runs them after Herald's phases, with the same sends round by round:
//
//   - none: the engine limit (one eager workflow per send, one local activity);
//   - per key: an update-with-start to its key's holder first (Herald's design: a sequencer
//     per key), answered with the key's previous send;
//   - shared: the same update to one of orderFloorShards holders per endpoint, each holding
//     the keys that hash to it, so that one workflow task can answer the appends of many
//     keys;
//   - batched: one holder per endpoint, and the sending process sends the appends to it
//     that arrive while its previous update is in flight as one update (group commit), so
//     that one update carries many sends.
//
// A design whose every ordered send costs an update cannot beat its floor.
const (
	orderFloorQueue    = "bench-order-floor"
	orderFloorHolder   = "BenchOrderFloorHolder"
	orderFloorDelivery = "BenchOrderFloorDelivery"
	orderFloorAppends  = "appends"
	// orderFloorShards is how many holders per endpoint the shared floor uses; the batched
	// floor uses one, so that sends to an endpoint meet in its update.
	orderFloorShards = 4
	// orderFloorIdle is how long a holder waits with no append before it closes.
	orderFloorIdle = 10 * time.Second
)

// orderAppend is one send's append: its key and id. An update carries one or more.
type orderAppend struct {
	Key string `json:"key"`
	ID  string `json:"id"`
}

// orderFloorHolderWorkflow holds the newest id appended for each key it is given and
// answers each append with the key's previous id; it closes after orderFloorIdle with no
// append. One timer per idle period, as Herald's sequencer. Its keys are the bench's (at
// most --ordered-keys): a floor, not a design with bounded state.
func orderFloorHolderWorkflow(ctx workflow.Context) error {
	tails := map[string]string{}
	appends := 0
	if err := workflow.SetUpdateHandler(ctx, orderFloorAppends, func(_ workflow.Context, as []orderAppend) ([]string, error) {
		prev := make([]string, len(as))
		for i, a := range as {
			prev[i] = tails[a.Key]
			tails[a.Key] = a.ID
		}
		appends += len(as)
		return prev, nil
	}); err != nil {
		return err
	}
	for {
		seen := appends
		if err := workflow.Sleep(ctx, orderFloorIdle); err != nil {
			return err
		}
		if appends == seen && workflow.AllHandlersFinished(ctx) {
			return nil
		}
	}
}

// floorMode is how an ordering floor's send serialises its key.
type floorMode int

const (
	floorNone    floorMode = iota // no update: the engine limit
	floorPerKey                   // an update to the key's own holder
	floorShared                   // an update to one of orderFloorShards holders per endpoint
	floorBatched                  // an update to the endpoint's one holder, the appends that meet batched in the process
)

// groupAppender sends the appends to one holder that come while its update is in flight
// as one update, when that one is answered (group commit): no wait added, one update for
// many sends under load.
type groupAppender struct {
	// send makes one update of as to holder (sendTo, or a test's).
	send    func(holder string, as []orderAppend) error
	mu      sync.Mutex
	holders map[string]*appendQueue
	updates atomic.Int64
}

// appendQueue is one holder's appends waiting for the update in flight; it exists while
// its flush runs.
type appendQueue struct {
	queue []pendingAppend
}

type pendingAppend struct {
	a    orderAppend
	done chan error
}

// append appends a to holder (started if need be) and returns once an update carried it.
func (g *groupAppender) append(ctx context.Context, holder string, a orderAppend) error {
	p := pendingAppend{a: a, done: make(chan error, 1)}
	g.mu.Lock()
	q := g.holders[holder]
	if q == nil {
		q = &appendQueue{}
		g.holders[holder] = q
		go g.flush(holder, q)
	}
	q.queue = append(q.queue, p)
	g.mu.Unlock()
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush sends q's appends, all that wait at once, until none wait.
func (g *groupAppender) flush(holder string, q *appendQueue) {
	for {
		g.mu.Lock()
		batch := q.queue
		q.queue = nil
		if len(batch) == 0 {
			// Nothing waits: the holder's entry goes (the map holds holders with appends
			// under way only), and the next append starts a flush of its own.
			delete(g.holders, holder)
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		as := make([]orderAppend, len(batch))
		for i, p := range batch {
			as[i] = p.a
		}
		g.updates.Add(1)
		err := g.send(holder, as)
		for _, p := range batch {
			p.done <- err
		}
	}
}

// newGroupAppender is a groupAppender whose updates go through c.
func newGroupAppender(c client.Client) *groupAppender {
	return &groupAppender{holders: map[string]*appendQueue{}, send: func(holder string, as []orderAppend) error {
		// Its own deadline: the batch is every waiting sender's, not one's.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return sendTo(ctx, c, holder, as)
	}}
}

// sendTo makes one update of as to holder, started if need be.
func sendTo(ctx context.Context, c client.Client, holder string, as []orderAppend) error {
	op := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: holder, TaskQueue: orderFloorQueue, WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, orderFloorHolder)
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateName: orderFloorAppends, Args: []any{as}, WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return err
	}
	var prev []string
	return h.Get(ctx, &prev)
}

// orderFloorPhase sends the ordered scenario's sends (rounds of keys, keys over eps) as
// engine workflows, each after the update mode asks for: the rate from first send to last
// local activity, the CPU per send, and the holders' history events per send (sampled for
// floorPerKey).
//
// For floorBatched, updates is how many updates carried the n sends.
func (e *env) orderFloorPhase(ctx context.Context, mode floorMode, keys, perKey int, eps []string) (p Phase, events float64, updates int64, err error) {
	f := &effects{at: map[string]time.Time{}}
	w := sdkworker.New(e.client, orderFloorQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(orderFloorHolderWorkflow, workflow.RegisterOptions{Name: orderFloorHolder})
	w.RegisterWorkflowWithOptions(engine, workflow.RegisterOptions{Name: orderFloorDelivery})
	w.RegisterActivityWithOptions(f.noop, activity.RegisterOptions{Name: noopActivity})
	if err := w.Start(); err != nil {
		return Phase{}, 0, 0, fmt.Errorf("start the ordering floor's worker: %w", err)
	}
	defer w.Stop()
	run := newIDs(1)[0] // the phase's holders are its own
	holder := func(i int) string {
		k, ep := i%keys, eps[(i%keys)%len(eps)]
		switch mode {
		case floorPerKey:
			return fmt.Sprintf("floor:%s:%s:key-%d", run, ep, k)
		case floorBatched:
			return fmt.Sprintf("floor:%s:%s", run, ep)
		}
		h := fnv.New32a()
		fmt.Fprintf(h, "key-%d", k)
		return fmt.Sprintf("floor:%s:%s:%d", run, ep, h.Sum32()%orderFloorShards)
	}
	g := newGroupAppender(e.client)
	n := keys * perKey
	ids := newIDs(n)
	sentAt := make([]time.Time, n)
	closed := herald.Workflows(orderFloorDelivery).Closed().String()
	base := max(e.countVisible(ctx, closed), 0)
	cpu := startCPU()
	for r := range perKey {
		first := r * keys
		at, failed, err := drive(ctx, keys, e.cfg.Senders, 0, func(ctx context.Context, i int) error {
			i += first
			a := orderAppend{Key: fmt.Sprint(i % keys), ID: ids[i]}
			var err error
			switch mode {
			case floorBatched:
				err = g.append(ctx, holder(i), a)
			case floorPerKey, floorShared:
				err = sendTo(ctx, e.client, holder(i), []orderAppend{a})
			}
			if err != nil {
				return err
			}
			_, err = e.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "bench:" + ids[i], TaskQueue: orderFloorQueue, EnableEagerStart: true},
				orderFloorDelivery, baselineInput{ID: ids[i], Data: benchData})
			return err
		})
		if failed > 0 {
			return Phase{}, 0, 0, fmt.Errorf("ordering floor, round %d: %d of %d sends failed, first: %w", r, failed, keys, err)
		}
		copy(sentAt[first:], at)
	}
	if !waitUntil(ctx, arrivalTimeout(n), func() bool { return f.count() >= n }) {
		e.progress("ordered: not every ordering floor workflow ran in time")
	}
	p = phaseOf(sentAt, f.seen(ids))
	if p.CPUms, _ = cpu.perWorkflow(ctx, e, closed, base+int64(n), n); p.CPUms <= 0 {
		e.progress("ordered: an ordering floor's CPU figure is missing")
	}
	if mode == floorNone {
		return p, 0, 0, nil
	}
	// The holders' events per send: every holder of the shared floor, a sample of the
	// per-key ones (each holds perKey sends).
	seen := map[string]bool{}
	total, sends := 0, 0
	step := 1
	if mode == floorPerKey {
		step = max(1, keys/orderedSample)
	}
	for k := 0; k < keys; k += step {
		id := holder(k)
		if seen[id] {
			continue
		}
		seen[id] = true
		ev, _, err := e.history(ctx, id)
		if err != nil {
			return Phase{}, 0, 0, err
		}
		total += ev
		if mode == floorPerKey {
			sends += perKey
		}
	}
	if mode != floorPerKey {
		sends = n
	}
	return p, ratio(float64(total), float64(sends)), g.updates.Load(), nil
}
