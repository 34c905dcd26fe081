package bench

import (
	"context"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

// StormResult is how the second attempts of a mass failure spread out.
type StormResult struct {
	Events int               `json:"events"`
	Rung   duration.Duration `json:"rung"`
	Jitter float64           `json:"jitter"`
	// FirstSpread is how far apart the first attempts arrived (they are answered 503 together).
	FirstSpread duration.Duration `json:"first_spread"`
	// Second attempts: how many arrived, when the first and last did (after the 503s), and
	// how many arrived in each second after them.
	Seconds   int               `json:"second_attempts"`
	FirstAt   duration.Duration `json:"first_at"`
	LastAt    duration.Duration `json:"last_at"`
	PerSecond []int             `json:"per_second"`
	Peak      int               `json:"peak"`
	// PeakTarget is 1.25 × events spread evenly over the jitter window; EarliestTarget is
	// the start of that window.
	PeakTarget     float64           `json:"peak_target"`
	EarliestTarget duration.Duration `json:"earliest_target"`
	Delivered      int               `json:"delivered"`
}

// stormBreaker keeps the breaker from tripping, so the storm measures the ladder alone.
func stormBreaker() *policy.BreakerOverride {
	return &policy.BreakerOverride{ConsecutiveFailures: 10000, VolumeFailures: 10000}
}

func (e *env) storm(ctx context.Context) (*StormResult, error) {
	n, rung, jitter := e.cfg.StormEvents, e.cfg.StormRung.Std(), 0.2
	ep := e.endpointID("storm")
	// The first request of every event waits until all have arrived (or 10s), then they
	// are all answered 503 at the same moment; later requests get 204.
	var (
		mu       sync.Mutex
		arrived  int
		release  = make(chan struct{})
		once     sync.Once
		answered time.Time
	)
	open := func() {
		once.Do(func() {
			mu.Lock()
			answered = time.Now()
			mu.Unlock()
			close(release)
		})
	}
	a := func(w http.ResponseWriter, r *http.Request, k int) {
		if k > 1 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		mu.Lock()
		arrived++
		all := arrived >= n
		mu.Unlock()
		if all {
			open()
		}
		select {
		case <-release:
		case <-time.After(10 * time.Second):
			open()
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	o := &herald.Overrides{
		Ladder:      &policy.LadderOverride{Delays: duration.Of(rung), Attempts: 3, Jitter: &jitter},
		MaxInFlight: policy.MaxMaxInFlight,
		Breaker:     stormBreaker(),
	}
	if err := e.putEndpoint(ctx, ep, a, o); err != nil {
		return nil, err
	}
	ids := newIDs(n)
	if _, err := e.sendEvents(ctx, ids, func(int) string { return ep }, e.cfg.Senders, 0); err != nil {
		return nil, err
	}
	waitUntil(ctx, rung+rung/2+time.Minute, func() bool { return e.rcv.allSeen(ids, 2) })
	defer e.terminate(ctx, ids)

	mu.Lock()
	t0 := answered
	mu.Unlock()
	res := &StormResult{Events: n, Rung: duration.Duration(rung), Jitter: jitter,
		PeakTarget:     1.25 * float64(n) / (2 * jitter * rung.Seconds()),
		EarliestTarget: duration.Duration(time.Duration(float64(rung) * (1 - jitter)))}
	var firsts []time.Time
	for _, a := range e.rcv.arrivalsOf(ep) {
		switch a.N {
		case 1:
			firsts = append(firsts, a.At)
		case 2:
			d := a.At.Sub(t0)
			if res.Seconds == 0 || d < res.FirstAt.Std() {
				res.FirstAt = duration.Duration(d)
			}
			res.LastAt = max(res.LastAt, duration.Duration(d))
			res.Seconds++
			sec := int(math.Floor(d.Seconds()))
			if sec < 0 {
				sec = 0
			}
			for len(res.PerSecond) <= sec {
				res.PerSecond = append(res.PerSecond, 0)
			}
			res.PerSecond[sec]++
		}
	}
	f, l := span(firsts)
	res.FirstSpread = duration.Duration(l.Sub(f))
	for _, c := range res.PerSecond {
		res.Peak = max(res.Peak, c)
	}
	for _, c := range e.rcv.requests(ids) {
		if c >= 2 {
			res.Delivered++
		}
	}
	return res, nil
}
