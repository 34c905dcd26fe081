package starter

import (
	"fmt"

	"github.com/heraldhq/herald"
)

// Ref names what Status and Replay act on, in one of three ways:
//
//   - a tenant's event: Tenant (empty for the default tenant) and EventID. The event may
//     have been sent to one endpoint (Send) or to the tenant (Publish);
//   - one endpoint's delivery of an event sent to the tenant: Endpoint set too;
//   - a delivery by its workflow id (WorkflowID alone), as dead-letter lists and the
//     Temporal UI show it.
type Ref struct {
	Tenant     string
	EventID    string
	Endpoint   string
	WorkflowID string
}

// resolve checks r and returns it with Tenant, EventID and Endpoint filled in from
// WorkflowID when r names a delivery by workflow id, and the workflow id of the delivery
// it names (the delivery of an event sent to one endpoint, when Endpoint is empty).
func (r Ref) resolve() (Ref, string, error) {
	if r.WorkflowID != "" {
		if r.EventID != "" || r.Endpoint != "" || r.Tenant != "" {
			return r, "", fmt.Errorf("%w: name an event by its tenant and id, or a delivery by its workflow id, not both", ErrInvalid)
		}
		if tenant, endpoint, eventID, ok := herald.ParseFanoutDeliveryID(r.WorkflowID); ok {
			r.Tenant, r.Endpoint, r.EventID = tenant, endpoint, eventID
			return r, r.WorkflowID, nil
		}
		tenant, eventID, ok := herald.ParseDeliveryID(r.WorkflowID)
		if !ok {
			return r, "", fmt.Errorf("%w: %q is not a delivery's workflow id (delivery:<event-id>, delivery@<tenant>:<event-id> or delivery+<endpoint>@<tenant>:<event-id>)", ErrInvalid, r.WorkflowID)
		}
		r.Tenant, r.EventID = tenant, eventID
		return r, r.WorkflowID, nil
	}
	if r.EventID == "" {
		return r, "", fmt.Errorf("%w: the event id is empty: give the id send printed", ErrInvalid)
	}
	if r.Endpoint != "" {
		if err := herald.ValidateEndpointID(r.Endpoint); err != nil {
			return r, "", fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		r.Tenant = herald.TenantOrDefault(r.Tenant)
		return r, herald.FanoutDeliveryID(r.Tenant, r.Endpoint, r.EventID), nil
	}
	r.Tenant = herald.TenantOrDefault(r.Tenant)
	return r, herald.DeliveryID(r.Tenant, r.EventID), nil
}

// delivery reports whether r names one delivery (by endpoint or workflow id), not an
// event that may have several.
func (r Ref) delivery() bool { return r.Endpoint != "" || r.WorkflowID != "" }
