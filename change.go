package herald

import (
	"fmt"
	"slices"

	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
)

// EndpointChange is a change of an endpoint's settings as people give it: the HTTP API's
// JSON body (PUT /v1/endpoints/{id}, see server/openapi.json) and the flags of herald
// endpoint put both fill one in, and Overrides translates it. A nil field keeps what is
// stored; a field given is used as given, so 0 is refused where the range starts above 0,
// never read as "keep" or "the default". Settings merge per field: a breaker change names
// only the breaker settings it changes.
type EndpointChange struct {
	MaxInFlight *int           `json:"max_in_flight,omitempty"`
	Schedule    []Duration     `json:"schedule,omitempty"`
	Attempts    *int           `json:"attempts,omitempty"`
	Jitter      *float64       `json:"jitter,omitempty"`
	Timeout     *Duration      `json:"timeout,omitempty"`
	Retention   *Duration      `json:"retention,omitempty"`
	Breaker     *BreakerChange `json:"breaker,omitempty"`
	// RateLimit sets the most requests per second (1..policy.MaxRateLimit); 0 removes the
	// rate limit.
	RateLimit *int `json:"rate_limit,omitempty"`
	// DisableAfter is how long every attempt must fail before the endpoint is disabled.
	DisableAfter *Duration `json:"disable_after,omitempty"`
	// Headers, when given, replace the endpoint's custom headers (name → value); {} removes
	// them all. See HeaderChange.
	Headers map[string]string `json:"headers,omitempty"`
	// Types replaces the event types the endpoint subscribes to (exact names, prefixes
	// such as "order.*", or "*" for every type); nil keeps them. It is not an override:
	// copy it to PutEndpointRequest.Types, which validates it.
	Types []string `json:"types,omitempty"`
	// Filter replaces the endpoint's filter, a CEL expression over the event (id, type,
	// tenant, data) that must give true for the event to go to it; "" removes it; nil keeps
	// it. Copied to PutEndpointRequest.Filter, which validates it.
	Filter *string `json:"filter,omitempty"`
	// Transform replaces the endpoint's transformation, a CEL expression that gives the
	// request's body and headers, or cancels the delivery (expr.Transform); "" removes it;
	// nil keeps it. Copied to PutEndpointRequest.Transform, which validates it.
	Transform *string `json:"transform,omitempty"`
	// OrderingOnDeadLetter sets what a dead letter at the head of an ordering key does:
	// block or skip (ValidateOrderingOnDeadLetter).
	OrderingOnDeadLetter *string `json:"ordering_on_dead_letter,omitempty"`
}

// HeaderChange is the change's custom headers as a put carries them (nil: keep the
// stored ones), checked and sorted (NormalizeHeaders).
func (c EndpointChange) HeaderChange() (*[]Header, error) {
	if c.Headers == nil {
		return nil, nil
	}
	hs := make([]Header, 0, len(c.Headers))
	for n, v := range c.Headers {
		hs = append(hs, Header{Name: n, Value: v})
	}
	hs, err := NormalizeHeaders(hs)
	if err != nil {
		return nil, err
	}
	return &hs, nil
}

// BreakerChange changes some of an endpoint's circuit breaker settings; nil fields keep
// what is stored.
type BreakerChange struct {
	ConsecutiveFailures *int      `json:"consecutive_failures,omitempty"`
	ConsecutiveWindow   *Duration `json:"consecutive_window,omitempty"`
	VolumeFailures      *int      `json:"volume_failures,omitempty"`
	VolumeWindow        *Duration `json:"volume_window,omitempty"`
	ProbeDelay          *Duration `json:"probe_delay,omitempty"`
	MaxProbeDelay       *Duration `json:"max_probe_delay,omitempty"`
	HalfOpenSuccesses   *int      `json:"half_open_successes,omitempty"`
	ProbeTimeout        *Duration `json:"probe_timeout,omitempty"`
}

