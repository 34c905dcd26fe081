package policy

import (
	"time"

	"github.com/heraldhq/herald/duration"
)

// LimiterView is the limiter as people see it. herald.EndpointState embeds it: these are
// fields of an endpoint's state on the wire.
type LimiterView struct {
	// Circuit is the circuit breaker's state.
	Circuit CircuitView `json:"circuit"`
	// InFlight is how many permits are out (attempts running or leased to workers).
	InFlight int `json:"in_flight"`
	// Cap is the current concurrency cap; MaxInFlight the configured one (the cap is
	// lower while the endpoint is slow).
	Cap         int `json:"cap"`
	MaxInFlight int `json:"max_in_flight"`
	// RateLimit is the most requests that may start per aligned second (0: no limit).
	RateLimit int `json:"rate_limit,omitempty"`
	// Leases are the blocks of permits held by workers and waiting deliveries.
	Leases []Lease `json:"leases,omitempty"`
	// Queue is how many deliveries wait for a permit or for the circuit to close.
	Queue int `json:"queue"`
	// QueueFullAt is when the queue was last full, while deliveries it turned away may
	// still wait for room (Overflow); zero otherwise.
	QueueFullAt time.Time `json:"queue_full_at,omitzero"`
	// P50 and P99 are attempt latencies over the recent window.
	P50 duration.Duration `json:"p50"`
	P99 duration.Duration `json:"p99"`
	Lifecycle
}

// CircuitView is the circuit breaker as people see it.
type CircuitView struct {
	// State is closed, open or half_open.
	State CircuitState `json:"state"`
	// Since is when the circuit entered State.
	Since time.Time `json:"since,omitzero"`
	// Reason says what tripped it, e.g. "5 consecutive failures".
	Reason string `json:"reason,omitempty"`
	// TrippedAt is when it last opened.
	TrippedAt time.Time `json:"tripped_at,omitzero"`
	// NextProbeAt is when the next probe may go (open only).
	NextProbeAt time.Time `json:"next_probe_at,omitzero"`
}

// Lifecycle is an endpoint's lifecycle as people see it. herald.EndpointState embeds it
// through LimiterView.
type Lifecycle struct {
	// Disabled is set while the endpoint is disabled: why, and since when.
	Disabled *Disablement `json:"disabled,omitempty"`
	// FailingSince is when the current spell of failed attempts began (none: zero).
	FailingSince time.Time `json:"failing_since,omitzero"`
}

// View summarizes the limiter at now.
func (g *Limiter) View(now time.Time) LimiterView {
	var live []Lease
	for _, l := range g.Ledger.Held {
		if l.Expires.After(now) {
			live = append(live, l)
		}
	}
	return LimiterView{
		Circuit: CircuitView{
			State:       g.Breaker.State(),
			Since:       g.Breaker.Since(),
			Reason:      g.Breaker.TripReason(),
			TrippedAt:   g.Breaker.TrippedAt,
			NextProbeAt: g.Breaker.NextProbeAt(),
		},
		InFlight:    g.Ledger.InUse(now),
		Cap:         g.Cap(),
		MaxInFlight: g.Capacity.Config.MaxInFlight,
		RateLimit:   g.Config.RateLimit,
		Leases:      live,
		Queue:       len(g.Ledger.Waiting),
		QueueFullAt: g.Overflow.FullAt,
		P50:         duration.Duration(g.Capacity.Percentile(now, 0.5)),
		P99:         duration.Duration(g.Capacity.Percentile(now, 0.99)),
		Lifecycle:   Lifecycle{Disabled: g.Disabled, FailingSince: g.FailingSince},
	}
}
