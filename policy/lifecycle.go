package policy

import (
	"fmt"
	"time"
)

// An endpoint's lifecycle: enabled, or disabled by hand or on its own. A disabled endpoint
// receives nothing; the rules for what becomes of its deliveries are here.

// DisableCause says why an endpoint is disabled.
type DisableCause string

// Causes of a disablement. They are the values of the HeraldDisabled search attribute.
const (
	// DisabledByHand: an operator or the tenant disabled it.
	DisabledByHand DisableCause = "manual"
	// DisabledGone: the receiver answered 410 Gone, saying it wants nothing more.
	DisabledGone DisableCause = "gone"
	// DisabledFailing: every attempt failed for the endpoint's DisableAfter.
	DisabledFailing DisableCause = "failing"
)

// Disablement is why and since when an endpoint is disabled.
type Disablement struct {
	Cause  DisableCause `json:"cause"`
	Reason string       `json:"reason"`
	At     time.Time    `json:"at,omitzero"`
	// Recovery is the probing of an endpoint disabled for failing (recovery.go); nil for
	// every other cause, and until the endpoint workflow starts it.
	Recovery *Recovery `json:"recovery,omitempty"`
}

// GoneStatus is the HTTP status that disables an endpoint at once (Standard Webhooks).
const GoneStatus = 410

// Limits of how long an endpoint may fail before it is disabled.
const (
	// DefaultDisableAfter is how long every attempt must have failed before the endpoint
	// is disabled, unless it says otherwise.
	DefaultDisableAfter = 5 * 24 * time.Hour
	// MinDisableAfter and MaxDisableAfter bound an endpoint's setting.
	MinDisableAfter = time.Hour
	MaxDisableAfter = 90 * 24 * time.Hour
)

// ValidateDisableAfter checks an endpoint's disable-after setting.
func ValidateDisableAfter(d time.Duration) error {
	if d < MinDisableAfter || d > MaxDisableAfter {
		return fmt.Errorf("disable-after %s is outside %s..%s", d, MinDisableAfter, MaxDisableAfter)
	}
	return nil
}

// DisabledAction is what a delivery does when its endpoint is disabled at an attempt.
type DisabledAction int

// What a delivery does at a disabled endpoint.
const (
	// DisabledSkip: it made no attempt yet; it ends as skipped, with no request.
	DisabledSkip DisabledAction = iota + 1
	// DisabledDeadLetter: it made attempts; it parks as a dead letter, which a replay
	// after the endpoint is enabled again recovers.
	DisabledDeadLetter
)

// OnDisabled says what a delivery that has made attempts attempts so far (every round
// counted) does when its endpoint is disabled at its next attempt.
func OnDisabled(attempts int) DisabledAction {
	if attempts == 0 {
		return DisabledSkip
	}
	return DisabledDeadLetter
}

// disableAfter is the configured failing time before disabling (the default for a limiter
// configured before the setting existed).
func (c LimiterConfig) disableAfter() time.Duration {
	if c.DisableAfter > 0 {
		return c.DisableAfter.Std()
	}
	return DefaultDisableAfter
}

// recordLifecycle takes one outcome: a success ends a failing spell, a 410 disables the
// endpoint at once, and a failure that comes DisableAfter or more into a failing spell
// disables it.
func (g *Limiter) recordLifecycle(o Outcome) {
	if o.OK {
		g.FailingSince = time.Time{}
		return
	}
	if g.FailingSince.IsZero() {
		g.FailingSince = o.At
	}
	switch {
	case g.Disabled != nil:
	case o.Gone:
		g.Disabled = &Disablement{Cause: DisabledGone, Reason: "the receiver answered 410 Gone", At: o.At}
	case o.At.Sub(g.FailingSince) >= g.Config.disableAfter():
		g.Disabled = &Disablement{Cause: DisabledFailing, At: o.At,
			Reason: fmt.Sprintf("every attempt failed for %s (since %s)", g.Config.disableAfter(), g.FailingSince.UTC().Format(time.RFC3339))}
	}
}

// Disable disables the endpoint by hand at now, with the reason given (a disablement by
// hand replaces one the endpoint made on its own).
func (g *Limiter) Disable(now time.Time, reason string) {
	if reason == "" {
		reason = "disabled by hand"
	}
	g.Disabled = &Disablement{Cause: DisabledByHand, Reason: reason, At: now}
}

// Enable enables the endpoint again: it starts afresh, its failing spell forgotten and its
// circuit closed, as someone says it is fixed.
func (g *Limiter) Enable(now time.Time) {
	if g.Disabled == nil {
		return
	}
	g.Disabled, g.FailingSince = nil, time.Time{}
	g.Breaker.Reset(now)
}

// maxDisabledWakes is how many queued waiters one Tick sends away from a disabled endpoint:
// the rest go at the following ticks, so that one workflow task sends a bounded number of
// signals.
const maxDisabledWakes = 100

// disabledWakes takes up to maxDisabledWakes waiters off the queue of a disabled endpoint:
// each is told (Grant.Disabled) to give up waiting.
func (g *Limiter) disabledWakes(now time.Time) []Grant {
	var wakes []Grant
	for len(g.Ledger.Waiting) > 0 && len(wakes) < maxDisabledWakes {
		w := g.Ledger.Waiting[0]
		g.Ledger.Remove(w)
		wakes = append(wakes, Grant{Waiter: w, Until: now, Disabled: true})
	}
	return wakes
}
