package cluster

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tuning is one configuration of the cluster that BenchmarkTuning measures.
type tuning struct {
	name string
	// restore puts the stock visibility indexes back (tune-visibility.sh --restore).
	restore bool
	// keepCustom is tune-visibility.sh's TUNE_KEEP_CUSTOM (empty: all).
	keepCustom string
	// dynamic is added to production.yaml's dynamic config.
	dynamic string
	// pg are PostgreSQL settings that a reload applies (ALTER SYSTEM), on top of startPostgres's.
	pg map[string]string
}

// tunings are the configurations BenchmarkTuning alternates: the stock schema, the trimmed
// indexes the rehearsal runs with, and candidates on top of them.
var tunings = []tuning{
	{name: "stock indexes", restore: true},
	{name: "trimmed indexes"},
	{name: "trimmed + unmapped custom fields", keepCustom: "Keyword01,Keyword02,Keyword03,Keyword04,Keyword05,Keyword06"},
	{name: "trimmed + 1 matching partition", dynamic: "matching.numTaskqueueReadPartitions:\n  - value: 1\n" +
		"matching.numTaskqueueWritePartitions:\n  - value: 1\n"},
	{name: "trimmed + wal_compression, fewer checkpoints", pg: map[string]string{
		"wal_compression": "on", "max_wal_size": "4GB", "checkpoint_timeout": "15min",
	}},
}

// apply makes t the cluster's configuration and waits until the services have read it.
func (c *cluster) apply(t tuning) error {
	if err := c.tuneVisibility(t.restore, t.keepCustom); err != nil {
		return err
	}
	if err := c.writeDynamicConfig(t.dynamic); err != nil {
		return err
	}
	if _, err := c.psql("postgres", "ALTER SYSTEM RESET ALL"); err != nil {
		return err
	}
	for k, v := range t.pg {
		if _, err := c.psql("postgres", fmt.Sprintf("ALTER SYSTEM SET %s = '%s'", k, v)); err != nil {
			return err
		}
	}
	if _, err := c.psql("postgres", "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	time.Sleep(12 * time.Second) // the services poll the dynamic config every 10 s
	return nil
}

// BenchmarkTuning measures what each configuration in tunings costs per first-try delivery
// (PostgreSQL commits, CPU ms by process; a burst of 400 through the API with one Herald
// worker), alternating them on the same cluster HERALD_TUNING_ROUNDS times (default 2, every
// other round in reverse order), so that the machine's other load falls on each alike. It
// leaves the cluster as it started.
//
//	go test -count=1 ./tests/cluster -run '^$' -bench Tuning -benchtime 1x -v
func BenchmarkTuning(b *testing.B) {
	if cl == nil {
		b.Skipf("cluster rehearsal skipped: %s", skipReason)
	}
	c := cl
	rounds := 2
	if s := os.Getenv("HERALD_TUNING_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("HERALD_TUNING_ROUNDS=%q: want a whole number of rounds, 1 or more", s)
		}
		rounds = n
	}
	defer func() {
		if err := c.apply(tuning{name: "trimmed indexes"}); err != nil {
			b.Error(err)
		}
		if err := c.setWorkers(workers); err != nil {
			b.Error(err)
		}
	}()
	if err := c.setWorkers(1); err != nil {
		b.Fatal(err)
	}
	results := make([][]burstResult, len(tunings))
	for range b.N {
		for r := range rounds {
			for k := range tunings {
				i := k
				if r%2 == 1 {
					i = len(tunings) - 1 - k // every other round backwards: no configuration always comes first
				}
				t := tunings[i]
				if err := c.apply(t); err != nil {
					b.Fatal(err)
				}
				res, err := c.burst(b, fmt.Sprintf("tuning-%d-%d", r, i), 400)
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("round %d, %s: %.1f commits, %.1f CPU ms per delivery, %.0f deliveries/s", r+1, t.name, res.commits, res.cpu["all"], res.rate)
				results[i] = append(results[i], res)
			}
		}
	}
	for i, t := range tunings {
		var commits, rate float64
		cpu := map[string]float64{}
		for _, r := range results[i] {
			commits += r.commits / float64(len(results[i]))
			rate += r.rate / float64(len(results[i]))
			for g, v := range r.cpu {
				cpu[g] += v / float64(len(results[i]))
			}
		}
		var parts []string
		for _, g := range cpuGroups {
			parts = append(parts, fmt.Sprintf("%s %.1f", g, cpu[g]))
		}
		b.Logf("mean of %d, %s: per delivery %.1f commits, CPU ms %.1f (%s); %.0f deliveries/s",
			len(results[i]), t.name, commits, cpu["all"], strings.Join(parts, ", "), rate)
	}
}
