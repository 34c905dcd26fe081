package herald

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// DeliveryID is the workflow id of the delivery of event eventID for a tenant: event ids
// are scoped to the tenant of the endpoint, so two tenants may use the same id. The default
// tenant's ids (tenant "" or DefaultTenant) are "delivery:<event-id>" (as before tenants
// had their own ids); another tenant's are "delivery@<tenant>:<event-id>". The forms cannot
// collide (event ids may contain ':', but the default form starts with "delivery:", and
// tenant names have no ':').
func DeliveryID(tenant, eventID string) string {
	if tenant == "" || tenant == DefaultTenant {
		return "delivery:" + eventID
	}
	return "delivery@" + tenant + ":" + eventID
}

// FanoutDeliveryID is the workflow id of the delivery of a tenant's event eventID to one
// of the tenant's endpoints when the event was sent to the tenant (fan-out):
// "delivery+<endpoint>@<tenant>:<event-id>", the tenant always named. It cannot collide
// with DeliveryID's forms, nor with another endpoint's or tenant's (endpoint ids and
// tenant names have neither '@' nor ':').
func FanoutDeliveryID(tenant, endpointID, eventID string) string {
	return "delivery+" + endpointID + "@" + TenantOrDefault(tenant) + ":" + eventID
}

// ParseFanoutDeliveryID is the inverse of FanoutDeliveryID; ok is false for other ids.
func ParseFanoutDeliveryID(workflowID string) (tenant, endpointID, eventID string, ok bool) {
	rest, ok := strings.CutPrefix(workflowID, "delivery+")
	if !ok {
		return "", "", "", false
	}
	endpointID, rest, ok = strings.Cut(rest, "@")
	if !ok || endpointID == "" {
		return "", "", "", false
	}
	tenant, eventID, ok = strings.Cut(rest, ":")
	if !ok || tenant == "" {
		return "", "", "", false
	}
	return tenant, endpointID, eventID, true
}

// NoDestinationID is the workflow id that records a tenant's event sent when no endpoint
// of the tenant subscribed to its type: "event+none@<tenant>:<event-id>".
func NoDestinationID(tenant, eventID string) string {
	return "event+none@" + TenantOrDefault(tenant) + ":" + eventID
}

// TenantOrDefault is tenant, or DefaultTenant when it is empty (an endpoint registered
// without one).
func TenantOrDefault(tenant string) string {
	if tenant == "" {
		return DefaultTenant
	}
	return tenant
}

// ParseDeliveryID is the inverse of DeliveryID and FanoutDeliveryID: the tenant
// (DefaultTenant for the "delivery:" form) and the event id; ok is false for other ids.
func ParseDeliveryID(workflowID string) (tenant, eventID string, ok bool) {
	if id, ok := strings.CutPrefix(workflowID, "delivery:"); ok {
		return DefaultTenant, id, true
	}
	if tenant, _, eventID, ok := ParseFanoutDeliveryID(workflowID); ok {
		return tenant, eventID, true
	}
	rest, ok := strings.CutPrefix(workflowID, "delivery@")
	if !ok {
		return "", "", false
	}
	tenant, eventID, ok = strings.Cut(rest, ":")
	if !ok || tenant == "" {
		return "", "", false
	}
	return tenant, eventID, true
}

// EndpointWorkflowID is the workflow id of the endpoint workflow of endpoint id: "endpoint:<id>".
func EndpointWorkflowID(id string) string { return endpointPrefix + id }

// ParseEndpointWorkflowID is the inverse of EndpointWorkflowID; ok is false for other ids.
func ParseEndpointWorkflowID(workflowID string) (id string, ok bool) {
	return strings.CutPrefix(workflowID, endpointPrefix)
}

const endpointPrefix = "endpoint:"

// StatsWorkflowID is the workflow id of the stats shard that counts endpoint id:
// "endpoint-stats:<n>", n below StatsShards.
func StatsWorkflowID(endpointID string) string {
	h := fnv.New32a()
	h.Write([]byte(endpointID))
	return fmt.Sprintf("endpoint-stats:%d", h.Sum32()%StatsShards)
}

// ValidateEndpointID checks that id can be part of a workflow id and a URL path:
// 1 to 128 characters of letters, digits, '-', '_' and '.'.
func ValidateEndpointID(id string) error { return validateName("endpoint id", "acme-prod", id) }

// ValidateTenant checks a tenant name, with the same rules as endpoint ids.
func ValidateTenant(t string) error { return validateName("tenant", "acme", t) }

func validateName(kind, example, id string) error { return validateNameUpTo(kind, example, id, 128) }

// validateNameUpTo checks a name of 1 to max characters of letters, digits, '-', '_' and '.'.
func validateNameUpTo(kind, example, id string, max int) error {
	if id == "" {
		return fmt.Errorf("%s is empty: give one like %s", kind, example)
	}
	if len(id) > max {
		return fmt.Errorf("%s %q is %d characters long: use at most %d", kind, id, len(id), max)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("%s %q contains %q: use only letters, digits, '-', '_' and '.'", kind, id, r)
		}
	}
	return nil
}
