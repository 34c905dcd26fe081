package gate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// A flush sends each stats shard one batch, its endpoints in order; counts that could not
// be sent go with the next flush, added to what came since.
func TestFlushCounts(t *testing.T) {
	f := &fakeEndpoints{view: closedView(8, 8, 5), countErr: errors.New("unavailable")}
	g := newGate(f)
	now := time.Now()
	// Endpoints that share a shard, and one that does not.
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	for _, id := range ids {
		g.Finish(context.Background(), admit(t, g, id), delivered(now))
	}
	g.flushCounts(context.Background())
	if len(f.counts) != 0 || len(g.counts) != len(ids) {
		t.Fatalf("failed flush: sent %v, kept %d endpoints; want nothing sent, %d kept", f.counts, len(g.counts), len(ids))
	}
	f.mu.Lock()
	f.countErr = nil
	f.mu.Unlock()
	g.Finish(context.Background(), admit(t, g, "a"), failed(now.Add(time.Second)))
	g.flushCounts(context.Background())
	if len(g.counts) != 0 {
		t.Fatalf("kept %v after a flush that went", g.counts)
	}
	seen := 0
	for shard, batch := range f.counts {
		for i, c := range batch {
			seen++
			if herald.StatsWorkflowID(c.Endpoint) != shard {
				t.Errorf("endpoint %s sent to shard %s", c.Endpoint, shard)
			}
			if i > 0 && batch[i-1].Endpoint >= c.Endpoint {
				t.Errorf("shard %s: endpoints out of order: %v", shard, batch)
			}
			want := herald.Report{Attempts: 1, Successes: 1}
			if c.Endpoint == "a" {
				want = herald.Report{Attempts: 2, Successes: 1, Failures: 1}
			}
			if c.Counts.Attempts != want.Attempts || c.Counts.Successes != want.Successes || c.Counts.Failures != want.Failures {
				t.Errorf("endpoint %s: counts %+v, want %+v", c.Endpoint, c.Counts, want)
			}
		}
	}
	if seen != len(ids) {
		t.Fatalf("%d endpoints sent, want %d", seen, len(ids))
	}
}
