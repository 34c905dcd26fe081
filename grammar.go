package herald

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
)

// The grammar of the values Herald takes from outside (API, dashboard, CLI, Go client),
// stated once here and checked on every way in:
//
//	tenant          1 to 128 ASCII letters, digits, '-', '_' and '.'     (ValidateTenant)
//	endpoint id     1 to 128 ASCII letters, digits, '-', '_' and '.'     (ValidateEndpointID)
//	event id        1 to 255 printable ASCII characters, no '.' or space (ValidateEventID)
//	event type      1 to 255 ASCII letters, digits, '-', '_' and '.'     (ValidateEventTypeName)
//	type filter     an event type, or a prefix of one followed by '*'    (ValidateTypeFilter)
//	state           one of EventStates                                   (ValidateEventState)
//	endpoint state  one of EndpointStates: closed, open, half_open,      (ValidateEndpointState)
//	                disabled
//	page size       1 to starter.MaxEventPage (events), 1 to starter.MaxEndpointPage (endpoints)
//	cursor          the bytes a page gave, unchanged (the server seals them: see server/events.go)
//
// Visibility queries are built only from values that passed these checks, and each value
// is still quoted by the query language's own rules (see quote): an event id may hold a
// quote or a backslash, and neither ends the string it is in.

// ValidateEventID checks an event id: 1 to 255 printable ASCII characters without '.'
// or spaces (signature.ValidateID: the id is part of the signed content).
func ValidateEventID(id string) error {
	if err := signature.ValidateID(id); err != nil {
		return fmt.Errorf("event id: %w", err)
	}
	return nil
}

// ValidateTypeFilter checks the type filter of an event search: an event type
// (order.paid), or the start of one followed by '*' (order.* matches order.paid and
// order.refund.created; * alone matches every type).
func ValidateTypeFilter(f string) error {
	prefix, wild := strings.CutSuffix(f, "*")
	if !wild {
		return ValidateEventTypeName(f)
	}
	if prefix == "" {
		return nil
	}
	if err := policy.ValidateEventType(prefix); err != nil {
		return fmt.Errorf("%w (a prefix ends with a single '*', as in order.*)", err)
	}
	return nil
}

// ValidateEventState checks a state filter: one of EventStates.
func ValidateEventState(s State) error {
	if !slices.Contains(EventStates, s) {
		names := make([]string, len(EventStates))
		for i, st := range EventStates {
			names[i] = string(st)
		}
		return fmt.Errorf("state %q is unknown: use one of %s", s, strings.Join(names, ", "))
	}
	return nil
}

// ValidateEndpointState checks the state filter of an endpoint listing: one of
// EndpointStates.
func ValidateEndpointState(s string) error {
	if !slices.Contains(EndpointStates, s) {
		return fmt.Errorf("state %q is unknown: use one of %s", s, strings.Join(EndpointStates, ", "))
	}
	return nil
}

// FilterError is a filter of an event search whose value breaks its grammar.
type FilterError struct {
	// Filter is the name of the filter, as the API's query parameter (type, state, event,
	// endpoint, tenant).
	Filter string
	// Err says which rule of the grammar the value breaks.
	Err error
}

func (e *FilterError) Error() string { return fmt.Sprintf("filter %s: %v", e.Filter, e.Err) }

// Unwrap returns the grammar error.
func (e *FilterError) Unwrap() error { return e.Err }

// Validate checks the dead-letter filter's endpoint and tenant against their grammar and
// its time range; the error is a *FilterError naming the filter (endpoint, tenant, until).
func (f DeadLetterFilter) Validate() error {
	if f.EndpointID != "" {
		if err := ValidateEndpointID(f.EndpointID); err != nil {
			return &FilterError{Filter: "endpoint", Err: err}
		}
	}
	if f.Tenant != "" {
		if err := ValidateTenant(f.Tenant); err != nil {
			return &FilterError{Filter: "tenant", Err: err}
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return &FilterError{Filter: "until", Err: fmt.Errorf("until (%s) is before since (%s)", f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))}
	}
	return nil
}

// Validate checks the endpoint filter's tenant and state against their grammar; the error
// is a *FilterError naming the filter (tenant, state). Query takes only a filter that passed.
func (f EndpointFilter) Validate() error {
	if f.Tenant != "" {
		if err := ValidateTenant(f.Tenant); err != nil {
			return &FilterError{Filter: "tenant", Err: err}
		}
	}
	if f.State != "" {
		if err := ValidateEndpointState(f.State); err != nil {
			return &FilterError{Filter: "state", Err: err}
		}
	}
	return nil
}

// Validate checks every value of f against its grammar; the error is a *FilterError
// naming the first filter that breaks it. Query takes only a filter that passed.
func (f EventFilter) Validate() error {
	var first error
	check := func(name, value string, validate func(string) error) {
		if first != nil {
			return
		}
		if err := validate(value); err != nil {
			first = &FilterError{Filter: name, Err: err}
		}
	}
	// A single filter left empty is not set; an empty entry of a list is checked (and refused).
	optional := func(name, value string, validate func(string) error) {
		if value != "" {
			check(name, value, validate)
		}
	}
	optional("type", f.Type, ValidateTypeFilter)
	optional("state", string(f.State), func(s string) error { return ValidateEventState(State(s)) })
	optional("event", f.EventID, ValidateEventID)
	optional("tenant", f.Tenant, ValidateTenant)
	for _, t := range f.Tenants {
		check("tenant", t, ValidateTenant)
	}
	for _, e := range f.Endpoints {
		check("endpoint", e, ValidateEndpointID)
	}
	return first
}
