package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald"
)

// HotResult compares one hot endpoint with the same load spread over ten: HotEvents
// events from Senders concurrent senders, all to one endpoint (cap HotCap), then over ten
// endpoints (cap HotCap each), in the same run.
type HotResult struct {
	Events  int `json:"events"`
	Senders int `json:"senders"`
	Cap     int `json:"cap"`
	// One is the load to one endpoint; Ten the same load over ten.
	One Phase `json:"one_endpoint"`
	Ten Phase `json:"ten_endpoints"`
	// P99Ratio is One's full-load p99 over Ten's (target ≤ 1.5); RateRatio One's rate over
	// Ten's.
	P99Ratio  float64 `json:"p99_ratio"`
	RateRatio float64 `json:"rate_ratio"`
}

// hot runs the hot scenario: each layout is warmed up with 100 events, then takes the load.
func (e *env) hot(ctx context.Context) (*HotResult, error) {
	cfg := e.cfg
	res := &HotResult{Events: cfg.HotEvents, Senders: cfg.Senders, Cap: cfg.HotCap}
	one := []string{e.endpointID("hot-one")}
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = e.endpointID(fmt.Sprintf("hot-%d", i))
	}
	for _, id := range append(one, ten...) {
		if err := e.putEndpoint(ctx, id, noContent, &herald.Overrides{MaxInFlight: cfg.HotCap}); err != nil {
			return nil, fmt.Errorf("register %s: %w", id, err)
		}
	}
	load := func(name string, eps []string) (Phase, error) {
		endpoint := func(i int) string { return eps[i%len(eps)] }
		warm := newIDs(min(100, cfg.HotEvents))
		if _, err := e.sendEvents(ctx, warm, endpoint, cfg.Senders, 0); err != nil {
			return Phase{}, err
		}
		waitUntil(ctx, time.Minute, func() bool { return e.rcv.allSeen(warm, 1) })
		e.progress("hot: %d events from %d senders to %s", cfg.HotEvents, cfg.Senders, name)
		ids := newIDs(cfg.HotEvents)
		sentAt, err := e.sendEvents(ctx, ids, endpoint, cfg.Senders, 0)
		if err != nil {
			return Phase{}, err
		}
		if !waitUntil(ctx, arrivalTimeout(len(ids)), func() bool { return e.rcv.allSeen(ids, 1) }) {
			e.progress("hot: not every event to %s arrived in time", name)
		}
		return phaseOf(sentAt, e.rcv.firstSeen(ids)), nil
	}
	var err error
	if res.Ten, err = load("ten endpoints", ten); err != nil {
		return nil, err
	}
	if res.One, err = load("one endpoint", one); err != nil {
		return nil, err
	}
	res.P99Ratio = ratio(float64(res.One.Latency.P99), float64(res.Ten.Latency.P99))
	res.RateRatio = ratio(res.One.PerSecond, res.Ten.PerSecond)
	return res, nil
}

// hotRows are the hot scenario's rows of the table.
func hotRows(h *HotResult) []Row {
	s := Hot
	return []Row{
		phaseRow(s, fmt.Sprintf("%d events, %d senders, over 10 endpoints (cap %d each)", h.Events, h.Senders, h.Cap), h.Ten),
		phaseRow(s, fmt.Sprintf("the same to one endpoint (cap %d)", h.Cap), h.One),
		Row{s, "one endpoint ÷ ten: full-load p99", fmt.Sprintf("%.2f×", h.P99Ratio), "≤ 1.5×", verdict(h.P99Ratio > 0 && h.P99Ratio <= 1.5)},
		Row{s, "one endpoint ÷ ten: rate", fmt.Sprintf("%.2f×", h.RateRatio), "", ""},
	}
}
