package workflows

import (
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald/activities"
)

// statsContinueAsNewEvents: past this many history events a stats shard continues as new.
const statsContinueAsNewEvents = 2000

// StatsInput starts (or continues as new) a stats shard: the counts so far, sorted by endpoint.
type StatsInput struct {
	Counts []activities.EndpointCounts `json:"counts,omitempty"`
}

// StatsWorkflow keeps the attempt counts of the endpoints of one shard: it adds the counts
// workers send and answers queries for them.
func StatsWorkflow(ctx workflow.Context, in StatsInput) error {
	counts := in.Counts
	find := func(id string) (int, bool) {
		return slices.BinarySearchFunc(counts, id, func(c activities.EndpointCounts, id string) int { return strings.Compare(c.Endpoint, id) })
	}
	if err := workflow.SetQueryHandler(ctx, activities.QueryStats, func(ids []string) ([]activities.EndpointCounts, error) {
		out := make([]activities.EndpointCounts, 0, len(ids))
		for _, id := range ids {
			if i, ok := find(id); ok {
				out = append(out, counts[i])
			}
		}
		return out, nil
	}); err != nil {
		return err
	}
	add := workflow.GetSignalChannel(ctx, activities.SignalStats)
	for {
		var batch []activities.EndpointCounts
		add.Receive(ctx, &batch)
		for _, c := range batch {
			i, ok := find(c.Endpoint)
			if !ok {
				counts = slices.Insert(counts, i, activities.EndpointCounts{Endpoint: c.Endpoint})
			}
			counts[i].Counts.Merge(c.Counts)
		}
		info := workflow.GetInfo(ctx)
		if add.Len() == 0 && (info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > statsContinueAsNewEvents) {
			return workflow.NewContinueAsNewError(ctx, activities.StatsWorkflowName, StatsInput{Counts: counts})
		}
	}
}
