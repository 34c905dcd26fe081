package herald

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Operational events: Herald tells the operator what happened to the endpoints, through
// itself. The operator registers one operational endpoint (herald ops-endpoint put); Herald
// then sends it signed events of the types below, as ordinary deliveries of the tenant
// OpsTenant, with the same ladder and dead letters. An operational delivery never produces
// another operational event.

// The operational endpoint's reserved id and tenant.
const (
	OpsEndpointID = "herald-ops"
	OpsTenant     = "herald-ops"
)

// Types of operational events.
const (
	// OpsEndpointDisabled: an endpoint was disabled (by hand, by a 410, or after failing).
	OpsEndpointDisabled = "endpoint.disabled"
	// OpsEndpointRecovered: an endpoint disabled for failing answered a probe and was
	// enabled again; its dead letters are being replayed (OpsData.BulkReplayID).
	OpsEndpointRecovered = "endpoint.recovered"
	// OpsCircuitOpened: an endpoint's circuit opened.
	OpsCircuitOpened = "endpoint.circuit_opened"
	// OpsCircuitClosed: an endpoint's circuit closed again.
	OpsCircuitClosed = "endpoint.circuit_closed"
	// OpsDeadLettered: a delivery parked as a dead letter.
	OpsDeadLettered = "delivery.dead_lettered"
	// OpsRecovered: a replayed delivery was delivered.
	OpsRecovered = "delivery.recovered"
	// OpsOrderingBlocked: a dead letter at the head of an ordering key holds the key (the
	// endpoint's ordering on dead letter is block); Reason names the key.
	OpsOrderingBlocked = "ordering.blocked"
)

// OpsData is the data of an operational event: the endpoint it is about and, for a
// delivery's event, the delivery.
type OpsData struct {
	EndpointID string    `json:"endpoint_id"`
	Tenant     string    `json:"tenant"`
	At         time.Time `json:"at,omitzero"`
	Reason     string    `json:"reason,omitempty"`
	// Cause is an endpoint.disabled event's cause (manual, gone, failing).
	Cause string `json:"cause,omitempty"`
	// EventID, EventType, Round and Attempts describe the delivery of a delivery.* event.
	EventID   string `json:"event_id,omitempty"`
	EventType string `json:"event_type,omitempty"`
	Round     int    `json:"round,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	// BulkReplayID is the workflow id of the bulk replay of an endpoint.recovered event's
	// dead letters.
	BulkReplayID string `json:"bulk_replay_id,omitempty"`
}

// OpsEvent is the operational event of type typ about d, with an id derived from key: the
// same transition always makes the same event (and the same delivery workflow id), so
// emitting it again adds nothing.
func OpsEvent(typ, key string, d OpsData) (Event, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return Event{}, fmt.Errorf("operational event %s: %w", typ, err)
	}
	sum := sha256.Sum256([]byte(typ + "\x00" + key))
	return Event{
		ID:         "ops_" + strings.ReplaceAll(typ, ".", "_") + "_" + hex.EncodeToString(sum[:12]),
		EndpointID: OpsEndpointID,
		Type:       typ,
		Data:       data,
		CreatedAt:  d.At,
	}, nil
}

// IsOps reports whether a delivery of tenant and endpoint is an operational one: it
// produces no operational event.
func IsOps(tenant, endpointID string) bool {
	return tenant == OpsTenant || endpointID == OpsEndpointID
}

// ValidateGrantedTenant checks a tenant that something from outside names to be given,
// joined or acted for: a tenant token, a portal link, an endpoint's tenant, a fan-out
// send. It is ValidateTenant, and the name must not be reserved: OpsTenant belongs to
// Herald's operational events alone (its endpoint is put with herald ops-endpoint put).
func ValidateGrantedTenant(t string) error {
	if err := ValidateTenant(t); err != nil {
		return err
	}
	if ReservedTenant(t) {
		return fmt.Errorf("tenant %s is reserved for Herald's operational events: choose another tenant name", t)
	}
	return nil
}

// ReservedTenant reports whether t is a tenant name Herald keeps for itself (OpsTenant).
func ReservedTenant(t string) bool { return t == OpsTenant }

// validateEndpointTenant checks the tenant of a put of endpoint id: any tenant
// ValidateGrantedTenant allows, and for the operational endpoint only its own, OpsTenant.
func validateEndpointTenant(id, tenant string) error {
	if id == OpsEndpointID {
		if tenant != OpsTenant {
			return fmt.Errorf("endpoint %s is Herald's operational endpoint and belongs to tenant %s: leave tenant out, or put it with herald ops-endpoint put", id, OpsTenant)
		}
		return nil
	}
	return ValidateGrantedTenant(tenant)
}
