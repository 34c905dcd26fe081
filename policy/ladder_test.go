package policy

import (
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

func TestDefaultLadder(t *testing.T) {
	l := DefaultLadder()
	if err := l.Validate(); err != nil {
		t.Fatalf("DefaultLadder().Validate() = %v, want nil", err)
	}
	if l.Attempts != 8 || l.Jitter != 0.2 {
		t.Errorf("DefaultLadder() attempts %d jitter %v, want 8 and 0.2", l.Attempts, l.Jitter)
	}
	// 30s + 2m + 10m + 30m + 1h + 3h + 8h, the "~12h42m" of the issue.
	if got, want := totalDelay(l), 12*time.Hour+42*time.Minute+30*time.Second; got != want {
		t.Errorf("DefaultLadder() waits %s in all, want %s", got, want)
	}
	want := []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour, 8 * time.Hour}
	for i, w := range want {
		got, ok := l.BaseDelay(i + 1)
		if !ok || got != w {
			t.Errorf("BaseDelay(%d) = %s, %v; want %s, true", i+1, got, ok, w)
		}
	}
	if got, ok := l.BaseDelay(8); ok {
		t.Errorf("BaseDelay(8) = %s, true; want exhausted after the 8th attempt", got)
	}
	// DefaultLadder must hand out a fresh slice each time.
	l.Delays[0] = duration.Duration(time.Hour)
	if DefaultLadder().Delays[0].Std() != 30*time.Second {
		t.Error("DefaultLadder() shares its Delays slice between calls")
	}
}

