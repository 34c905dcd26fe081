package policy

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

var capacityEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// capBatch observes N samples of Latency, the first at From and then every Every, and
// expects the cap to be Cap afterwards.
type capBatch struct {
	From    time.Duration
	Every   time.Duration
	N       int
	Latency time.Duration
	Cap     int
}

func TestCapacityAdapts(t *testing.T) {
	const ms, s = time.Millisecond, time.Second
	slow, fast, middling := 4*s, 200*ms, 2*s
	cases := []struct {
		name    string
		batches []capBatch
	}{
		{"starts at the configured cap", []capBatch{{0, s, 0, fast, 100}}},
		{"9 slow samples are too few", []capBatch{{0, s, 9, slow, 100}}},
		{"10 slow samples halve", []capBatch{{0, s, 10, slow, 50}}},
		{"exactly 3s p99 is not slow", []capBatch{{0, s, 50, 3 * s, 100}}},
		{"middling latency changes nothing", []capBatch{
			{0, s, 10, slow, 50}, {10 * s, s, 200, middling, 50},
		}},
		{"at most one change per 30s", []capBatch{
			{0, 100 * ms, 10, slow, 50},         // halves at 0.9s
			{s, 100 * ms, 290, slow, 50},        // plenty of fresh samples, but the last is 29s later
			{30900 * ms, 100 * ms, 1, slow, 25}, // 30s after the first change
		}},
		{"slow all the way down to 1, never 0", []capBatch{
			{0, 3 * s, 200, slow, 1},
		}},
		{"recovery waits until the window's p99 is under 1.5s", []capBatch{
			{0, 3 * s, 200, slow, 1},
			{600 * s, 3 * s, 98, fast, 1}, // two slow samples still among the last 100
			{894 * s, 3 * s, 1, fast, 2},
		}},
		{"recovers by doubling to the configured cap", []capBatch{
			{0, 3 * s, 200, slow, 1},
			{1000 * s, 3 * s, 10, fast, 2}, // the slow samples have left the 5m window
			{1030 * s, 3 * s, 10, fast, 4},
			{1060 * s, 3 * s, 40, fast, 64},
			{1180 * s, 3 * s, 10, fast, 100},
			{1210 * s, 3 * s, 100, fast, 100},
		}},
		{"a slow burst already acted on does not halve again", []capBatch{
			{0, 10 * ms, 10, slow, 50},  // halves at 90ms
			{s, s, 30, fast, 50},        // 30s: not yet 30s after the change
			{31 * s, s, 1, fast, 100},   // judged on the fast samples since, not the burst still in the window
			{32 * s, s, 120, fast, 100}, // and never halved again by it
		}},
		{"one slow attempt in a hundred is not p99", []capBatch{
			{0, s, 99, fast, 100}, {99 * s, s, 1, slow, 100},
		}},
		{"two slow attempts in a hundred are", []capBatch{
			{0, s, 98, fast, 100}, {98 * s, s, 2, slow, 50},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCapacity(DefaultCapacityConfig())
			for i, b := range tc.batches {
				for j := range b.N {
					c.Observe(capacityEpoch.Add(b.From+time.Duration(j)*b.Every), b.Latency)
				}
				if got := c.Cap(); got != b.Cap {
					t.Fatalf("after batch %d: cap %d, want %d", i, got, b.Cap)
				}
			}
		})
	}
}

func TestCapacityPercentile(t *testing.T) {
	cfg := DefaultCapacityConfig()
	cfg.MinSamples = 100 // keep the cap still; only the percentiles matter here
	c := NewCapacity(cfg)
	// 150 samples of 1ms..150ms, one a second: only the last 100 (51ms..150ms) stay.
	for i := 1; i <= 150; i++ {
		c.Observe(capacityEpoch.Add(time.Duration(i)*time.Second), time.Duration(i)*time.Millisecond)
	}
	last := capacityEpoch.Add(150 * time.Second)
	cases := []struct {
		at   time.Time
		q    float64
		want time.Duration
	}{
		{last, 0.5, 100 * time.Millisecond},
		{last, 0.99, 149 * time.Millisecond},
		{last, 1, 150 * time.Millisecond},
		{last, 0, 51 * time.Millisecond},
		{last, -1, 51 * time.Millisecond},
		{last, 2, 150 * time.Millisecond},
		// 4m50s after the 150th sample only samples 141..150 are under 5m old; 5m after, none.
		{last.Add(5*time.Minute - 10*time.Second), 0.5, 145 * time.Millisecond},
		{last.Add(5*time.Minute - time.Second), 0.99, 150 * time.Millisecond},
		{last.Add(5 * time.Minute), 0.5, 0},
	}
	for _, tc := range cases {
		if got := c.Percentile(tc.at, tc.q); got != tc.want {
			t.Errorf("Percentile(+%s, %v) = %s, want %s", tc.at.Sub(last), tc.q, got, tc.want)
		}
	}
	empty := NewCapacity(cfg)
	if got := empty.Percentile(last, 0.99); got != 0 {
		t.Errorf("empty p99 = %s, want 0", got)
	}
}

