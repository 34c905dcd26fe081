package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

// IsolationResult compares the healthy endpoints' latency with and without a hanging one.
type IsolationResult struct {
	Healthy     int               `json:"healthy_endpoints"`
	Rate        float64           `json:"rate"`
	For         duration.Duration `json:"for"`
	HangTimeout duration.Duration `json:"hang_timeout"`
	// Baseline: the healthy endpoints alone; WithHang: the same load plus a hanging endpoint.
	Baseline Phase `json:"baseline"`
	WithHang Phase `json:"with_hang"`
	// HangRequests is how many requests the hanging endpoint took.
	HangRequests int `json:"hang_requests"`
	// P99Ratio is WithHang's p99 over Baseline's.
	P99Ratio float64 `json:"p99_ratio"`
}

func (e *env) isolation(ctx context.Context) (*IsolationResult, error) {
	const healthy = 9
	cfg := e.cfg
	res := &IsolationResult{Healthy: healthy, Rate: cfg.IsolationRate, For: cfg.IsolationFor, HangTimeout: cfg.HangTimeout}
	ok := func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusNoContent) }
	one := &herald.Overrides{Ladder: &policy.LadderOverride{Attempts: 1}}
	var eps []string
	for i := range healthy {
		id := e.endpointID(fmt.Sprintf("iso-%d", i))
		if err := e.putEndpoint(ctx, id, ok, one); err != nil {
			return nil, err
		}
		eps = append(eps, id)
	}
	done := make(chan struct{})
	defer close(done)
	hang := e.endpointID("iso-hang")
	hangO := &herald.Overrides{Ladder: &policy.LadderOverride{Attempts: 1}, Timeout: cfg.HangTimeout}
	if err := e.putEndpoint(ctx, hang, func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
		w.WriteHeader(http.StatusNoContent)
	}, hangO); err != nil {
		return nil, err
	}

	n := int(cfg.IsolationRate * cfg.IsolationFor.Std().Seconds())
	healthyRate := cfg.IsolationRate * healthy / (healthy + 1)
	run := func(withHang bool) (Phase, error) {
		nh := n * healthy / (healthy + 1)
		ids := newIDs(nh)
		sent := make(chan []time.Time, 1)
		errs := make(chan error, 2)
		go func() {
			at, err := e.sendEvents(ctx, ids, func(i int) string { return eps[i%healthy] }, e.cfg.Senders, healthyRate)
			sent <- at
			errs <- err
		}()
		var hangIDs []string
		if withHang {
			hangIDs = newIDs(n - nh)
			_, err := e.sendEvents(ctx, hangIDs, func(int) string { return hang }, e.cfg.Senders, cfg.IsolationRate-healthyRate)
			if err != nil {
				return Phase{}, err
			}
		}
		sentAt := <-sent
		if err := <-errs; err != nil {
			return Phase{}, err
		}
		waitUntil(ctx, arrivalTimeout(nh), func() bool { return e.rcv.allSeen(ids, 1) })
		if withHang {
			// Let the hung attempts end (timeout) before the next scenario.
			time.Sleep(cfg.HangTimeout.Std())
			res.HangRequests = len(e.rcv.arrivalsOf(hang))
			e.terminate(ctx, hangIDs)
		}
		return phaseOf(sentAt, e.rcv.firstSeen(ids)), nil
	}
	e.progress("isolation: %d healthy endpoints at %.0f/s for %s", healthy, healthyRate, cfg.IsolationFor)
	var err error
	if res.Baseline, err = run(false); err != nil {
		return nil, err
	}
	e.progress("isolation: the same plus one endpoint hanging %s, at %.0f/s", cfg.HangTimeout, cfg.IsolationRate-healthyRate)
	if res.WithHang, err = run(true); err != nil {
		return nil, err
	}
	res.P99Ratio = ratio(float64(res.WithHang.Latency.P99), float64(res.Baseline.Latency.P99))
	return res, nil
}
