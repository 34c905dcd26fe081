package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// OrderedResult compares ordered delivery per key with the same events unordered, in the
// same run: OrderedKeys keys × OrderedPerKey events over OrderedEndpoints endpoints.
type OrderedResult struct {
	Keys      int `json:"keys"`
	PerKey    int `json:"per_key"`
	Endpoints int `json:"endpoints"`
	Senders   int `json:"senders"`
	// Unordered and Ordered are the two phases: the same sends, round by round (event r of
	// every key, then event r+1), without and with their ordering keys.
	Unordered Phase `json:"unordered"`
	Ordered   Phase `json:"ordered"`
	// Ratio is Ordered's rate over Unordered's (target ≥ 0.7).
	Ratio float64 `json:"ratio"`
	// Sampled ordered deliveries' own history events per delivery, the sequencers' events
	// per delivery, and their sum.
	Sampled            int     `json:"sampled"`
	DeliveryEvents     float64 `json:"delivery_events"`
	SequencerEvents    float64 `json:"sequencer_events"`
	EventsPerDelivery  float64 `json:"events_per_delivery"`
	UnorderedEvents    float64 `json:"unordered_events"`
	OrderedOutOfOrder  int     `json:"out_of_order"`
	OrderedArrivalsSet int     `json:"arrivals"`
	// Burst is BurstSends sends of one key at once (Senders at a time): how long until
	// every send was accepted and every event delivered, and arrivals out of the order the
	// key's sequencer placed them in.
	BurstSends      int     `json:"burst_sends"`
	BurstAccepted   Seconds `json:"burst_accepted_seconds"`
	BurstDelivered  Seconds `json:"burst_delivered_seconds"`
	BurstOutOfOrder int     `json:"burst_out_of_order"`
	BurstError      string  `json:"burst_error,omitempty"`
	// The ordering floors (orderfloor.go), the same sends as engine workflows: with no
	// update, after an update to the key's own holder, after one to one of Shards holders
	// per endpoint, and batched to the endpoint's one holder; the holders' history events
	// per send.
	FloorEngine       Phase   `json:"floor_engine"`
	FloorPerKey       Phase   `json:"floor_per_key"`
	FloorShared       Phase   `json:"floor_shared"`
	FloorBatched      Phase   `json:"floor_batched"`
	FloorShards       int     `json:"floor_shards"`
	FloorPerKeyEvents float64 `json:"floor_per_key_events"`
	FloorSharedEvents float64 `json:"floor_shared_events"`
	// FloorBatchedEvents and FloorBatchedUpdates: the batched floor's holder events per
	// send, and how many updates carried its sends.
	FloorBatchedEvents  float64 `json:"floor_batched_events"`
	FloorBatchedUpdates int64   `json:"floor_batched_updates"`
	FloorError          string  `json:"floor_error,omitempty"`
}

// orderedBurst is how many sends of one key the ordered scenario sends at once.
const orderedBurst = 200

// orderedSample is how many ordered and unordered deliveries' histories are read back.
const orderedSample = 200

