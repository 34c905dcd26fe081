package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/heraldhq/herald/duration"
)

// Limits on an endpoint's configured concurrency cap.
const (
	// MinMaxInFlight is the lowest cap: even a degraded endpoint gets one attempt at a time.
	MinMaxInFlight = 1
	// MaxMaxInFlight is the highest cap a customer may ask for.
	MaxMaxInFlight = 500
	// DefaultMaxInFlight is the cap of an endpoint that asked for nothing.
	DefaultMaxInFlight = 100
)

// maxWindowSamples bounds the latency window so the state stays small in workflow history.
const maxWindowSamples = 10000

// CapacityConfig holds the numbers of the adaptive per-endpoint concurrency cap.
type CapacityConfig struct {
	// MaxInFlight is the configured cap, MinMaxInFlight to MaxMaxInFlight.
	MaxInFlight int `json:"max_in_flight"`
	// SlowP99 is the p99 latency above which the cap halves.
	SlowP99 duration.Duration `json:"slow_p99"`
	// RecoverP99 is the p99 latency below which a reduced cap doubles back toward MaxInFlight.
	RecoverP99 duration.Duration `json:"recover_p99"`
	// WindowSamples is how many of the latest attempts the latency window holds at most.
	WindowSamples int `json:"window_samples"`
	// Window is how old a sample may be before it leaves the latency window.
	Window duration.Duration `json:"window"`
	// MinChangeInterval is the least time between two changes of the cap.
	MinChangeInterval duration.Duration `json:"min_change_interval"`
	// MinSamples is how many samples observed since the last change a change needs.
	MinSamples int `json:"min_samples"`
}

// DefaultCapacityConfig returns the retry-ladder article's numbers (the README's "Endpoint
// protection"): cap 100, halved when p99 passes 3s, doubled back when p99 is under 1.5s,
// over the last 100 attempts or 5 minutes; at most one change per 30s, each judged on at
// least 10 attempts finished since the previous change.
func DefaultCapacityConfig() CapacityConfig {
	return CapacityConfig{
		MaxInFlight:       DefaultMaxInFlight,
		SlowP99:           duration.Duration(3 * time.Second),
		RecoverP99:        duration.Duration(1500 * time.Millisecond),
		WindowSamples:     100,
		Window:            duration.Duration(5 * time.Minute),
		MinChangeInterval: duration.Duration(30 * time.Second),
		MinSamples:        10,
	}
}

// Validate reports every field of c that is out of range, or nil.
func (c CapacityConfig) Validate() error {
	var errs []error
	if err := ValidateMaxInFlight(c.MaxInFlight); err != nil {
		errs = append(errs, err)
	}
	if c.SlowP99 <= 0 {
		errs = append(errs, fmt.Errorf("slow p99 %s is not positive; use a latency such as 3s", c.SlowP99))
	}
	if c.RecoverP99 <= 0 || c.RecoverP99 >= c.SlowP99 {
		errs = append(errs, fmt.Errorf("recover p99 %s must be positive and below the slow p99 %s; use a latency such as half of it", c.RecoverP99, c.SlowP99))
	}
	if c.WindowSamples < 1 || c.WindowSamples > maxWindowSamples {
		errs = append(errs, fmt.Errorf("window samples %d is out of range; use 1 to %d", c.WindowSamples, maxWindowSamples))
	}
	if c.Window <= 0 {
		errs = append(errs, fmt.Errorf("latency window %s is not positive; use a duration such as 5m", c.Window))
	}
	if c.MinChangeInterval < 0 {
		errs = append(errs, fmt.Errorf("min change interval %s is negative; use 0 or a duration such as 30s", c.MinChangeInterval))
	}
	if c.MinSamples < 1 || c.MinSamples > c.WindowSamples {
		errs = append(errs, fmt.Errorf("min samples %d is out of range; use 1 to the window samples (%d)", c.MinSamples, c.WindowSamples))
	}
	return errors.Join(errs...)
}

// ValidateMaxInFlight checks an endpoint's configured concurrency cap (max_in_flight on
// the wire): MinMaxInFlight to MaxMaxInFlight. It is the one check of that number, for a
// put's change and for a whole limiter configuration alike.
func ValidateMaxInFlight(n int) error {
	switch {
	case n > MaxMaxInFlight:
		return fmt.Errorf("max_in_flight %d is above %d: ask for %d..%d concurrent attempts per endpoint", n, MaxMaxInFlight, MinMaxInFlight, MaxMaxInFlight)
	case n < MinMaxInFlight:
		return fmt.Errorf("max_in_flight %d is below %d: every endpoint needs %d..%d concurrent attempts", n, MinMaxInFlight, MinMaxInFlight, MaxMaxInFlight)
	}
	return nil
}

