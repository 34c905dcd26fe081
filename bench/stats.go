package bench

import (
	"math"
	"slices"
	"time"

	"github.com/heraldhq/herald/duration"
)

// Latency summarises a set of durations.
type Latency struct {
	Count int               `json:"count"`
	P50   duration.Duration `json:"p50"`
	P99   duration.Duration `json:"p99"`
	Max   duration.Duration `json:"max"`
}

// summarize returns the nearest-rank p50, p99 and max of ds.
func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return Latency{Count: len(s), P50: duration.Duration(rank(s, 0.50)), P99: duration.Duration(rank(s, 0.99)), Max: duration.Duration(s[len(s)-1])}
}

func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// between returns to[i]-from[i] for every i where both are set.
func between(from, to []time.Time) []time.Duration {
	var out []time.Duration
	for i := range from {
		if !from[i].IsZero() && !to[i].IsZero() {
			out = append(out, to[i].Sub(from[i]))
		}
	}
	return out
}

// span returns the earliest and latest non-zero times of ts.
func span(ts []time.Time) (first, last time.Time) {
	for _, t := range ts {
		if t.IsZero() {
			continue
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return first, last
}

func countSet(ts []time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.IsZero() {
			n++
		}
	}
	return n
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
