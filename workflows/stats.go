package workflows

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
)

// Limits of a stats shard run.
const (
	// statsContinueAsNewEvents: past this many history events a stats shard continues as new.
	statsContinueAsNewEvents = 2000
	// statsSpillBatch is how many spill signals a shard sends at once: it waits for them
	// to be delivered before the next ones, so that one workflow task issues at most this
	// many commands.
	statsSpillBatch = 25
	// statsSpillHistoryLimit: past this many history events a spill stops at a batch's
	// end and the run continues as new first. Only a shard that starts with the state of a
	// 0.1.0 shard (every endpoint it ever counted) spills that far in one go.
	statsSpillHistoryLimit = 20000
)

// StatsWorkflow keeps the attempt counts of the endpoints of one shard: it adds the counts
// workers send and answers queries for them. It holds at most its budget of encoded
// entries (herald.StatsBudget bytes) and, if its input sets one, its capacity of
// endpoints: past either, it hands the counts of the endpoints it heard from least
// recently to their endpoint workflows (herald.SignalCounts) and forgets them, so that an
// endpoint's counters are its workflow's own plus its shard's entry.
func StatsWorkflow(ctx workflow.Context, in herald.StatsInput) error {
	v := workflow.GetVersion(ctx, versionStatsSpill, workflow.DefaultVersion, 2)
	if v == workflow.DefaultVersion {
		return statsBeforeSpill(ctx, in)
	}
	s := newStatsShard(in, workflow.Now(ctx).UnixNano(), v >= 2)
	if err := workflow.SetQueryHandler(ctx, herald.QueryStats, func(ids []string) ([]herald.EndpointCounts, error) {
		return s.counts(ids), nil
	}); err != nil {
		return err
	}
	add := workflow.GetSignalChannel(ctx, herald.SignalStats)
	for {
		if s.over() {
			s.spill(ctx)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if add.Len() == 0 && historyLong(ctx, statsContinueAsNewEvents) {
			return workflow.NewContinueAsNewError(ctx, herald.StatsWorkflow, s.input())
		}
		var batch []herald.EndpointCounts
		add.Receive(ctx, &batch)
		s.add(batch)
	}
}

// statsShard is a stats shard's state: its entries sorted by endpoint, and the spill in
// flight.
type statsShard struct {
	// capacity is the most entries the shard holds (0: no count, only the budget); budget
	// the most bytes their encoding takes (0: no budget, only the count: versionStatsSpill
	// 1); size what it takes now (encodedSize).
	capacity, budget, size int
	entries                []herald.StatsEntry
	// spilling are the entries of the spill in flight, in the order they are sent, each
	// with the spill's number: answers still show them until they are delivered.
	spilling []herald.EndpointCounts
	// clock counts the batches received; next numbers the next spill.
	clock, next int64
}

// newStatsShard is the shard that in starts, at now (Unix nanoseconds): spill numbers
// start at now at the latest, so that they keep increasing if a shard is ever started
// again from nothing. A shard of versionStatsSpill 1 (budgeted false) holds a count of
// entries (0: herald.StatsCapacity) and no budget; one of version 2 holds its budget (0:
// herald.StatsBudget) and, if in sets one, a count.
func newStatsShard(in herald.StatsInput, now int64, budgeted bool) *statsShard {
	s := &statsShard{capacity: in.Capacity, entries: in.Entries, clock: in.Clock, next: max(in.NextSpill, now)}
	switch {
	case !budgeted && s.capacity <= 0:
		s.capacity = herald.StatsCapacity
	case budgeted:
		s.capacity = max(s.capacity, 0)
		s.budget = in.Budget
		if s.budget <= 0 {
			s.budget = herald.StatsBudget
		}
	}
	s.resize()
	// A 0.1.0 shard's state: every endpoint, touched at once (spilled in id order).
	for _, c := range in.Counts {
		s.merge(c)
	}
	return s
}

// find is where endpoint id's entry is, or would be.
func (s *statsShard) find(id string) (int, bool) {
	return slices.BinarySearchFunc(s.entries, id, func(e herald.StatsEntry, id string) int { return strings.Compare(e.Endpoint, id) })
}

// add merges a batch of counts, all touched at the same tick of the clock.
func (s *statsShard) add(batch []herald.EndpointCounts) {
	s.clock++
	for _, c := range batch {
		s.merge(c)
	}
}

// merge adds c to its endpoint's entry, touched now.
func (s *statsShard) merge(c herald.EndpointCounts) {
	i, ok := s.find(c.Endpoint)
	if ok {
		s.size -= encodedSize(s.entries[i])
	} else {
		s.entries = slices.Insert(s.entries, i, herald.StatsEntry{Endpoint: c.Endpoint})
	}
	r := s.entries[i].Report()
	r.Merge(c.Counts)
	r.TrimOutcome(herald.MaxStatsOutcome)
	s.entries[i] = herald.NewStatsEntry(c.Endpoint, r, s.clock)
	s.size += encodedSize(s.entries[i])
}

// encodedSize is how many bytes e takes in a shard's input: its JSON and a comma.
func encodedSize(e herald.StatsEntry) int {
	b, _ := json.Marshal(e) // strings and integers: it always encodes
	return len(b) + 1
}

// resize measures the entries again.
func (s *statsShard) resize() {
	s.size = 0
	for _, e := range s.entries {
		s.size += encodedSize(e)
	}
}

// over reports whether the shard holds more endpoints than its capacity, or more bytes
// than its budget.
func (s *statsShard) over() bool {
	return (s.capacity > 0 && len(s.entries) > s.capacity) || (s.budget > 0 && s.size > s.budget)
}

// full reports whether n entries of size bytes are more than a spill leaves: three
// quarters of the capacity and of the budget, so that a shard past either spills a batch
// at a time, not one endpoint per message.
func (s *statsShard) full(n, size int) bool {
	return (s.capacity > 0 && n > s.capacity-max(s.capacity/4, 1)) || (s.budget > 0 && size > s.budget-s.budget/4)
}

// spill hands the least recently touched entries, until what is left is not full, to
// their endpoint workflows, statsSpillBatch signals at a time, and forgets them. An endpoint that is
// gone (its workflow closed or never started) loses the counts it had here. A spill
// stops at a batch's end once the history is past statsSpillHistoryLimit, putting back
// what it has not sent.
func (s *statsShard) spill(ctx workflow.Context) {
	order := make([]int, len(s.entries))
	for i := range order {
		order[i] = i
	}
	// Entries are sorted by endpoint: a stable sort by tick keeps ties in id order.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s.entries[a].Touched, s.entries[b].Touched) })
	cut, size := 0, s.size
	for ; cut < len(order) && s.full(len(order)-cut, size); cut++ {
		size -= encodedSize(s.entries[order[cut]])
	}
	out := order[:cut]
	gone := make([]bool, len(s.entries))
	n := s.next
	s.next++
	s.spilling = s.spilling[:0]
	for _, i := range out {
		gone[i] = true
		s.spilling = append(s.spilling, herald.EndpointCounts{Endpoint: s.entries[i].Endpoint, Counts: s.entries[i].Report(), Spill: n})
	}
	kept := s.entries[:0:0]
	for i, e := range s.entries {
		if !gone[i] {
			kept = append(kept, e)
		}
	}
	s.entries, s.size = kept, size
	log := workflow.GetLogger(ctx)
	for len(s.spilling) > 0 {
		if workflow.GetInfo(ctx).GetCurrentHistoryLength() > statsSpillHistoryLimit || ctx.Err() != nil {
			// Put back what was not sent (the entries have not changed meanwhile: signals
			// wait in their channel while a spill runs), in one sorted merge: this is the
			// path of a 0.1.0 shard's state, which may hold many thousands.
			back := make([]herald.StatsEntry, len(s.spilling))
			for i, c := range s.spilling {
				back[i] = herald.NewStatsEntry(c.Endpoint, c.Counts, 0)
			}
			slices.SortFunc(back, func(a, b herald.StatsEntry) int { return strings.Compare(a.Endpoint, b.Endpoint) })
			s.entries = mergeSorted(s.entries, back)
			s.spilling = nil
			s.resize()
			return
		}
		batch := s.spilling[:min(statsSpillBatch, len(s.spilling))]
		sent := make([]workflow.Future, len(batch))
		for i, c := range batch {
			sent[i] = workflow.SignalExternalWorkflow(ctx, herald.EndpointWorkflowID(c.Endpoint), "", herald.SignalCounts,
				herald.SpilledCounts{Counts: c.Counts, Spill: n})
		}
		for i, f := range sent {
			if err := f.Get(ctx, nil); err != nil {
				log.Info("attempt counts of an endpoint that is gone dropped", "endpoint", batch[i].Endpoint, "attempts", batch[i].Counts.Attempts, "error", err)
			}
		}
		s.spilling = s.spilling[len(batch):]
	}
}

// mergeSorted merges two lists of entries sorted by endpoint, with no endpoint in both.
func mergeSorted(a, b []herald.StatsEntry) []herald.StatsEntry {
	out := make([]herald.StatsEntry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].Endpoint < b[0].Endpoint {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// counts answers QueryStats: the entries of the endpoints ids asks for, and those of the
// spill in flight, each with the spill number from which the endpoint's own counters hold
// it (herald.EndpointCounts.Spill).
func (s *statsShard) counts(ids []string) []herald.EndpointCounts {
	out := make([]herald.EndpointCounts, 0, len(ids))
	for _, id := range ids {
		for _, c := range s.spilling {
			if c.Endpoint == id {
				out = append(out, c)
			}
		}
		if i, ok := s.find(id); ok {
			out = append(out, herald.EndpointCounts{Endpoint: id, Counts: s.entries[i].Report(), Spill: s.next})
		}
	}
	return out
}

// input is what the shard continues as new with.
func (s *statsShard) input() herald.StatsInput {
	return herald.StatsInput{Entries: s.entries, Capacity: s.capacity, Budget: s.budget, Clock: s.clock, NextSpill: s.next}
}

// statsBeforeSpill is StatsWorkflow as 0.1.0 ran it (versionStatsSpill's old branch): it
// keeps every endpoint it counts.
func statsBeforeSpill(ctx workflow.Context, in herald.StatsInput) error {
	counts := in.Counts
	find := func(id string) (int, bool) {
		return slices.BinarySearchFunc(counts, id, func(c herald.EndpointCounts, id string) int { return strings.Compare(c.Endpoint, id) })
	}
	if err := workflow.SetQueryHandler(ctx, herald.QueryStats, func(ids []string) ([]herald.EndpointCounts, error) {
		out := make([]herald.EndpointCounts, 0, len(ids))
		for _, id := range ids {
			if i, ok := find(id); ok {
				out = append(out, counts[i])
			}
		}
		return out, nil
	}); err != nil {
		return err
	}
	add := workflow.GetSignalChannel(ctx, herald.SignalStats)
	for {
		var batch []herald.EndpointCounts
		add.Receive(ctx, &batch)
		for _, c := range batch {
			i, ok := find(c.Endpoint)
			if !ok {
				counts = slices.Insert(counts, i, herald.EndpointCounts{Endpoint: c.Endpoint})
			}
			counts[i].Counts.Merge(c.Counts)
		}
		if add.Len() == 0 && historyLong(ctx, statsContinueAsNewEvents) {
			return workflow.NewContinueAsNewError(ctx, herald.StatsWorkflow, herald.StatsInput{Counts: counts})
		}
	}
}