// LatencySample is one finished attempt's latency.
type LatencySample struct {
	// At is when the attempt finished.
	At time.Time `json:"at,omitzero"`
	// Latency is how long the attempt took.
	Latency duration.Duration `json:"latency"`
}

// Capacity is one endpoint's adaptive concurrency cap. It is a value with exported fields
// so that it round-trips through encoding/json (continue-as-new); read it through its methods.
//
// The latency window is the last WindowSamples samples no older than Window. The cap halves
// (never below 1) when p99 passes SlowP99 and doubles (never above MaxInFlight) when p99 is
// under RecoverP99. Each change is judged only on samples observed after the previous change,
// needs at least MinSamples of them and MinChangeInterval since that change: a slow minute
// already acted on cannot halve the cap again.
type Capacity struct {
	// Config is the configuration.
	Config CapacityConfig `json:"config"`
	// Limit is the current cap.
	Limit int `json:"limit"`
	// Samples is the latency window, oldest first.
	Samples []LatencySample `json:"samples,omitempty"`
	// Fresh counts the newest samples observed since the last change.
	Fresh int `json:"fresh"`
	// ChangedAt is when the cap last changed; zero if never.
	ChangedAt time.Time `json:"changed_at,omitzero"`
}

// NewCapacity returns a cap at c.MaxInFlight with an empty window. Check c with Validate first.
func NewCapacity(c CapacityConfig) Capacity {
	return Capacity{Config: c, Limit: max(c.MaxInFlight, MinMaxInFlight)}
}

// Cap returns the current cap, never below 1.
func (c *Capacity) Cap() int {
	return max(c.Limit, MinMaxInFlight)
}

// Observe adds one finished attempt's latency at now and adjusts the cap. It reports
// whether the cap changed.
func (c *Capacity) Observe(now time.Time, latency time.Duration) bool {
	latency = max(latency, 0)
	window := c.window(now)
	samples := make([]LatencySample, 0, len(window)+1)
	samples = append(samples, window...)
	samples = append(samples, LatencySample{At: now, Latency: duration.Duration(latency)})
	if n := c.Config.WindowSamples; n > 0 && len(samples) > n {
		samples = samples[len(samples)-n:]
	}
	c.Samples = samples
	c.Fresh = min(c.Fresh+1, len(samples))

	if c.Fresh < c.Config.MinSamples {
		return false
	}
	if !c.ChangedAt.IsZero() && now.Sub(c.ChangedAt) < c.Config.MinChangeInterval.Std() {
		return false
	}
	p99 := percentile(samples[len(samples)-c.Fresh:], 0.99)
	limit := c.Cap()
	switch {
	case p99 > c.Config.SlowP99.Std() && limit > MinMaxInFlight:
		limit = max(limit/2, MinMaxInFlight)
	case p99 < c.Config.RecoverP99.Std() && limit < c.Config.MaxInFlight:
		limit = min(limit*2, c.Config.MaxInFlight)
	default:
		return false
	}
	c.Limit = limit
	c.ChangedAt = now
	c.Fresh = 0
	return true
}

// Percentile returns the q-quantile (0 ≤ q ≤ 1, nearest rank) of the latencies in the
// window at now: Percentile(now, 0.5) is p50, Percentile(now, 0.99) is p99. It returns 0
// when the window is empty.
func (c *Capacity) Percentile(now time.Time, q float64) time.Duration {
	return percentile(c.window(now), q)
}

// Reconfigure replaces the configuration. A cap at the old maximum follows the new one; a
// reduced cap stays reduced but never above the new maximum.
func (c *Capacity) Reconfigure(cfg CapacityConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if c.Cap() >= c.Config.MaxInFlight {
		c.Limit = cfg.MaxInFlight
	} else {
		c.Limit = min(c.Cap(), cfg.MaxInFlight)
	}
	c.Config = cfg
	if n := cfg.WindowSamples; len(c.Samples) > n {
		c.Samples = append([]LatencySample(nil), c.Samples[len(c.Samples)-n:]...)
		c.Fresh = min(c.Fresh, n)
	}
	return nil
}

// window returns the samples less than Window old at now; it shares c.Samples, read only.
func (c *Capacity) window(now time.Time) []LatencySample {
	i := 0
	for i < len(c.Samples) && now.Sub(c.Samples[i].At) >= c.Config.Window.Std() {
		i++
	}
	return c.Samples[i:]
}

// percentile returns the nearest-rank q-quantile of the samples' latencies, 0 if none.
func percentile(samples []LatencySample, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	if math.IsNaN(q) || q < 0 {
		q = 0
	}
	q = min(q, 1)
	ls := make([]time.Duration, len(samples))
	for i, s := range samples {
		ls[i] = s.Latency.Std()
	}
	slices.Sort(ls)
	rank := int(math.Ceil(q * float64(len(ls))))
	return ls[max(rank-1, 0)]
}