func (e *env) ordered(ctx context.Context) (*OrderedResult, error) {
	cfg := e.cfg
	res := &OrderedResult{Keys: cfg.OrderedKeys, PerKey: cfg.OrderedPerKey, Endpoints: cfg.OrderedEndpoints, Senders: cfg.Senders}
	eps := make([]string, cfg.OrderedEndpoints)
	for i := range eps {
		eps[i] = e.endpointID(fmt.Sprintf("ord-%d", i))
	}
	if err := e.putEndpoints(ctx, eps, noContent); err != nil {
		return nil, err
	}
	n := cfg.OrderedKeys * cfg.OrderedPerKey
	// Event i is event i/keys of key i%keys, to endpoint (i%keys)%endpoints.
	key := func(i int) string { return fmt.Sprintf("key-%d", i%cfg.OrderedKeys) }
	endpoint := func(i int) string { return eps[(i%cfg.OrderedKeys)%len(eps)] }
	closed := herald.Workflows(herald.DeliveryWorkflow).Closed().String()
	phase := func(ordered bool) (Phase, []string, error) {
		base := max(e.countVisible(ctx, closed), 0)
		cpu := startCPU()
		ids := newIDs(n)
		sentAt := make([]time.Time, n)
		for r := range cfg.OrderedPerKey {
			base := r * cfg.OrderedKeys
			at, failed, err := drive(ctx, cfg.OrderedKeys, cfg.Senders, 0, func(ctx context.Context, i int) error {
				ev := starter.Event{ID: ids[base+i], EndpointID: endpoint(base + i), Type: "bench.event", Data: benchData}
				if ordered {
					ev.OrderingKey = key(base + i)
				}
				_, err := e.starter.Send(ctx, ev)
				return err
			})
			if failed > 0 {
				return Phase{}, nil, fmt.Errorf("round %d: %d of %d sends failed, first: %w", r, failed, cfg.OrderedKeys, err)
			}
			copy(sentAt[base:], at)
		}
		if !waitUntil(ctx, arrivalTimeout(n), func() bool { return e.rcv.allSeen(ids, 1) }) {
			e.progress("ordered: not every event arrived in time")
		}
		arrived := e.rcv.firstSeen(ids)
		if ordered {
			res.OrderedArrivalsSet = countSet(arrived)
			for i := cfg.OrderedKeys; i < n; i++ {
				if a, b := arrived[i-cfg.OrderedKeys], arrived[i]; !a.IsZero() && !b.IsZero() && b.Before(a) {
					res.OrderedOutOfOrder++
				}
			}
		}
		p := phaseOf(sentAt, arrived)
		// The process's CPU until the phase's deliveries are closed in visibility (the
		// sequencers stay open, idle): the ordering's cost per delivery, sequencers included.
		var settled bool
		if p.CPUms, settled = cpu.perWorkflow(ctx, e, closed, base+int64(n), n); !settled {
			e.progress("ordered: not every delivery was closed in the visibility store in time; its CPU figure is low")
		}
		return p, ids, nil
	}
	e.progress("ordered: unordered, %d keys × %d events over %d endpoints, %d senders", cfg.OrderedKeys, cfg.OrderedPerKey, len(eps), cfg.Senders)
	var err error
	var plain, ids []string
	if res.Unordered, plain, err = phase(false); err != nil {
		return nil, err
	}
	e.progress("ordered: ordered, the same with their keys")
	if res.Ordered, ids, err = phase(true); err != nil {
		return nil, err
	}
	res.Ratio = ratio(res.Ordered.PerSecond, res.Unordered.PerSecond)

	// History events: a sample of each phase's deliveries, and every sequencer (each
	// shared by its key's PerKey deliveries).
	step := max(1, n/orderedSample)
	var own, unord, seq int
	for i := 0; i < n; i += step {
		ev, _, err := e.history(ctx, herald.DeliveryID(herald.DefaultTenant, ids[i]))
		if err != nil {
			return nil, err
		}
		uv, _, err := e.history(ctx, herald.DeliveryID(herald.DefaultTenant, plain[i]))
		if err != nil {
			return nil, err
		}
		own, unord = own+ev, unord+uv
		res.Sampled++
	}
	keysSampled := 0
	for k := 0; k < cfg.OrderedKeys; k += max(1, cfg.OrderedKeys/orderedSample) {
		ev, _, err := e.history(ctx, herald.SequencerWorkflowID(herald.DefaultTenant, endpoint(k), key(k)))
		if err != nil {
			return nil, err
		}
		seq += ev
		keysSampled++
	}
	if res.Sampled > 0 && keysSampled > 0 {
		res.DeliveryEvents = float64(own) / float64(res.Sampled)
		res.UnorderedEvents = float64(unord) / float64(res.Sampled)
		res.SequencerEvents = float64(seq) / float64(keysSampled*cfg.OrderedPerKey)
		res.EventsPerDelivery = res.DeliveryEvents + res.SequencerEvents
	}
	e.progress("ordered: the engine's floors: the same sends as engine workflows, with no update, one to the key's workflow, one to a workflow shared by keys, batched ones to the endpoint's workflow")
	if err := e.orderFloors(ctx, res, eps); err != nil {
		res.FloorError = err.Error()
	}
	e.progress("ordered: %d sends of one key at once", orderedBurst)
	if err := e.orderedBurst(ctx, eps[0], res); err != nil {
		res.BurstError = err.Error()
	}
	return res, ctx.Err()
}

// orderedBurst sends orderedBurst events of one key to endpoint at once and fills res's
// Burst figures.
func (e *env) orderedBurst(ctx context.Context, endpoint string, res *OrderedResult) error {
	ids := newIDs(orderedBurst)
	res.BurstSends = len(ids)
	t0 := time.Now()
	_, failed, err := drive(ctx, len(ids), e.cfg.Senders, 0, func(ctx context.Context, i int) error {
		_, err := e.starter.Send(ctx, starter.Event{ID: ids[i], EndpointID: endpoint, Type: "bench.event", Data: benchData, OrderingKey: "burst"})
		return err
	})
	if failed > 0 {
		return fmt.Errorf("%d of %d sends failed, first: %w", failed, len(ids), err)
	}
	res.BurstAccepted = secs(time.Since(t0))
	if !waitUntil(ctx, arrivalTimeout(len(ids)), func() bool { return e.rcv.allSeen(ids, 1) }) {
		return fmt.Errorf("not every event arrived in time")
	}
	arrived := e.rcv.firstSeen(ids)
	res.BurstDelivered = secs(latest(arrived).Sub(t0))
	// Arrivals in the sequencer's order: sort by arrival, compare the places.
	seq := make([]int64, len(ids))
	for i, id := range ids {
		qctx, cancel := context.WithTimeout(ctx, statusTimeout)
		st, err := e.starter.Status(qctx, starter.Ref{EventID: id})
		cancel()
		if err != nil || st.Ordering == nil {
			return fmt.Errorf("status of %s: %v", id, err)
		}
		seq[i] = st.Ordering.Seq
	}
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return arrived[a].Compare(arrived[b]) })
	for k := 1; k < len(order); k++ {
		if seq[order[k]] < seq[order[k-1]] {
			res.BurstOutOfOrder++
		}
	}
	return nil
}

