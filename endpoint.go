package herald

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/expr"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
)

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
	PreviousUntil  time.Time        `json:"previous_until,omitzero"`
	Overrides      Overrides        `json:"overrides"`
	// Headers are custom headers every attempt carries, sorted by name (NormalizeHeaders).
	Headers []Header `json:"headers,omitempty"`
	// Types are the event types the endpoint receives when events are sent to its tenant:
	// exact names, prefixes such as "order.*", or "*"; none means every type
	// (policy.MatchesType).
	Types []string `json:"types,omitempty"`
	// Auth is how Herald authenticates to the receiver (basic auth, OAuth2, a client
	// certificate); its secrets are never shown (EndpointAuth.View).
	Auth EndpointAuth `json:"auth,omitzero"`
	// Filter is a CEL expression over the event (package expr) that must give true for an
	// event sent to the tenant to go to this endpoint; empty lets every subscribed type in.
	Filter string `json:"filter,omitempty"`
	// Transform is a CEL expression that shapes each attempt's request (expr.Transform):
	// its body, headers, or a cancellation; empty sends Herald's envelope.
	Transform string    `json:"transform,omitempty"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
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

// ErrNoEndpoint means the endpoint is not registered.
var ErrNoEndpoint = errors.New("endpoint is not registered")

// Overrides are an endpoint's departures from the worker's defaults; zero values keep the
// default. Overrides merge per field (Merge) wherever they are changed: CLI, API and
// endpoint workflow alike.
type Overrides struct {
	Ladder     *policy.LadderOverride  `json:"ladder,omitempty"`
	RetryAfter *policy.RetryAfterRules `json:"retry_after,omitempty"`
	Retention  Duration                `json:"retention,omitempty"`
	Timeout    Duration                `json:"timeout,omitempty"`
	// MaxInFlight is the endpoint's concurrency cap (policy.MinMaxInFlight..MaxMaxInFlight;
	// default policy.DefaultMaxInFlight).
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// Breaker changes some of the circuit breaker's settings.
	Breaker *policy.BreakerOverride `json:"breaker,omitempty"`
	// Capacity replaces the adaptive cap's settings (MaxInFlight, when set, still wins).
	Capacity *policy.CapacityConfig `json:"capacity,omitempty"`
	// RateLimit is the most requests that may start per second (1..policy.MaxRateLimit);
	// nil is no rate limit. In a change, a pointer to 0 removes the limit.
	RateLimit *int `json:"rate_limit,omitempty"`
	// DisableAfter is how long every attempt must fail before the endpoint is disabled
	// (default policy.DefaultDisableAfter).
	DisableAfter Duration `json:"disable_after,omitempty"`
	// OrderingOnDeadLetter is what a dead letter at the head of an ordering key does:
	// OrderingBlock (the default) or OrderingSkip.
	OrderingOnDeadLetter string `json:"ordering_on_dead_letter,omitempty"`
}

// Merge sets the fields n sets, keeping the others; the ladder and the breaker merge
// field by field too.
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
	if n.RateLimit != nil {
		o.RateLimit = nil
		if v := *n.RateLimit; v != 0 {
			o.RateLimit = &v
		}
	}
	if n.DisableAfter != 0 {
		o.DisableAfter = n.DisableAfter
	}
	if n.OrderingOnDeadLetter != "" {
		o.OrderingOnDeadLetter = n.OrderingOnDeadLetter
	}
}

// Limiter is the configuration of the limiter (breaker, cap, leases, queue) of an endpoint
// with overrides o.
func (o Overrides) Limiter() policy.LimiterConfig {
	c := policy.DefaultLimiterConfig()
	if o.Breaker != nil {
		c.Breaker = c.Breaker.Apply(*o.Breaker)
	}
	if o.Capacity != nil {
		c.Capacity = *o.Capacity
	}
	if o.MaxInFlight != 0 {
		c.Capacity.MaxInFlight = o.MaxInFlight
	}
	if o.RateLimit != nil {
		c.RateLimit = *o.RateLimit
	}
	c.DisableAfter = o.DisableAfter
	return c
}

// Validate checks o as the whole of an endpoint's overrides: every setting in range, and
// the breaker and cap they make together. It is pure: the endpoint workflow runs it on the
// overrides a put would leave, and the starter on a put's own overrides before anything
// is started (ValidateChange).
func (o Overrides) Validate() error {
	if err := o.ValidateChange(); err != nil {
		return err
	}
	return o.Limiter().Validate()
}

// ValidateChange checks the settings o gives, each on its own: what a put may be refused
// for before the endpoint's stored overrides are known. The breaker and the cap, whose
// settings depend on each other, are checked once merged (Validate).
func (o Overrides) ValidateChange() error {
	if err := ValidateOrderingOnDeadLetter(o.OrderingOnDeadLetter); err != nil {
		return err
	}
	if o.Ladder != nil {
		if err := o.Ladder.CheckBounds(); err != nil {
			return err
		}
		if err := policy.DefaultLadder().Apply(*o.Ladder).Validate(); err != nil {
			return fmt.Errorf("ladder: %w", err)
		}
	}
	if o.RetryAfter != nil {
		if err := cmp.Or(o.RetryAfter.CheckBounds(), o.RetryAfter.Validate()); err != nil {
			return fmt.Errorf("retry-after: %w", err)
		}
	}
	if o.Breaker != nil {
		if err := o.Breaker.CheckBounds(); err != nil {
			return fmt.Errorf("breaker: %w", err)
		}
	}
	if o.Timeout != 0 && (o.Timeout.Std() < time.Second || o.Timeout.Std() > MaxAttemptTimeout) {
		return fmt.Errorf("timeout %s is outside 1s..%s", o.Timeout, MaxAttemptTimeout)
	}
	if o.Retention != 0 {
		if err := policy.ValidateRetention(o.Retention.Std()); err != nil {
			return err
		}
	}
	if o.Capacity != nil {
		if err := cmp.Or(o.Capacity.CheckBounds(), o.Capacity.Validate()); err != nil {
			return fmt.Errorf("capacity: %w", err)
		}
	}
	if o.DisableAfter != 0 {
		if err := policy.ValidateDisableAfter(o.DisableAfter.Std()); err != nil {
			return err
		}
	}
	if o.MaxInFlight != 0 {
		if err := policy.ValidateMaxInFlight(o.MaxInFlight); err != nil {
			return err
		}
	}
	if o.RateLimit != nil {
		if err := policy.ValidateRateLimit(*o.RateLimit); err != nil {
			return err
		}
	}
	return nil
}

// Settings are the policy values an attempt runs with: the worker's defaults, or those
// with an endpoint's overrides applied (Apply). An attempt's Result carries them, so that
// the delivery workflow decides from recorded values.
type Settings struct {
	Ladder     policy.Ladder          `json:"ladder"`
	RetryAfter policy.RetryAfterRules `json:"retry_after"`
	// Retention is how long a dead letter waits for a replay before it expires.
	Retention Duration `json:"retention"`
	// Timeout bounds one attempt: connect, send, and read the response.
	Timeout Duration `json:"timeout"`
	// OrderingOnDeadLetter is the endpoint's OrderingOnDeadLetter ("" is OrderingBlock).
	OrderingOnDeadLetter string `json:"ordering_on_dead_letter,omitempty"`
}

// DefaultSettings are Herald's built-in defaults: the 8-attempt ladder with ±20% jitter,
// Retry-After honoured under 4h and capped up to 24h, 30 days of dead-letter retention and a
// 30 s attempt timeout.
func DefaultSettings() Settings {
	return Settings{
		Ladder:     policy.DefaultLadder(),
		RetryAfter: policy.DefaultRetryAfterRules(),
		Retention:  duration.Duration(30 * 24 * time.Hour),
		Timeout:    duration.Duration(30 * time.Second),
	}
}

// Apply returns the settings in force for an endpoint with overrides o, s being the
// worker's defaults.
func (s Settings) Apply(o Overrides) Settings {
	e := s
	if o.Ladder != nil {
		e.Ladder = s.Ladder.Apply(*o.Ladder)
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
	if o.OrderingOnDeadLetter != "" {
		e.OrderingOnDeadLetter = o.OrderingOnDeadLetter
	}
	return e
}

// Validate checks s as a worker's defaults.
func (s Settings) Validate() error {
	if err := s.Ladder.Validate(); err != nil {
		return fmt.Errorf("default ladder: %w", err)
	}
	if err := s.RetryAfter.Validate(); err != nil {
		return fmt.Errorf("default retry-after rules: %w", err)
	}
	if s.Timeout <= 0 || s.Timeout.Std() > MaxAttemptTimeout {
		return fmt.Errorf("attempt timeout %s is outside 1s..%s", s.Timeout, MaxAttemptTimeout)
	}
	if s.Retention <= 0 {
		return fmt.Errorf("dead-letter retention %s must be positive", s.Retention)
	}
	return nil
}

// PutEndpointRequest registers an endpoint or changes it; empty fields keep what is stored.
type PutEndpointRequest struct {
	ID string `json:"id"`
	// URL is required when registering.
	URL string `json:"url,omitempty"`
	// Tenant sets the customer the endpoint belongs to; empty keeps it ("default" for a new endpoint).
	Tenant string `json:"tenant,omitempty"`
	// Secret replaces the signing secret at once, with no grace period.
	Secret signature.Secret `json:"secret,omitempty"`
	// DefaultSecret is used only when the endpoint has no secret yet (a new endpoint).
	DefaultSecret signature.Secret `json:"default_secret,omitempty"`
	// RotateTo makes a new secret current; the old one keeps signing until RotateGrace has passed.
	RotateTo    signature.Secret `json:"rotate_to,omitempty"`
	RotateGrace Duration         `json:"rotate_grace,omitempty"`
	// Overrides sets the policy overrides it gives, keeping the others (Overrides.Merge).
	Overrides *Overrides `json:"overrides,omitempty"`
	// ClearOverrides drops every override first, so the worker's defaults apply.
	ClearOverrides bool `json:"clear_overrides,omitempty"`
	// Headers, when set, replace the endpoint's custom headers (an empty list removes them).
	Headers *[]Header `json:"headers,omitempty"`
	// Types replaces the event types the endpoint subscribes to; nil keeps them, ["*"]
	// subscribes to every type (policy.ValidateTypePatterns).
	Types []string `json:"types,omitempty"`
	// Filter, when set, replaces the endpoint's filter (a CEL expression over the event,
	// package expr); an empty string removes it.
	Filter *string `json:"filter,omitempty"`
	// Transform, when set, replaces the endpoint's transformation (expr.Transform); an
	// empty string removes it.
	Transform *string `json:"transform,omitempty"`
	// CreateOnly refuses the put if the endpoint is registered already, so that
	// registering an id cannot change (or take over) an endpoint that has it. The endpoint
	// workflow checks it, atomically with the put.
	CreateOnly bool `json:"create_only,omitempty"`
	// Auth, when set, replaces the parts of the endpoint's authentication it gives
	// (EndpointAuth.Merge).
	Auth *EndpointAuth `json:"auth,omitempty"`
	// ClearAuth drops the endpoint's authentication first.
	ClearAuth bool `json:"clear_auth,omitempty"`
}

// Validate makes the structural checks of a put: everything but the URL's address, which
// the worker checks with its SSRF policy. registered says whether the endpoint exists
// already. Errors name JSON fields, never command-line flags.
func (req PutEndpointRequest) Validate(registered bool) error {
	if err := ValidateEndpointID(req.ID); err != nil {
		return err
	}
	if req.Tenant != "" {
		if err := validateEndpointTenant(req.ID, req.Tenant); err != nil {
			return err
		}
	}
	if req.URL == "" && !registered {
		return fmt.Errorf("endpoint %s is not registered yet: give its URL", req.ID)
	}
	if len(req.URL) > MaxURLBytes {
		return fmt.Errorf("endpoint %s: the URL is %d bytes long; the limit is %d", req.ID, len(req.URL), MaxURLBytes)
	}
	for _, s := range []signature.Secret{req.Secret, req.DefaultSecret, req.RotateTo} {
		if s == "" {
			continue
		}
		if _, err := signature.ParseSecret(string(s)); err != nil {
			return fmt.Errorf("endpoint %s: %w", req.ID, err)
		}
	}
	if req.Secret == "" && req.DefaultSecret == "" && req.RotateTo == "" && !registered {
		return fmt.Errorf("endpoint %s: a new endpoint needs a signing secret", req.ID)
	}
	if req.Secret != "" && req.RotateTo != "" {
		return errors.New("give either a new secret or a secret to rotate to, not both")
	}
	if req.RotateTo != "" && !registered {
		return fmt.Errorf("endpoint %s is not registered yet: there is no secret to rotate", req.ID)
	}
	if err := policy.ValidateGrace(req.RotateGrace.Std()); err != nil {
		return fmt.Errorf("endpoint %s: %w", req.ID, err)
	}
	if o := req.Overrides; o != nil {
		if err := o.ValidateChange(); err != nil {
			return fmt.Errorf("endpoint %s: %w", req.ID, err)
		}
	}
	if req.Headers != nil {
		hs, err := NormalizeHeaders(*req.Headers)
		if err != nil {
			return fmt.Errorf("endpoint %s: %w", req.ID, err)
		}
		if !slices.Equal(hs, *req.Headers) {
			return fmt.Errorf("endpoint %s: headers must have canonical names, sorted by name (NormalizeHeaders)", req.ID)
		}
	}
	if err := policy.ValidateTypePatterns(req.Types); err != nil {
		return fmt.Errorf("endpoint %s: types: %w", req.ID, err)
	}
	if req.Auth != nil {
		if err := req.Auth.Validate(); err != nil {
			return fmt.Errorf("endpoint %s: %w", req.ID, err)
		}
	}
	if err := ValidateExpressions(req.Filter, req.Transform); err != nil {
		return fmt.Errorf("endpoint %s: %w", req.ID, err)
	}
	return nil
}

// ValidateExpressions compiles and type-checks a put's filter and transformation (nil or
// empty: nothing to check); an error names the line and column of the expression's issue.
func ValidateExpressions(filter, transform *string) error {
	if filter != nil && *filter != "" {
		if err := expr.Check(expr.KindFilter, *filter); err != nil {
			return err
		}
	}
	if transform != nil && *transform != "" {
		if err := expr.Check(expr.KindTransform, *transform); err != nil {
			return err
		}
	}
	return nil
}

// PutEndpointResult answers a put.
type PutEndpointResult struct {
	Endpoint Endpoint `json:"endpoint"`
	// Created is true when this put registered the endpoint.
	Created bool `json:"created"`
	// SecretGenerated is true when DefaultSecret became the signing secret.
	SecretGenerated bool `json:"secret_generated"`
}

// ValidatePut checks a put request: its structure (PutEndpointRequest.Validate), then its
// URL against the address policy net. registered says whether the endpoint exists already.
func ValidatePut(req PutEndpointRequest, registered bool, net netguard.Policy) error {
	if err := req.Validate(registered); err != nil {
		return err
	}
	if req.URL != "" {
		if _, err := net.CheckURL(req.URL); err != nil {
			return fmt.Errorf("endpoint %s: %w", req.ID, err)
		}
	}
	if req.Auth != nil && req.Auth.OAuth2 != nil {
		if _, err := net.CheckURL(req.Auth.OAuth2.TokenURL); err != nil {
			return fmt.Errorf("endpoint %s: auth.oauth2.token_url: %w", req.ID, err)
		}
	}
	return nil
}
