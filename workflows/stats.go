package workflows

import (
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
)

// statsContinueAsNewEvents: past this many history events a stats shard continues as new.
const statsContinueAsNewEvents = 2000

// StatsInput starts (or continues as new) a stats shard: the counts so far, sorted by endpoint.
type StatsInput struct {
	Counts []herald.EndpointCounts `json:"counts,omitempty"`
}

// StatsWorkflow keeps the attempt counts of the endpoints of one shard: it adds the counts
// workers send and answers queries for them.
func StatsWorkflow(ctx workflow.Context, in StatsInput) error {
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
			return workflow.NewContinueAsNewError(ctx, herald.StatsWorkflow, StatsInput{Counts: counts})
		}
	}
}
