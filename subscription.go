package herald

import (
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/policy"
)

// Subscription is one endpoint's entry in its tenant's directory: the event types it
// receives (policy.MatchesType; none means every type).
type Subscription struct {
	Endpoint string   `json:"endpoint"`
	Types    []string `json:"types,omitempty"`
	// Version is the endpoint's configuration version the entry reflects: a directory
	// keeps the entry of the highest version, so concurrent puts settle on the last one.
	Version int `json:"version,omitempty"`
	// Remove takes the endpoint out of the directory (it moved to another tenant).
	Remove bool `json:"remove,omitempty"`
}

// NormalizeTypes is a subscription as an endpoint stores it: nil (every type) when the
// patterns include "*", otherwise the patterns as given.
func NormalizeTypes(patterns []string) []string {
	if len(patterns) == 0 || slices.Contains(patterns, "*") {
		return nil
	}
	return slices.Clone(patterns)
}

// Directory is a tenant's subscription directory as its workflow publishes it
// (MemoSubscriptions) and answers for it (QuerySubscriptions).
type Directory struct {
	Tenant string `json:"tenant"`
	// Entries are sorted by endpoint id, one per endpoint.
	Entries []Subscription `json:"entries,omitempty"`
	// Backfilled is set once the endpoints registered before directories existed were
	// added (UpdateBackfill).
	Backfilled bool `json:"backfilled,omitempty"`
	// Large is set in the memo of a directory of more than MemoSubscriptionsMax endpoints,
	// which then holds no entries: ask the workflow (QuerySubscribers) for the endpoints an
	// event type reaches.
	Large bool `json:"large,omitempty"`
}

// MemoSubscriptionsMax is the most endpoints a directory publishes in its memo. Every
// change rewrites the memo (and the visibility record that holds it), so a tenant with
// thousands of endpoints would rewrite megabytes per put; beyond this, senders query.
const MemoSubscriptionsMax = 200

// Find returns the entry of endpoint id, and whether there is one.
func (d Directory) Find(id string) (Subscription, bool) {
	i, ok := d.search(id)
	if !ok {
		return Subscription{}, false
	}
	return d.Entries[i], true
}

func (d Directory) search(id string) (int, bool) {
	return slices.BinarySearchFunc(d.Entries, id, func(s Subscription, id string) int { return strings.Compare(s.Endpoint, id) })
}

// Matching returns the ids of the endpoints that receive events of type eventType, sorted.
func (d Directory) Matching(eventType string) []string {
	var ids []string
	for _, s := range d.Entries {
		if policy.MatchesType(s.Types, eventType) {
			ids = append(ids, s.Endpoint)
		}
	}
	return ids
}

// Apply records s in the directory: it inserts or replaces the endpoint's entry (unless
// the entry held is of a later version), or removes it for s.Remove. It reports whether
// the directory changed. Entries stay sorted.
func (d *Directory) Apply(s Subscription) bool {
	i, ok := d.search(s.Endpoint)
	switch {
	case s.Remove:
		if !ok {
			return false
		}
		d.Entries = slices.Delete(d.Entries, i, i+1)
		return true
	case !ok:
		s.Types = slices.Clone(s.Types)
		d.Entries = slices.Insert(d.Entries, i, s)
		return true
	case d.Entries[i].Version > s.Version:
		return false
	case d.Entries[i].Version == s.Version && slices.Equal(d.Entries[i].Types, s.Types):
		return false
	}
	s.Types = slices.Clone(s.Types)
	d.Entries[i] = s
	return true
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