func orderedRows(o *OrderedResult) []Row {
	s := Ordered
	share := o.EventsPerDelivery - o.UnorderedEvents
	rows := []Row{
		phaseRow(s, fmt.Sprintf("unordered: %d keys × %d events over %d endpoints, sent without their keys", o.Keys, o.PerKey, o.Endpoints), o.Unordered),
		phaseRow(s, "ordered: the same with their keys", o.Ordered),
		{s, "ordered vs unordered throughput", fmt.Sprintf("%.2f×", o.Ratio), "≥ 0.7×", verdict(o.Ratio >= 0.7)},
		{s, "CPU per delivery, ordered ÷ unordered (process, until visibility shows them closed)", cpuRatio(o.Ordered.CPUms, o.Unordered.CPUms), "", ""},
		{s, fmt.Sprintf("history events per ordered delivery (%d sampled; its own + its key's sequencer's share)", o.Sampled),
			fmt.Sprintf("%.1f (%.1f + %.1f); unordered %.1f, so ordering's share %.1f", o.EventsPerDelivery, o.DeliveryEvents, o.SequencerEvents, o.UnorderedEvents, share),
			fmt.Sprintf("≤ 8 + ordering's share (%.1f)", share), verdict(o.UnorderedEvents <= 8)},
		{s, "arrivals out of send order within a key", fmt.Sprintf("%d (%d arrived)", o.OrderedOutOfOrder, o.OrderedArrivalsSet), "0", verdict(o.OrderedOutOfOrder == 0)},
	}
	rows = append(rows, floorRows(o)...)
	if o.BurstError != "" {
		return append(rows, Row{s, fmt.Sprintf("%d sends of one key at once", o.BurstSends), o.BurstError, "", verdict(false)})
	}
	return append(rows,
		Row{s, fmt.Sprintf("%d sends of one key at once: all accepted; all delivered", o.BurstSends),
			fmt.Sprintf("%.1fs; %.1fs", float64(o.BurstAccepted), float64(o.BurstDelivered)), "", ""},
		Row{s, "the burst's arrivals out of the key's order", fmt.Sprintf("%d", o.BurstOutOfOrder), "0", verdict(o.BurstOutOfOrder == 0)},
	)
}

// cpuRatio says a ÷ b, CPU milliseconds per delivery, with both; "-" when either is unknown.
func cpuRatio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×  (%.1f ms of %.1f ms)", ratio(a, b), a, b)
}

// orderFloors runs the four ordering floors into res.
func (e *env) orderFloors(ctx context.Context, res *OrderedResult, eps []string) error {
	var err error
	res.FloorShards = orderFloorShards
	if res.FloorEngine, _, _, err = e.orderFloorPhase(ctx, floorNone, res.Keys, res.PerKey, eps); err != nil {
		return err
	}
	if res.FloorPerKey, res.FloorPerKeyEvents, _, err = e.orderFloorPhase(ctx, floorPerKey, res.Keys, res.PerKey, eps); err != nil {
		return err
	}
	if res.FloorShared, res.FloorSharedEvents, _, err = e.orderFloorPhase(ctx, floorShared, res.Keys, res.PerKey, eps); err != nil {
		return err
	}
	res.FloorBatched, res.FloorBatchedEvents, res.FloorBatchedUpdates, err = e.orderFloorPhase(ctx, floorBatched, res.Keys, res.PerKey, eps)
	return err
}

// floorRows are the ordering floors' rows.
func floorRows(o *OrderedResult) []Row {
	s := Ordered
	if o.FloorError != "" {
		return []Row{{s, "the engine's ordering floors", o.FloorError, "", verdict(false)}}
	}
	return []Row{
		phaseRow(s, "engine floor: the same sends as engine workflows (eager, one local activity)", o.FloorEngine),
		phaseRow(s, "engine floor, per key: each after an update to its key's workflow", o.FloorPerKey),
		phaseRow(s, fmt.Sprintf("engine floor, shared: each after an update to one of %d workflows per endpoint", o.FloorShards), o.FloorShared),
		phaseRow(s, "engine floor, batched: one workflow per endpoint, the appends sent while its update is in flight go as one update", o.FloorBatched),
		{s, "engine floor ÷ engine: per key; shared; batched (what 0.7× asks of a design that orders through a workflow)",
			fmt.Sprintf("%.2f×; %.2f×; %.2f×", ratio(o.FloorPerKey.PerSecond, o.FloorEngine.PerSecond), ratio(o.FloorShared.PerSecond, o.FloorEngine.PerSecond),
				ratio(o.FloorBatched.PerSecond, o.FloorEngine.PerSecond)), "", ""},
		{s, "engine floor, history events of the key's workflows per send: per key; shared; batched",
			fmt.Sprintf("%.1f; %.1f; %.1f (%d updates for %d sends)", o.FloorPerKeyEvents, o.FloorSharedEvents, o.FloorBatchedEvents, o.FloorBatchedUpdates, o.FloorBatched.Events), "", ""},
	}
}
