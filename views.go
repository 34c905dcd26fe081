package herald

import (
	"time"

	"github.com/heraldhq/herald/policy"
)

// EndpointState is what the state query (QueryEndpointState) shows of an endpoint: no secrets.
type EndpointState struct {
	ID         string    `json:"id"`
	Tenant     string    `json:"tenant,omitempty"`
	Registered bool      `json:"registered"`
	URL        string    `json:"url,omitempty"`
	SecretHint string    `json:"secret_hint,omitempty"`
	Rotating   time.Time `json:"previous_secret_until,omitempty"`
	Overrides  Overrides `json:"overrides"`
	Version    int       `json:"version"`
	CreatedAt  time.Time `json:"created_at,omitempty"`
	UpdatedAt  time.Time `json:"updated_at,omitempty"`
	Counters   Report    `json:"counters"`
	// CountersSince is when the counters started.
	CountersSince time.Time `json:"counters_since,omitempty"`

	// Circuit is the circuit breaker's state.
	Circuit CircuitView `json:"circuit"`
	// InFlight is how many permits are out (attempts running or leased to workers).
	InFlight int `json:"in_flight"`
	// Cap is the current concurrency cap; MaxInFlight the configured one (the cap is
	// lower while the endpoint is slow).
	Cap         int `json:"cap"`
	MaxInFlight int `json:"max_in_flight"`
	// Leases are the blocks of permits held by workers and waiting deliveries.
	Leases []policy.Lease `json:"leases,omitempty"`
	// Queue is how many deliveries wait for a permit or for the circuit to close.
	Queue int `json:"queue"`
	// P50 and P99 are attempt latencies over the recent window.
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	// Error is set in a listing when the endpoint's state could not be read.
	Error string `json:"error,omitempty"`
}

// SetLimiter fills in what the limiter's view v shows: the circuit, the permits, the queue
// and the latencies.
func (s *EndpointState) SetLimiter(v policy.LimiterView) {
	s.Circuit = CircuitView{State: v.Circuit, Since: v.Since, Reason: v.Reason, TrippedAt: v.TrippedAt, NextProbeAt: v.NextProbeAt}
	s.InFlight, s.Cap, s.MaxInFlight, s.Queue, s.P50, s.P99 = v.InFlight, v.Cap, v.MaxInFlight, v.Queue, v.P50, v.P99
	s.Leases = v.Leases
}

// CircuitView is the circuit breaker as people see it (the circuit part of policy.LimiterView).
type CircuitView struct {
	// State is closed, open or half_open.
	State policy.CircuitState `json:"state"`
	// Since is when the circuit entered State.
	Since time.Time `json:"since,omitempty"`
	// Reason says what tripped it, e.g. "5 consecutive failures".
	Reason string `json:"reason,omitempty"`
	// TrippedAt is when it last opened.
	TrippedAt time.Time `json:"tripped_at,omitempty"`
	// NextProbeAt is when the next probe may go (open only).
	NextProbeAt time.Time `json:"next_probe_at,omitempty"`
}
