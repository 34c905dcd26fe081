package herald

import (
	"strings"
	"testing"
)

// TestReservedTenantRefused: the operational tenant is given to nothing from outside, and
// the operational endpoint stays in it; every other valid tenant is accepted.
func TestReservedTenantRefused(t *testing.T) {
	if err := ValidateGrantedTenant(OpsTenant); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("ValidateGrantedTenant(%q) = %v, want a reserved-name error", OpsTenant, err)
	}
	for _, ok := range []string{"acme", DefaultTenant, "herald-ops2", "herald"} {
		if err := ValidateGrantedTenant(ok); err != nil {
			t.Errorf("ValidateGrantedTenant(%q) = %v", ok, err)
		}
	}
	if ValidateGrantedTenant("a b") == nil {
		t.Error("ValidateGrantedTenant accepts a space: it must keep ValidateTenant's grammar")
	}
	put := func(id, tenant string) error {
		return PutEndpointRequest{ID: id, Tenant: tenant, URL: "https://example.com/hook", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}.Validate(false)
	}
	if err := put("acme-prod", OpsTenant); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("an endpoint moved to tenant %s: %v, want refused", OpsTenant, err)
	}
	if err := put(OpsEndpointID, "acme"); err == nil {
		t.Errorf("the operational endpoint moved to tenant acme: accepted")
	}
	if err := put(OpsEndpointID, OpsTenant); err != nil {
		t.Errorf("the operational endpoint in its own tenant: %v", err)
	}
	if err := put("acme-prod", "acme"); err != nil {
		t.Errorf("an endpoint of tenant acme: %v", err)
	}
}
