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
	Rotating   time.Time `json:"previous_secret_until,omitzero"`
	Overrides  Overrides `json:"overrides"`
	// HeaderNames are the names of the endpoint's custom headers (their values may be
	// credentials: never shown).
	HeaderNames []string `json:"header_names,omitempty"`
	// Types are the event types the endpoint subscribes to; none means every type.
	Types []string `json:"types,omitempty"`
	// Auth is the endpoint's authentication to its receiver, without its secrets; nil when
	// there is none.
	Auth *AuthView `json:"auth,omitempty"`
	// Filter and Transform are the endpoint's CEL expressions (none: empty).
	Filter    string    `json:"filter,omitempty"`
	Transform string    `json:"transform,omitempty"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	Counters  Report    `json:"counters"`
	// CountersSince is when the counters started.
	CountersSince time.Time `json:"counters_since,omitzero"`
	// CountsSpill, in the endpoint workflow's answer, is the newest stats shard spill its
	// own counters hold (EndpointCounts.IncludedIn); GetEndpoint clears it once it has
	// added the shard's counts.
	CountsSpill int64 `json:"counts_spill,omitempty"`

	// LimiterView is the circuit, the permits, the queue and the latencies, as the
	// endpoint's limiter shows them.
	policy.LimiterView
	// Error is set in a listing when the endpoint's state could not be read.
	Error string `json:"error,omitempty"`
}
