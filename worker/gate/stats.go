package gate

import (
	"context"
	"sort"
	"time"

	"github.com/heraldhq/herald"
)

// StatsInterval is how often a worker's gate sends, unless told otherwise
// (Gate.FlushCountsEvery), the counts it has added up to the stats
// shards (herald.StatsWorkflowID): the counters of the endpoints heard from lately live in a
// few stats workflows rather than in each endpoint workflow, so that a delivered attempt to
// a quiet endpoint costs that endpoint's workflow no history event (a shard hands an
// endpoint's counts to its workflow only to make room: herald.StatsCapacity).
const StatsInterval = 10 * time.Second

// MaxCountsPerSignal bounds how many endpoints' counts one signal to a stats shard
// carries: a flush sends a shard as many signals as it takes. An entry encodes to at most
// about 450 bytes (a 128-character id, the longest outcome kept), so a signal stays under
// 120 KB however many endpoints a worker attempted within an interval.
const MaxCountsPerSignal = 256

// count adds one attempt to endpoint id's counts, for the next flush.
func (g *Gate) count(id string, res herald.Result) {
	g.countMu.Lock()
	defer g.countMu.Unlock()
	g.pending(id).Add(res)
}

// pending is endpoint id's counts for the next flush, made if it has none; the caller holds
// countMu.
func (g *Gate) pending(id string) *herald.Report {
	r := g.counts[id]
	if r == nil {
		r = &herald.Report{}
		g.counts[id] = r
	}
	return r
}

// flushCounts sends the counts added up since the last flush to the stats shards, a signal
// per shard per MaxCountsPerSignal endpoints (starting the shard if needed); counts that
// could not be sent wait for the next.
func (g *Gate) flushCounts(ctx context.Context) {
	g.countMu.Lock()
	counts := g.counts
	g.counts = map[string]*herald.Report{}
	g.countMu.Unlock()
	shards := map[string][]herald.EndpointCounts{}
	for id, r := range counts {
		sid := herald.StatsWorkflowID(id)
		shards[sid] = append(shards[sid], herald.EndpointCounts{Endpoint: id, Counts: *r})
	}
	for sid, batch := range shards {
		sort.Slice(batch, func(i, j int) bool { return batch[i].Endpoint < batch[j].Endpoint })
		for start := 0; start < len(batch); start += MaxCountsPerSignal {
			sctx, cancel := context.WithTimeout(ctx, tellTimeout)
			err := g.calls.Counts(sctx, sid, batch[start:min(len(batch), start+MaxCountsPerSignal)])
			cancel()
			if err == nil {
				continue
			}
			g.log.Warn("endpoint counts not sent; they go with the next flush", "shard", sid, "error", err)
			g.countMu.Lock()
			for _, c := range batch[start:] {
				g.pending(c.Endpoint).Merge(c.Counts)
			}
			g.countMu.Unlock()
			break
		}
	}
}