func TestCapacityConfigValidate(t *testing.T) {
	testConfigValidate(t, DefaultCapacityConfig, []configCase[CapacityConfig]{
		{"above 500", func(c *CapacityConfig) { c.MaxInFlight = 600 }, "max_in_flight 600 is above 500: ask for 1..500"},
		{"zero", func(c *CapacityConfig) { c.MaxInFlight = 0 }, "max_in_flight 0 is below 1: every endpoint needs 1..500"},
		{"negative", func(c *CapacityConfig) { c.MaxInFlight = -4 }, "max_in_flight -4 is below 1"},
		{"zero slow", func(c *CapacityConfig) { c.SlowP99 = 0 }, "slow p99 0s is not positive"},
		{"recover not below slow", func(c *CapacityConfig) { c.RecoverP99 = duration.Duration(3 * time.Second) }, "recover p99 3s must be positive and below the slow p99 3s"},
		{"no samples", func(c *CapacityConfig) { c.WindowSamples = 0 }, "window samples 0 is out of range"},
		{"zero window", func(c *CapacityConfig) { c.Window = 0 }, "latency window 0s is not positive"},
		{"negative interval", func(c *CapacityConfig) { c.MinChangeInterval = duration.Duration(-time.Second) }, "min change interval -1s is negative"},
		{"min samples above window", func(c *CapacityConfig) { c.MinSamples = 101 }, "min samples 101 is out of range; use 1 to the window samples (100)"},
	})
	for _, n := range []int{1, 500} {
		c := DefaultCapacityConfig()
		c.MaxInFlight = n
		if err := c.Validate(); err != nil {
			t.Errorf("max in-flight %d: %v", n, err)
		}
	}
}

func TestCapacityReconfigure(t *testing.T) {
	halved := func() Capacity {
		c := NewCapacity(DefaultCapacityConfig())
		for i := range 10 {
			c.Observe(capacityEpoch.Add(time.Duration(i)*time.Second), 4*time.Second)
		}
		return c
	}
	cases := []struct {
		name  string
		start Capacity
		max   int
		want  int
	}{
		{"full cap follows a raise", NewCapacity(DefaultCapacityConfig()), 200, 200},
		{"full cap follows a cut", NewCapacity(DefaultCapacityConfig()), 30, 30},
		{"reduced cap stays reduced", halved(), 200, 50},
		{"reduced cap is cut to a lower max", halved(), 20, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultCapacityConfig()
			cfg.MaxInFlight = tc.max
			c := tc.start
			if err := c.Reconfigure(cfg); err != nil {
				t.Fatal(err)
			}
			if c.Cap() != tc.want {
				t.Fatalf("cap %d, want %d", c.Cap(), tc.want)
			}
		})
	}
	c := NewCapacity(DefaultCapacityConfig())
	bad := DefaultCapacityConfig()
	bad.MaxInFlight = 501
	if err := c.Reconfigure(bad); err == nil || c.Cap() != 100 {
		t.Fatalf("bad config accepted (%v) or applied (cap %d)", err, c.Cap())
	}
}

// TestCapacityProperties observes random latencies at random clock steps: the cap stays in
// 1..MaxInFlight, moves only by halving or doubling (clamped), never twice within
// MinChangeInterval, and a twin that goes through JSON now and then answers the same.
func TestCapacityProperties(t *testing.T) {
	cfg := CapacityConfig{
		MaxInFlight: 37, SlowP99: duration.Duration(300 * time.Millisecond), RecoverP99: duration.Duration(150 * time.Millisecond),
		WindowSamples: 20, Window: duration.Duration(30 * time.Second), MinChangeInterval: duration.Duration(5 * time.Second), MinSamples: 4,
	}
	changes := 0
	for seed := int64(1); seed <= 600; seed++ {
		rng := rand.New(rand.NewSource(seed))
		c, twin := NewCapacity(cfg), NewCapacity(cfg)
		now := capacityEpoch
		var lastChange time.Time
		for step := range 300 {
			where := fmt.Sprintf("seed %d step %d", seed, step)
			now = now.Add(time.Duration(rng.Intn(3000)) * time.Millisecond)
			if rng.Intn(10) == 0 {
				jsonRoundTrip(t, &twin)
			}
			lat := time.Duration(rng.ExpFloat64() * float64(200*time.Millisecond))
			before := c.Cap()
			changed := c.Observe(now, lat)
			if changed != twin.Observe(now, lat) || c.Cap() != twin.Cap() {
				t.Fatalf("%s: twin cap %d, original %d", where, twin.Cap(), c.Cap())
			}
			for _, q := range []float64{0.5, 0.99} {
				if a, b := c.Percentile(now, q), twin.Percentile(now, q); a != b {
					t.Fatalf("%s: twin p%v %s, original %s", where, q*100, b, a)
				}
			}
			after := c.Cap()
			if after < 1 || after > cfg.MaxInFlight {
				t.Fatalf("%s: cap %d outside 1..%d", where, after, cfg.MaxInFlight)
			}
			if changed != (after != before) {
				t.Fatalf("%s: Observe said %v but cap went %d to %d", where, changed, before, after)
			}
			if changed {
				changes++
				if after != max(before/2, 1) && after != min(before*2, cfg.MaxInFlight) {
					t.Fatalf("%s: cap went %d to %d", where, before, after)
				}
				if !lastChange.IsZero() && now.Sub(lastChange) < cfg.MinChangeInterval.Std() {
					t.Fatalf("%s: changed %s after the previous change", where, now.Sub(lastChange))
				}
				lastChange = now
			}
			if len(c.Samples) > cfg.WindowSamples {
				t.Fatalf("%s: %d samples kept", where, len(c.Samples))
			}
		}
	}
	t.Logf("%d cap changes", changes)
	if changes == 0 {
		t.Fatal("no sequence ever changed the cap; the property test exercises nothing")
	}
}
