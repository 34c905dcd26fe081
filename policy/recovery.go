package policy

import (
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/duration"
)

// Recovery: an endpoint disabled for failing (DisabledFailing) is probed on a slow ladder
// of its own. A probe is one signed request of a small test event; the first that
// succeeds enables the endpoint again (its dead letters are then replayed). An endpoint
// disabled by hand or by a 410 Gone is never probed: a person, or the receiver, said so.

// RecoveryLadder is when an endpoint disabled for failing is probed: Steps are the waits
// before the first probes (the first counted from the disable, each next from the probe
// before), then a probe Every so often, until For has passed since the disable. After
// that the endpoint stays disabled until someone enables it.
type RecoveryLadder struct {
	Steps []duration.Duration `json:"steps"`
	Every duration.Duration   `json:"every"`
	For   duration.Duration   `json:"for"`
}

// DefaultRecoveryLadder probes 1 h after the disable, then 3 h, 6 h and 12 h after each
// probe before (at +1 h, +4 h, +10 h, +22 h), then every 24 h until 30 days after the
// disable: 33 probes at most.
func DefaultRecoveryLadder() RecoveryLadder {
	return RecoveryLadder{
		Steps: duration.Of(time.Hour, 3*time.Hour, 6*time.Hour, 12*time.Hour),
		Every: duration.Duration(24 * time.Hour),
		For:   duration.Duration(30 * 24 * time.Hour),
	}
}

// Validate reports what is wrong with l.
func (l RecoveryLadder) Validate() error {
	var errs []error
	for i, s := range l.Steps {
		if s <= 0 {
			errs = append(errs, fmt.Errorf("recovery step %d is %s: every wait must be positive", i+1, s))
		}
	}
	if l.Every <= 0 {
		errs = append(errs, fmt.Errorf("recovery every %s: must be positive", l.Every))
	}
	if l.For <= 0 {
		errs = append(errs, fmt.Errorf("recovery for %s: must be positive", l.For))
	}
	return errors.Join(errs...)
}

// wait is the wait before probe n (1-based), counted from the probe before it (or the
// disable, for the first).
func (l RecoveryLadder) wait(n int) time.Duration {
	if n <= len(l.Steps) {
		return l.Steps[n-1].Std()
	}
	return l.Every.Std()
}

// Recovery is the probing of an endpoint disabled for failing.
type Recovery struct {
	// Ladder is the ladder in force, as it was when probing started.
	Ladder RecoveryLadder `json:"ladder"`
	// Probes counts the probes made.
	Probes int `json:"probes"`
	// NextAt is when the next probe is due; zero while one is in flight, and once probing
	// has ended (Ended).
	NextAt time.Time `json:"next_at,omitzero"`
	// InFlight is set while a probe is being made.
	InFlight bool `json:"in_flight,omitempty"`
	// LastAt and Last are the last probe's time and outcome.
	LastAt time.Time `json:"last_at,omitzero"`
	Last   string    `json:"last,omitempty"`
	// Ended is set once the ladder has run past For: no more probes.
	Ended bool `json:"ended,omitempty"`
}

// next schedules the probe after the one made at from (or the disable at since), or ends
// the probing when it would fall past the ladder's For.
func (r *Recovery) next(from, since time.Time) {
	at := from.Add(r.Ladder.wait(r.Probes + 1))
	if at.After(since.Add(r.Ladder.For.Std())) {
		r.NextAt, r.Ended = time.Time{}, true
		return
	}
	r.NextAt = at
}

// StartRecovery starts probing on ladder l if the endpoint is disabled for failing and not
// probing yet, and reports whether it did.
func (g *Limiter) StartRecovery(l RecoveryLadder) bool {
	d := g.Disabled
	if d == nil || d.Cause != DisabledFailing || d.Recovery != nil {
		return false
	}
	d.Recovery = &Recovery{Ladder: l}
	d.Recovery.next(d.At, d.At)
	return true
}

// RecoveryUnset reports whether the endpoint is disabled for failing and probing has not
// been decided on yet (StartRecovery would start it).
func (g *Limiter) RecoveryUnset() bool {
	return g.Disabled != nil && g.Disabled.Cause == DisabledFailing && g.Disabled.Recovery == nil
}

// BeginProbe starts the probe due at now, if one is, and returns its number (1-based).
func (g *Limiter) BeginProbe(now time.Time) (int, bool) {
	r := g.recovery()
	if r == nil || r.InFlight || r.NextAt.IsZero() || now.Before(r.NextAt) {
		return 0, false
	}
	r.InFlight, r.NextAt = true, time.Time{}
	r.Probes++
	return r.Probes, true
}

// EndProbe takes the outcome of the probe begun last, made at at: a success enables the
// endpoint again (Enable) and returns true; a failure schedules the next probe, or ends
// the probing. summary says what the probe got, for the endpoint's view.
func (g *Limiter) EndProbe(at, now time.Time, ok bool, summary string) bool {
	r := g.recovery()
	if r == nil || !r.InFlight {
		return false
	}
	r.InFlight, r.LastAt, r.Last = false, at, summary
	if ok {
		g.Enable(now)
		return true
	}
	r.next(at, g.Disabled.At)
	return false
}

// recovery is the probing in progress, if the endpoint is disabled for failing and probed.
func (g *Limiter) recovery() *Recovery {
	if g.Disabled == nil || g.Disabled.Cause != DisabledFailing {
		return nil
	}
	return g.Disabled.Recovery
}
