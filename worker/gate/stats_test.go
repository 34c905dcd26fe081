package gate

import (
	"context"
	"errors"
	"fmt"
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

// Run flushes the counts at the interval FlushCountsEvery sets, however often it renews:
// with an hour, nothing goes while it runs and everything goes when it stops; with the
// renewal interval, the counts go while it runs.
func TestRunFlushesCountsEvery(t *testing.T) {
	sent := func(f *fakeEndpoints) int {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, batch := range f.counts {
			n += len(batch)
		}
		return n
	}
	for _, flushEvery := range []time.Duration{time.Hour, 10 * time.Millisecond} {
		f := &fakeEndpoints{view: closedView(8, 8, 5)}
		g := New(f, 10*time.Millisecond, func(herald.Endpoint) time.Duration { return attemptTimeout }, newGate(f).log)
		g.FlushCountsEvery(flushEvery)
		ids := []string{"a", "b", "c"}
		for _, id := range ids {
			g.Finish(context.Background(), admit(t, g, id), delivered(time.Now()))
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { g.Run(ctx); close(done) }()
		if flushEvery == time.Hour {
			time.Sleep(100 * time.Millisecond) // ten renewal ticks
			if n := sent(f); n != 0 {
				t.Errorf("flush every hour: %d endpoints' counts sent while running, want none before the stop", n)
			}
		} else {
			eventuallyGate(t, "counts flushed while running", func() bool { return sent(f) == len(ids) })
		}
		cancel()
		<-done
		if n := sent(f); n != len(ids) {
			t.Errorf("flush every %s: %d endpoints' counts sent after the stop, want %d", flushEvery, n, len(ids))
		}
	}
}

// A flush sends a shard a signal per MaxCountsPerSignal endpoints: 3,000 endpoints (about
// 375 a shard) go in signals of at most that many, every endpoint's counts once.
func TestFlushCountsSplitsLargeBatches(t *testing.T) {
	f := &fakeEndpoints{view: closedView(8, 8, 5)}
	g := newGate(f)
	const n = 3000
	for i := range n {
		g.count(fmt.Sprintf("ep-%04d", i), delivered(time.Now()))
	}
	g.flushCounts(context.Background())
	if len(g.counts) != 0 {
		t.Fatalf("%d endpoints' counts kept after a flush that went", len(g.counts))
	}
	big := 0
	for _, b := range f.batches {
		if b > MaxCountsPerSignal {
			t.Errorf("a signal carried %d endpoints, over %d", b, MaxCountsPerSignal)
		}
		if b == MaxCountsPerSignal {
			big++
		}
	}
	if big < 8 || len(f.batches) < 16 {
		t.Errorf("signals %v: want every shard's ~375 endpoints split in two", f.batches)
	}
	seen := map[string]bool{}
	for _, batch := range f.counts {
		for _, c := range batch {
			if seen[c.Endpoint] || c.Counts.Attempts != 1 {
				t.Errorf("endpoint %s: sent again or counts %+v", c.Endpoint, c.Counts)
			}
			seen[c.Endpoint] = true
		}
	}
	if len(seen) != n {
		t.Errorf("%d endpoints' counts sent, want %d", len(seen), n)
	}
}
