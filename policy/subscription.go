package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of an endpoint's subscription (its list of event type patterns).
const (
	// MaxSubscriptionTypes is the most patterns one endpoint may subscribe to.
	MaxSubscriptionTypes = 100
	// MaxEventTypeLen is the longest event type, and so the longest exact pattern.
	MaxEventTypeLen = 255
)

// MatchesType reports whether an endpoint subscribed to patterns receives events of type
// eventType. A pattern is an exact type ("order.paid"), a prefix wildcard ("order.*"
// matches "order.paid" and "order.refund.created", never "order" itself) or "*" (every
// type). No patterns at all means every type: an endpoint registered without a filter
// receives everything.
func MatchesType(patterns []string, eventType string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if p == "*" || p == eventType {
			return true
		}
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(eventType, prefix) && len(eventType) > len(prefix) {
			return true
		}
	}
	return false
}

// PatternsMatching returns every pattern of one element that MatchesType accepts for
// eventType: "*", eventType itself, and each prefix wildcard that covers it ("order.*" and
// "order.refund.*" for "order.refund.created"). A subscription receives eventType exactly
// when it holds one of them, so a store can find the subscriptions of a type by these
// patterns alone.
func PatternsMatching(eventType string) []string {
	out := []string{"*", eventType}
	for i := 1; i < len(eventType)-1; i++ {
		if eventType[i] == '.' {
			out = append(out, eventType[:i+1]+"*")
		}
	}
	return slices.DeleteFunc(out, func(p string) bool { return !MatchesType([]string{p}, eventType) })
}

// ValidateEventType checks an event type against the grammar of types: 1 to
// MaxEventTypeLen characters, each an ASCII letter or digit, '-', '_' or '.'
// (order.paid, invoice.line_item.created). Nothing else: no spaces, quotes, '*'
// (subscriptions use it as a wildcard) or non-ASCII letters.
func ValidateEventType(name string) error {
	switch {
	case name == "":
		return errors.New("event type is empty: give one like order.paid")
	case len(name) > MaxEventTypeLen:
		return fmt.Errorf("event type %.20q... is %d characters long: use at most %d", name, len(name), MaxEventTypeLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("event type %q is not valid UTF-8: use only letters, digits, '-', '_' and '.'", name)
	}
	for _, r := range name {
		if !IsTypeChar(r) {
			return fmt.Errorf("event type %q contains %q: use only letters, digits, '-', '_' and '.'", name, r)
		}
	}
	return nil
}

// IsTypeChar reports whether r may appear in an event type: an ASCII letter or digit,
// '-', '_' or '.'.
func IsTypeChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// ValidateTypePatterns checks an endpoint's subscription: at most MaxSubscriptionTypes
// patterns, each "*" alone, an event type (ValidateEventType) or an event type followed
// by ".*" (order.*); no duplicates.
func ValidateTypePatterns(patterns []string) error {
	if len(patterns) > MaxSubscriptionTypes {
		return fmt.Errorf("%d event types: subscribe to at most %d (use a wildcard such as order.*)", len(patterns), MaxSubscriptionTypes)
	}
	seen := make(map[string]bool, len(patterns))
	for _, p := range patterns {
		if err := validateTypePattern(p); err != nil {
			return err
		}
		if seen[p] {
			return fmt.Errorf("event type %q is given twice: give each once", p)
		}
		seen[p] = true
	}
	return nil
}

func validateTypePattern(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("an event type is empty: give names like order.paid, prefixes like order.* or * for all")
	case len(p) > MaxEventTypeLen:
		return fmt.Errorf("event type %.20q... is %d characters long: use at most %d", p, len(p), MaxEventTypeLen)
	case strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == ',' || r == 0x7f }):
		return fmt.Errorf("event type %q contains a space, comma or control character: give one name per entry", p)
	}
	if i := strings.IndexByte(p, '*'); i >= 0 {
		if i != len(p)-1 {
			return fmt.Errorf("event type %q has '*' in the middle: a wildcard may only end a prefix, as in order.*", p)
		}
		if p == "*" {
			return nil
		}
		name, ok := strings.CutSuffix(p, ".*")
		if !ok {
			return fmt.Errorf("event type %q: a wildcard follows a dot (order.*) or stands alone (*)", p)
		}
		if name == "" {
			return fmt.Errorf("event type %q: a wildcard follows a type name and a dot, as in order.*, or stands alone (*)", p)
		}
		p = name
	}
	return ValidateEventType(p)
}
