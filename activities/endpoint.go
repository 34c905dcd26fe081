package activities

import (
	"errors"
	"time"

	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
)

// Names the worker uses to talk to an endpoint workflow. Package workflows re-exports them.
const (
	// QueryEndpointConfig returns an endpoint's Endpoint, secrets included.
	QueryEndpointConfig = "config"
	// SignalEndpointReport carries a Report to an endpoint workflow.
	SignalEndpointReport = "report"
)

// EndpointWorkflowID is the workflow id of the endpoint workflow for endpoint id.
func EndpointWorkflowID(id string) string { return "endpoint:" + id }

// Endpoint is a registered receiver: where to send, how to sign, and its policy overrides.
// The endpoint workflow is its source of truth.
type Endpoint struct {
	ID string `json:"id"`
	// Tenant is the customer the endpoint belongs to (for the dashboard and tenant tokens).
	Tenant string           `json:"tenant"`
	URL    string           `json:"url"`
	Secret signature.Secret `json:"secret"`
	// PreviousSecret still signs, next to Secret, until PreviousUntil (secret rotation).
	PreviousSecret signature.Secret `json:"previous_secret,omitempty"`
	PreviousUntil  time.Time        `json:"previous_until,omitempty"`
	Overrides      Overrides        `json:"overrides"`
	Version        int              `json:"version"`
	CreatedAt      time.Time        `json:"created_at"`
	UpdatedAt      time.Time        `json:"updated_at"`
}

// Secrets returns the secrets that sign an attempt made at t: the current one first,
// then the previous one while its grace period lasts.
func (e Endpoint) Secrets(t time.Time) []signature.Secret {
	s := []signature.Secret{e.Secret}
	if e.PreviousSecret != "" && t.Before(e.PreviousUntil) {
		s = append(s, e.PreviousSecret)
	}
	return s
}

// Overrides are an endpoint's departures from the worker's Defaults; zero values keep the default.
type Overrides struct {
	Ladder     *policy.LadderOverride  `json:"ladder,omitempty"`
	RetryAfter *policy.RetryAfterRules `json:"retry_after,omitempty"`
	Retention  time.Duration           `json:"retention,omitempty"`
	Timeout    time.Duration           `json:"timeout,omitempty"`
	// MaxInFlight is the endpoint's concurrency cap (1..500; default 100).
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// Breaker changes some of the circuit breaker's settings.
	Breaker *policy.BreakerOverride `json:"breaker,omitempty"`
	// Capacity replaces the adaptive cap's settings (MaxInFlight, when set, still wins).
	Capacity *policy.CapacityConfig `json:"capacity,omitempty"`
}

// Defaults are the worker-wide policy values an endpoint uses unless it overrides them.
type Defaults struct {
	Ladder     policy.Ladder          `json:"ladder"`
	RetryAfter policy.RetryAfterRules `json:"retry_after"`
	// Retention is how long a dead letter waits for a replay before it expires.
	Retention time.Duration `json:"retention"`
	// Timeout bounds one attempt: connect, send, and read the response.
	Timeout time.Duration `json:"timeout"`
}

// DefaultDefaults are Herald's built-in defaults: the 8-attempt ladder with ±20% jitter,
// Retry-After honoured under 4h and capped up to 24h, 30 days of dead-letter retention and a
// 30 s attempt timeout.
func DefaultDefaults() Defaults {
	return Defaults{
		Ladder:     policy.DefaultLadder(),
		RetryAfter: policy.DefaultRetryAfterRules(),
		Retention:  30 * 24 * time.Hour,
		Timeout:    30 * time.Second,
	}
}

// Effective is the policy in force for one attempt: the defaults with the endpoint's overrides applied.
// The attempt returns it so that the delivery workflow decides from recorded values.
type Effective struct {
	Ladder     policy.Ladder          `json:"ladder"`
	RetryAfter policy.RetryAfterRules `json:"retry_after"`
	Retention  time.Duration          `json:"retention"`
	Timeout    time.Duration          `json:"timeout"`
}

// Apply returns the policy in force for an endpoint with overrides o.
func (d Defaults) Apply(o Overrides) Effective {
	e := Effective(d)
	if o.Ladder != nil {
		e.Ladder = d.Ladder.Apply(*o.Ladder)
	}
	if o.RetryAfter != nil {
		e.RetryAfter = *o.RetryAfter
	}
	if o.Retention > 0 {
		e.Retention = o.Retention
	}
	if o.Timeout > 0 {
		e.Timeout = o.Timeout
	}
	return e
}

// Merge sets the fields n sets, keeping the others.
func (o *Overrides) Merge(n Overrides) {
	if n.Ladder != nil {
		l := policy.LadderOverride{}
		if o.Ladder != nil {
			l = *o.Ladder
		}
		if n.Ladder.Delays != nil {
			l.Delays = n.Ladder.Delays
		}
		if n.Ladder.Attempts != 0 {
			l.Attempts = n.Ladder.Attempts
		}
		if n.Ladder.Jitter != nil {
			l.Jitter = n.Ladder.Jitter
		}
		o.Ladder = &l
	}
	if n.RetryAfter != nil {
		o.RetryAfter = n.RetryAfter
	}
	if n.Retention != 0 {
		o.Retention = n.Retention
	}
	if n.Timeout != 0 {
		o.Timeout = n.Timeout
	}
	if n.MaxInFlight != 0 {
		o.MaxInFlight = n.MaxInFlight
	}
	if n.Breaker != nil {
		b := policy.BreakerOverride{}
		if o.Breaker != nil {
			b = *o.Breaker
		}
		b.Merge(*n.Breaker)
		o.Breaker = &b
	}
	if n.Capacity != nil {
		o.Capacity = n.Capacity
	}
}

// ErrNoEndpoint means the endpoint is not registered.
var ErrNoEndpoint = errors.New("endpoint is not registered")
