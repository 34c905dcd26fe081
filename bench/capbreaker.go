package bench

import (
	"context"
	"net/http"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

// CapResult is what a capped endpoint's receiver saw.
type CapResult struct {
	Events int               `json:"events"`
	Cap    int               `json:"cap"`
	Delay  duration.Duration `json:"receiver_delay"`
	// MaxConcurrent is the most requests the receiver had in progress at once.
	MaxConcurrent int   `json:"max_concurrent"`
	Delivery      Phase `json:"delivery"`
}

func (e *env) capScenario(ctx context.Context) (*CapResult, error) {
	cfg := e.cfg
	ep := e.endpointID("cap")
	delay := cfg.CapDelay.Std()
	if err := e.putEndpoint(ctx, ep, func(w http.ResponseWriter, _ *http.Request, _ int) {
		time.Sleep(delay)
		w.WriteHeader(http.StatusNoContent)
	}, &herald.Overrides{MaxInFlight: cfg.CapLimit}); err != nil {
		return nil, err
	}
	ids := newIDs(cfg.CapEvents)
	sentAt, err := e.sendEvents(ctx, ids, func(int) string { return ep }, cfg.Senders, 0)
	if err != nil {
		return nil, err
	}
	waitUntil(ctx, arrivalTimeout(len(ids))+time.Duration(len(ids))*delay, func() bool { return e.rcv.allSeen(ids, 1) })
	defer e.terminate(ctx, ids)
	return &CapResult{Events: len(ids), Cap: cfg.CapLimit, Delay: duration.Duration(delay),
		MaxConcurrent: e.rcv.maxInFlight(ep), Delivery: phaseOf(sentAt, e.rcv.firstSeen(ids))}, nil
}

// CircuitChange is a circuit state the endpoint reported, from when.
type CircuitChange struct {
	State string    `json:"state"`
	Since time.Time `json:"since,omitzero"`
	Seen  time.Time `json:"seen,omitzero"`
}

// BreakerResult is how many requests reached an endpoint failing every request, and when.
type BreakerResult struct {
	Events     int               `json:"events"`
	For        duration.Duration `json:"for"`
	ProbeDelay duration.Duration `json:"probe_delay"`
	// Requests reached the receiver in all; BeforeTrip before the circuit first opened;
	// WhileOpen while it was open. OpenPeriods is how many times it (re)opened: each
	// allows one probe.
	Requests    int `json:"requests"`
	BeforeTrip  int `json:"before_trip"`
	WhileOpen   int `json:"while_open"`
	OpenPeriods int `json:"open_periods"`
	// Timeline is every circuit state the endpoint reported; empty when it reports none.
	Timeline []CircuitChange `json:"timeline"`
	// Reported is false when the endpoint workflow reported no circuit state at all.
	Reported bool `json:"reported"`
	// Start is when the first event was sent: the timeline's origin.
	Start time.Time `json:"start,omitzero"`
	// Arrivals are the requests' times after Start, with the circuit state then.
	Arrivals []BreakerArrival `json:"arrivals"`
}

// BreakerArrival is one request to the failing endpoint.
type BreakerArrival struct {
	At    Seconds `json:"at"`
	State string  `json:"state"`
}

func (e *env) breaker(ctx context.Context) (*BreakerResult, error) {
	cfg := e.cfg
	ep := e.endpointID("breaker")
	b := policy.DefaultBreakerConfig()
	b.ProbeDelay, b.MaxProbeDelay = cfg.ProbeDelay, 4*cfg.ProbeDelay
	b.ProbeTimeout = duration.Duration(max(10*time.Second, 2*cfg.ProbeDelay.Std()))
	jitter := 0.2
	bo := b.Override()
	o := &herald.Overrides{
		Breaker: &bo,
		Ladder:  &policy.LadderOverride{Delays: duration.Of(time.Second), Attempts: 4, Jitter: &jitter},
	}
	if err := e.putEndpoint(ctx, ep, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}, o); err != nil {
		return nil, err
	}
	res := &BreakerResult{Events: cfg.BreakerEvents, For: cfg.BreakerFor, ProbeDelay: cfg.ProbeDelay}
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			st, err := e.starter.GetEndpoint(ctx, ep)
			if err == nil && st.Circuit.State != "" {
				res.Reported = true
				c := st.Circuit
				if k := len(res.Timeline); k == 0 || res.Timeline[k-1].State != string(c.State) || !res.Timeline[k-1].Since.Equal(c.Since) {
					res.Timeline = append(res.Timeline, CircuitChange{State: string(c.State), Since: c.Since, Seen: time.Now()})
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	ids := newIDs(cfg.BreakerEvents)
	res.Start = time.Now()
	rate := float64(cfg.BreakerEvents) / (cfg.BreakerFor.Std().Seconds() / 3)
	_, err := e.sendEvents(ctx, ids, func(int) string { return ep }, cfg.Senders, rate)
	if err == nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(cfg.BreakerFor * 2 / 3)):
		}
	}
	close(stop)
	<-polled
	e.terminate(ctx, ids)
	if err != nil {
		return nil, err
	}
	arr := e.rcv.arrivalsOf(ep)
	res.Requests = len(arr)
	for _, a := range arr {
		state := stateAt(res.Timeline, a.At)
		res.Arrivals = append(res.Arrivals, BreakerArrival{At: secs(a.At.Sub(res.Start)), State: state})
		switch {
		case state == "" || (state == string(policy.CircuitClosed) && !opened(res.Timeline, a.At)):
			res.BeforeTrip++
		case state == string(policy.CircuitOpen):
			res.WhileOpen++
		}
	}
	for _, c := range res.Timeline {
		if c.State == string(policy.CircuitOpen) {
			res.OpenPeriods++
		}
	}
	return res, nil
}

// stateAt is the circuit state in force at t by the endpoint's own timestamps.
func stateAt(tl []CircuitChange, t time.Time) string {
	s := ""
	for _, c := range tl {
		if !c.Since.After(t) {
			s = c.State
		}
	}
	return s
}

// opened reports whether the circuit had opened before t.
func opened(tl []CircuitChange, t time.Time) bool {
	for _, c := range tl {
		if c.State == string(policy.CircuitOpen) && !c.Since.After(t) {
			return true
		}
	}
	return false
}
