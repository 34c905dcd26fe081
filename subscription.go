package herald

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/heraldhq/herald/policy"
)

// NormalizeTypes is a subscription as an endpoint stores it: nil (every type) when the
// patterns include "*", otherwise the patterns as given.
func NormalizeTypes(patterns []string) []string {
	if len(patterns) == 0 || slices.Contains(patterns, "*") {
		return nil
	}
	return slices.Clone(patterns)
}

// Subscription tokens. An endpoint workflow publishes its tenant and the event type
// patterns it receives in AttrSubscriptions, one token per pattern: "<tenant>/<pattern>"
// ("<tenant>/*" for every type). A send to a tenant lists the endpoint workflows holding
// any token of MatchingTokens: an indexed lookup whose cost grows with the endpoints that
// match, not with the tenant. The server limits a search attribute's encoded value
// (2 KB by default), so an endpoint whose readable tokens would pass
// MaxReadableTokensBytes publishes each as "#" and 16 hex digits of its SHA-256 instead;
// MatchingTokens names both forms.
const MaxReadableTokensBytes = 1500

// SubscriptionTokens returns the tokens an endpoint of tenant subscribed to types
// publishes (types as the endpoint stores them: nil is every type).
func SubscriptionTokens(tenant string, types []string) []string {
	tenant = TenantOrDefault(tenant)
	if len(types) == 0 {
		types = []string{"*"}
	}
	out := make([]string, len(types))
	size := 2
	for i, p := range types {
		out[i] = tenant + "/" + p
		size += len(out[i]) + 3
	}
	if size > MaxReadableTokensBytes {
		for i := range out {
			out[i] = hashedToken(out[i])
		}
	}
	slices.Sort(out)
	return out
}

// MatchingTokens returns every token (both forms) of a subscription of tenant that
// receives events of eventType: those of policy.PatternsMatching.
func MatchingTokens(tenant, eventType string) []string {
	tenant = TenantOrDefault(tenant)
	patterns := policy.PatternsMatching(eventType)
	out := make([]string, 0, 2*len(patterns))
	for _, p := range patterns {
		t := tenant + "/" + p
		out = append(out, t, hashedToken(t))
	}
	return out
}

// TokensMatch reports whether an endpoint that publishes tokens receives an event of
// eventType sent to tenant, comparing exactly (the visibility store may compare without
// regard to case).
func TokensMatch(tokens []string, tenant, eventType string) bool {
	for _, m := range MatchingTokens(tenant, eventType) {
		if slices.Contains(tokens, m) {
			return true
		}
	}
	return false
}

func hashedToken(t string) string {
	sum := sha256.Sum256([]byte(t))
	return "#" + hex.EncodeToString(sum[:8])
}

// EventView is what herald status shows of an event sent to a tenant (fan-out): the event
// and each endpoint's delivery.
type EventView struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Type   string `json:"type,omitempty"`
	// NoDestination is set when the event was sent while no endpoint of the tenant
	// subscribed to its type: it was recorded, and delivered nowhere.
	NoDestination bool      `json:"no_destination,omitempty"`
	SentAt        time.Time `json:"sent_at,omitzero"`
	// Deliveries are the event's deliveries, one per endpoint, sorted by endpoint id.
	Deliveries []DeliveryView `json:"deliveries"`
}

// DeliveryView is one endpoint's delivery of a fanned-out event.
type DeliveryView struct {
	EndpointID string `json:"endpoint_id"`
	WorkflowID string `json:"workflow_id"`
	// Missing is set for an endpoint that matches the event's type now but has no delivery
	// of it (it subscribed after the event was sent, or a send was cut short: sending the
	// event again adds it).
	Missing bool `json:"missing,omitempty"`
	// Status is the delivery's status; nil when it is missing or could not be read.
	Status *Status `json:"status,omitempty"`
	// Error says why the status could not be read.
	Error string `json:"error,omitempty"`
}
