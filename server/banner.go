package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

func circuitState(c policy.CircuitView) string {
	if c.State == "" {
		return string(policy.CircuitClosed)
	}
	return string(c.State)
}

// Banner is the sentence the dashboard (and the CLI) shows across the top while an
// endpoint is disabled or its circuit is not closed, or "" while it is enabled and closed.
// forTenant words it for the endpoint's owner. Times are clock times in loc.
func Banner(e herald.EndpointState, forTenant bool, loc *time.Location) string {
	c := e.Circuit
	st := circuitState(c)
	clock := func(t time.Time) string { return t.In(loc).Format("15:04:05") }
	who := "your endpoint " + e.ID
	if !forTenant {
		who = fmt.Sprintf("endpoint %s (tenant %s)", e.ID, herald.TenantOrDefault(e.Tenant))
	}
	if d := e.Disabled; d != nil {
		msg := fmt.Sprintf("%s is disabled since %s: %s. Nothing is sent to it until it is enabled again",
			upperFirst(who), d.At.In(loc).Format("2006-01-02 15:04"), d.Reason)
		switch r := d.Recovery; {
		case r != nil && !r.NextAt.IsZero():
			msg += fmt.Sprintf(", or until a probe succeeds: the next is at %s (%d made so far)", r.NextAt.In(loc).Format("2006-01-02 15:04"), r.Probes)
		case r != nil && r.InFlight:
			msg += ", or until a probe succeeds: one is in flight"
		}
		return msg + "."
	}
	switch st {
	case string(policy.CircuitClosed):
		return ""
	case string(policy.CircuitOpen):
		tripped := c.TrippedAt
		if tripped.IsZero() {
			tripped = c.Since
		}
		msg := "Deliveries to " + who + " are paused"
		if !tripped.IsZero() {
			msg += " since " + clock(tripped)
		}
		if !c.Since.IsZero() && c.Since.After(tripped) {
			msg += fmt.Sprintf(" (circuit open); it opened again at %s after %s.", clock(c.Since), tripReason(c.Reason))
		} else {
			msg += fmt.Sprintf(": its circuit opened after %s.", tripReason(c.Reason))
		}
		if !c.NextProbeAt.IsZero() {
			return msg + " The next probe is at " + clock(c.NextProbeAt) + "."
		}
		return msg + " They resume once a probe succeeds."
	case string(policy.CircuitHalfOpen):
		msg := upperFirst(who) + " is half-open (probing)"
		if !c.Since.IsZero() {
			msg += " since " + clock(c.Since)
		}
		return msg + ": a probe succeeded, and deliveries go through one at a time; the circuit closes once they succeed."
	}
	return fmt.Sprintf("%s is in circuit state %s since %s.", upperFirst(who), st, clock(c.Since))
}

// tripReason words a circuit's trip reason ("probe failed") for the banner.
func tripReason(r string) string {
	switch r {
	case "":
		return "repeated failures"
	case "probe failed":
		return "its probe failed"
	case "half-open attempt failed":
		return "an attempt failed while it was probing"
	}
	return r
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (s *Server) banners(p principal, eps []herald.EndpointState) []string {
	var out []string
	for _, e := range eps {
		if b := Banner(e, !p.operator(), s.opts.Location); b != "" {
			out = append(out, b)
		}
	}
	return out
}