func TestBaseDelay(t *testing.T) {
	s, m := time.Second, time.Minute
	tests := []struct {
		name   string
		ladder Ladder
		failed int
		want   time.Duration
		ok     bool
	}{
		{"first failure", Ladder{Delays: duration.Of(s, m), Attempts: 3}, 1, s, true},
		{"second failure", Ladder{Delays: duration.Of(s, m), Attempts: 3}, 2, m, true},
		{"last attempt failed", Ladder{Delays: duration.Of(s, m), Attempts: 3}, 3, 0, false},
		{"past the end", Ladder{Delays: duration.Of(s, m), Attempts: 3}, 4, 0, false},
		{"last delay repeats", Ladder{Delays: duration.Of(s, m), Attempts: 6}, 5, m, true},
		{"ladder cut", Ladder{Delays: duration.Of(s, m, time.Hour), Attempts: 2}, 2, 0, false},
		{"zero failed counts as one", Ladder{Delays: duration.Of(s, m), Attempts: 3}, 0, s, true},
		{"negative failed counts as one", Ladder{Delays: duration.Of(s, m), Attempts: 3}, -7, s, true},
		{"single attempt", Ladder{Delays: duration.Of(s), Attempts: 1}, 1, 0, false},
		{"no delays never retries", Ladder{Attempts: 5}, 1, 0, false},
		{"zero ladder", Ladder{}, 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.ladder.BaseDelay(tt.failed)
			if got != tt.want || ok != tt.ok {
				t.Errorf("BaseDelay(%d) = %s, %v; want %s, %v", tt.failed, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestLadderValidate(t *testing.T) {
	ok := DefaultLadder()
	tests := []struct {
		name   string
		ladder Ladder
		want   []string // substrings of the error; nil for valid
	}{
		{"default", ok, nil},
		{"one attempt without delays", Ladder{Attempts: 1}, nil},
		{"max attempts", Ladder{Delays: duration.Of(time.Second), Attempts: MaxAttempts}, nil},
		{"max delay", Ladder{Delays: duration.Of(MaxDelay), Attempts: 2}, nil},
		{"zero jitter", Ladder{Delays: duration.Of(time.Second), Attempts: 2, Jitter: 0}, nil},
		{"zero attempts", Ladder{Delays: ok.Delays, Attempts: 0, Jitter: 0.2}, []string{"attempts is 0", "between 1 and 100"}},
		{"too many attempts", Ladder{Delays: ok.Delays, Attempts: 101, Jitter: 0.2}, []string{"attempts is 101"}},
		{"no delays", Ladder{Attempts: 3}, []string{"3 attempts but no delays"}},
		{"zero delay", Ladder{Delays: duration.Of(time.Second, 0), Attempts: 3}, []string{"delay 2 is 0s", "positive"}},
		{"negative delay", Ladder{Delays: duration.Of(-time.Second), Attempts: 3}, []string{"delay 1 is -1s"}},
		{"delay too long", Ladder{Delays: duration.Of(MaxDelay + 1), Attempts: 2}, []string{"delay 1", "longest allowed is 720h0m0s"}},
		{"negative jitter", Ladder{Delays: ok.Delays, Attempts: 8, Jitter: -0.1}, []string{"jitter -0.1 is out of range", "[0, 1)"}},
		{"jitter one", Ladder{Delays: ok.Delays, Attempts: 8, Jitter: 1}, []string{"jitter 1 is out of range"}},
		{"jitter NaN", Ladder{Delays: ok.Delays, Attempts: 8, Jitter: math.NaN()}, []string{"jitter NaN"}},
		{"every problem at once", Ladder{Delays: duration.Of(0), Attempts: 0, Jitter: 2}, []string{"attempts is 0", "delay 1 is 0s", "jitter 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErrContaining(t, "Validate()", tt.ladder.Validate(), tt.want)
		})
	}
}

func TestJitterBounds(t *testing.T) {
	const (
		n    = 10000
		base = 30 * time.Second
		j    = 0.2
	)
	lo, hi := 24*time.Second, 36*time.Second
	seen := make(map[time.Duration]bool, n)
	var sum float64
	minD, maxD := time.Duration(math.MaxInt64), time.Duration(0)
	for i := range n {
		key := JitterKey("evt_"+strconv.Itoa(i), 0, 1)
		d := jitter(base, j, key)
		if d < lo || d > hi {
			t.Fatalf("jitter(%s, %v, %q) = %s, outside [%s, %s]", base, j, key, d, lo, hi)
		}
		seen[d] = true
		sum += float64(d)
		minD, maxD = min(minD, d), max(maxD, d)
	}
	if len(seen) < n*99/100 {
		t.Errorf("only %d distinct delays over %d keys, want at least 99%%", len(seen), n)
	}
	mean := sum / n
	if dev := math.Abs(mean-float64(base)) / float64(base); dev > 0.02 {
		t.Errorf("mean delay %s deviates %.2f%% from %s, want within 2%%", time.Duration(mean), dev*100, base)
	}
	// Uniform over the window: the extremes come close to both edges.
	if minD > lo+time.Second || maxD < hi-time.Second {
		t.Errorf("delays span [%s, %s], want close to [%s, %s]", minD, maxD, lo, hi)
	}
}

// TestJitterStable pins values: if the hash or the formula changes, running
// workflows would replay to different timers, so this test must fail.
func TestJitterStable(t *testing.T) {
	for _, key := range []string{"evt_123/0/1", "evt_123/0/2", "evt_123/1/1", ""} {
		a, b := jitter(30*time.Second, 0.2, key), jitter(30*time.Second, 0.2, key)
		if a != b {
			t.Errorf("Jitter with key %q gave %s then %s", key, a, b)
		}
	}
	golden := []struct {
		key  string
		want time.Duration
	}{
		{"evt_123/0/1", 30645633302},
		{"evt_123/0/2", 33690522885},
		{"evt_123/1/1", 29444591218},
	}
	for _, g := range golden {
		if got := jitter(30*time.Second, 0.2, g.key); got != g.want {
			t.Errorf("jitter(30s, 0.2, %q) = %d, want %d (changing it breaks workflow replay)", g.key, got, g.want)
		}
	}
	if jitter(30*time.Second, 0.2, "evt_123/0/1") == jitter(30*time.Second, 0.2, "evt_123/0/2") {
		t.Error("attempts 1 and 2 of the same event got the same jitter")
	}
}

func TestJitterEdges(t *testing.T) {
	tests := []struct {
		name   string
		base   time.Duration
		j      float64
		lo, hi time.Duration
	}{
		{"zero base", 0, 0.2, 0, 0},
		{"negative base", -time.Second, 0.2, -time.Second, -time.Second},
		{"no jitter", time.Minute, 0, time.Minute, time.Minute},
		{"negative jitter", time.Minute, -0.5, time.Minute, time.Minute},
		{"NaN jitter", time.Minute, math.NaN(), time.Minute, time.Minute},
		{"jitter above one counts as one", time.Minute, 5, 0, 2 * time.Minute},
		{"tiny base", 1, 0.2, 0, 1},
		{"saturates", math.MaxInt64, 0.9, 0, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range 200 {
				key := JitterKey("e", 0, i)
				if d := jitter(tt.base, tt.j, key); d < tt.lo || d > tt.hi {
					t.Fatalf("jitter(%d, %v, %q) = %d, want in [%d, %d]", tt.base, tt.j, key, d, tt.lo, tt.hi)
				}
			}
		})
	}
}

func TestJitterKey(t *testing.T) {
	if got, want := JitterKey("evt_123", 2, 5), "evt_123/2/5"; got != want {
		t.Errorf("JitterKey = %q, want %q", got, want)
	}
}

func TestApply(t *testing.T) {
	base := DefaultLadder()
	zero := 0.0
	tests := []struct {
		name string
		o    LadderOverride
		want Ladder
	}{
		{"empty keeps all", LadderOverride{}, base},
		{"attempts", LadderOverride{Attempts: 3}, Ladder{Delays: base.Delays, Attempts: 3, Jitter: 0.2}},
		{"delays", LadderOverride{Delays: duration.Of(time.Minute)}, Ladder{Delays: duration.Of(time.Minute), Attempts: 8, Jitter: 0.2}},
		{"jitter off", LadderOverride{Jitter: &zero}, Ladder{Delays: base.Delays, Attempts: 8, Jitter: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := base.Apply(tt.o)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Apply(%+v) = %+v, want %+v", tt.o, got, tt.want)
			}
			got.Delays[0] = 42
			if base.Delays[0] == 42 || (tt.o.Delays != nil && tt.o.Delays[0] == 42) {
				t.Error("Apply result shares its Delays slice with an input")
			}
		})
	}
}

func TestNext(t *testing.T) {
	l := DefaultLadder()
	none := RetryAfter{Action: RetryAfterNone}
	tests := []struct {
		name     string
		ladder   Ladder
		failed   int
		ra       RetryAfter
		retry    bool
		source   string
		base     time.Duration
		min, max time.Duration
	}{
		{"ladder first retry", l, 1, none, true, SourceLadder, 30 * time.Second, 24 * time.Second, 36 * time.Second},
		{"ladder last retry", l, 7, none, true, SourceLadder, 8 * time.Hour, 6*time.Hour + 24*time.Minute, 9*time.Hour + 36*time.Minute},
		{"ladder exhausted", l, 8, none, false, SourceLadder, 0, 0, 0},
		{"exhausted despite Retry-After", l, 8, RetryAfter{Action: RetryAfterHonoured, Delay: duration.Duration(time.Minute)}, false, SourceLadder, 0, 0, 0},
		{"ignored falls back to ladder", l, 2, RetryAfter{Action: RetryAfterIgnored, Asked: duration.Duration(48 * time.Hour)}, true, SourceLadder, 2 * time.Minute, 96 * time.Second, 144 * time.Second},
		{"honoured 60s, upward jitter", l, 1, RetryAfter{Action: RetryAfterHonoured, Delay: duration.Duration(60 * time.Second)}, true, SourceRetryAfter, 30 * time.Second, 60 * time.Second, 72 * time.Second},
		{"honoured shorter than ladder replaces it", l, 6, RetryAfter{Action: RetryAfterHonoured, Delay: duration.Duration(90 * time.Second)}, true, SourceRetryAfter, 3 * time.Hour, 90 * time.Second, 108 * time.Second},
		{"capped 4h", l, 1, RetryAfter{Action: RetryAfterCapped, Delay: duration.Duration(4 * time.Hour), Asked: duration.Duration(6 * time.Hour)}, true, SourceRetryAfter, 30 * time.Second, 4 * time.Hour, 4*time.Hour + 48*time.Minute},
		{"honoured zero retries at once", l, 1, RetryAfter{Action: RetryAfterHonoured, Delay: 0}, true, SourceRetryAfter, 30 * time.Second, 0, 0},
		{"no jitter is exact", Ladder{Delays: duration.Of(time.Minute), Attempts: 3}, 2, none, true, SourceLadder, time.Minute, time.Minute, time.Minute},
		{"no jitter honoured is exact", Ladder{Delays: duration.Of(time.Minute), Attempts: 3}, 1, RetryAfter{Action: RetryAfterHonoured, Delay: duration.Duration(5 * time.Second)}, true, SourceRetryAfter, time.Minute, 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			distinct := map[time.Duration]bool{}
			for i := range 1000 {
				key := JitterKey("evt_"+strconv.Itoa(i), 0, tt.failed)
				got := Next(tt.ladder, tt.failed, tt.ra, key)
				if got.Retry != tt.retry || got.Source != tt.source || got.BaseDelay.Std() != tt.base {
					t.Fatalf("Next(failed %d, %+v) = %+v; want retry %v, source %s, base %s", tt.failed, tt.ra, got, tt.retry, tt.source, tt.base)
				}
				if got.Delay.Std() < tt.min || got.Delay.Std() > tt.max {
					t.Fatalf("Next(failed %d, %+v, %q).Delay = %s, want in [%s, %s]", tt.failed, tt.ra, key, got.Delay, tt.min, tt.max)
				}
				if again := Next(tt.ladder, tt.failed, tt.ra, key); again != got {
					t.Fatalf("Next is not deterministic: %+v then %+v", got, again)
				}
				distinct[got.Delay.Std()] = true
			}
			// A window wider than zero must actually spread the keys.
			if tt.max > tt.min && len(distinct) < 900 {
				t.Errorf("only %d distinct delays over 1000 keys in [%s, %s]", len(distinct), tt.min, tt.max)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	want := []float64{0, 0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875}
	for k, w := range want {
		if got := Spread(uint64(k)); got != w {
			t.Errorf("Spread(%d) = %v, want %v", k, got, w)
		}
	}
	// Any run of places fills the window evenly: 240 retries of the 30 s rung (±20%, a
	// 12 s window) land at most ceil(240/12)+1 in any second, wherever the run starts.
	l := DefaultLadder()
	for _, start := range []uint64{0, 1, 137, 1 << 20} {
		perSecond := map[int]int{}
		for k := start; k < start+240; k++ {
			d := NextAt(l, 1, RetryAfter{Action: RetryAfterNone}, Spread(k)).Delay.Std()
			if d < 24*time.Second || d >= 36*time.Second {
				t.Fatalf("start %d: delay %s outside 24s..36s", start, d)
			}
			perSecond[int(d/time.Second)]++
		}
		for s, n := range perSecond {
			if n > 21 {
				t.Errorf("start %d: %d retries in second %d, want at most 21", start, n, s)
			}
		}
	}
}

func TestNextAtMatchesNext(t *testing.T) {
	l := DefaultLadder()
	for _, ra := range []RetryAfter{{Action: RetryAfterNone}, {Action: RetryAfterHonoured, Delay: duration.Duration(time.Minute)}} {
		for _, key := range []string{"evt_a/0/1", "evt_b/2/3", "x"} {
			for failed := 1; failed <= 8; failed++ {
				if a, b := Next(l, failed, ra, key), NextAt(l, failed, ra, unitFraction(key)); a != b {
					t.Errorf("Next(%d, %q) = %+v, NextAt = %+v", failed, key, a, b)
				}
			}
		}
	}
}

// jitter is the delay Next picks for a one-step ladder of base with jitter j, after the
// failed attempt whose jitter key is key.
func jitter(base time.Duration, j float64, key string) time.Duration {
	return Next(Ladder{Delays: duration.Of(base), Attempts: 2, Jitter: j}, 1, RetryAfter{}, key).Delay.Std()
}

// totalDelay is the sum of l's base delays: from the first attempt to the last without
// jitter or Retry-After.
func totalDelay(l Ladder) time.Duration {
	var total time.Duration
	for failed := 1; ; failed++ {
		d, ok := l.BaseDelay(failed)
		if !ok {
			return total
		}
		total += d
	}
}