// Overrides translates the change into the overrides it sets (nil when it sets none) and
// checks each value given (Overrides.ValidateChange). Errors name JSON fields.
func (c EndpointChange) Overrides() (*Overrides, error) {
	var o Overrides
	set := false
	if c.Attempts != nil && *c.Attempts < 1 {
		return nil, fmt.Errorf("attempts %d: give 1 to %d, or leave attempts out to keep it", *c.Attempts, policy.MaxAttempts)
	}
	if c.Schedule != nil || c.Attempts != nil || c.Jitter != nil {
		lo := policy.LadderOverride{Jitter: c.Jitter}
		if c.Attempts != nil {
			lo.Attempts = *c.Attempts
		}
		if c.Schedule != nil {
			lo.Delays = slices.Clone(c.Schedule)
		}
		o.Ladder, set = &lo, true
	}
	// Settings whose 0 would read as "keep": a 0 given is refused.
	for _, err := range []error{
		setCount(&o.MaxInFlight, "max_in_flight", c.MaxInFlight, &set),
		setPositive(&o.Timeout, "timeout", c.Timeout, &set),
		setPositive(&o.Retention, "retention", c.Retention, &set),
		setPositive(&o.DisableAfter, "disable_after", c.DisableAfter, &set),
	} {
		if err != nil {
			return nil, err
		}
	}
	if c.RateLimit != nil {
		if err := policy.ValidateRateLimit(*c.RateLimit); err != nil {
			return nil, fmt.Errorf("rate_limit: %v", err)
		}
		v := *c.RateLimit
		o.RateLimit, set = &v, true
	}
	if c.Breaker != nil {
		b, err := c.Breaker.override()
		if err != nil {
			return nil, err
		}
		o.Breaker, set = &b, true
	}
	if c.OrderingOnDeadLetter != nil {
		if *c.OrderingOnDeadLetter == "" {
			return nil, fmt.Errorf("ordering_on_dead_letter \"\": give %s or %s, or leave it out to keep it", OrderingBlock, OrderingSkip)
		}
		o.OrderingOnDeadLetter, set = *c.OrderingOnDeadLetter, true
	}
	if !set {
		return nil, nil
	}
	if err := o.ValidateChange(); err != nil {
		return nil, err
	}
	return &o, nil
}

// setCount sets *dst to the count v given, if any; 0 is refused (it would read as "keep").
func setCount(dst *int, name string, v *int, set *bool) error {
	if v == nil {
		return nil
	}
	if *v == 0 {
		return fmt.Errorf("%s 0: give a count, or leave %s out to keep it", name, name)
	}
	*dst, *set = *v, true
	return nil
}

// setPositive sets *dst to the duration v given, if any; it must be positive.
func setPositive(dst *Duration, name string, v *Duration, set *bool) error {
	if v == nil {
		return nil
	}
	if *v <= 0 {
		return fmt.Errorf("%s %s: give a positive duration, or leave %s out to keep it", name, *v, name)
	}
	*dst, *set = *v, true
	return nil
}

// override is the breaker override of the fields given, each value checked on its own
// (on Herald's default breaker); the endpoint workflow checks the breaker the merge makes.
func (b BreakerChange) override() (policy.BreakerOverride, error) {
	c := policy.DefaultBreakerConfig()
	var o policy.BreakerOverride
	setInt := func(dst, odst *int, v *int) {
		if v != nil {
			*dst, *odst = *v, *v
		}
	}
	setDur := func(dst, odst *Duration, v *Duration) {
		if v != nil {
			*dst, *odst = *v, *v
		}
	}
	setInt(&c.ConsecutiveFailures, &o.ConsecutiveFailures, b.ConsecutiveFailures)
	setDur(&c.ConsecutiveWindow, &o.ConsecutiveWindow, b.ConsecutiveWindow)
	setInt(&c.VolumeFailures, &o.VolumeFailures, b.VolumeFailures)
	setDur(&c.VolumeWindow, &o.VolumeWindow, b.VolumeWindow)
	setDur(&c.ProbeDelay, &o.ProbeDelay, b.ProbeDelay)
	setDur(&c.MaxProbeDelay, &o.MaxProbeDelay, b.MaxProbeDelay)
	// The longest probe delay must not be below the probe delay: a change naming one of
	// them is checked against the other as stored, once merged, not against the default.
	switch {
	case b.MaxProbeDelay == nil && c.MaxProbeDelay < c.ProbeDelay:
		c.MaxProbeDelay = c.ProbeDelay
	case b.ProbeDelay == nil && c.ProbeDelay > c.MaxProbeDelay:
		c.ProbeDelay = max(c.MaxProbeDelay, Duration(policy.MinDelay))
	}
	if b.HalfOpenSuccesses != nil {
		h := *b.HalfOpenSuccesses
		c.HalfOpenSuccesses, o.HalfOpenSuccesses = h, &h
	}
	setDur(&c.ProbeTimeout, &o.ProbeTimeout, b.ProbeTimeout)
	if err := c.Validate(); err != nil {
		return o, fmt.Errorf("breaker: %v", err)
	}
	return o, nil
}

// Duration is a JSON duration written as a Go duration string ("30s", "1h30m"); it reads
// a string or integer nanoseconds.
type Duration = duration.Duration
