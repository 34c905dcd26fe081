package herald

import "testing"

func TestFanoutDeliveryIDs(t *testing.T) {
	for _, c := range []struct{ tenant, endpoint, event, want string }{
		{"acme", "acme-billing", "evt_1", "delivery+acme-billing@acme:evt_1"},
		{"", "ep", "a:b", "delivery+ep@default:a:b"},
		{DefaultTenant, "ep.1", "x", "delivery+ep.1@default:x"},
	} {
		id := FanoutDeliveryID(c.tenant, c.endpoint, c.event)
		if id != c.want {
			t.Errorf("FanoutDeliveryID(%q, %q, %q) = %q, want %q", c.tenant, c.endpoint, c.event, id, c.want)
		}
		tenant, ep, ev, ok := ParseFanoutDeliveryID(id)
		wantTenant := c.tenant
		if wantTenant == "" {
			wantTenant = DefaultTenant
		}
		if !ok || tenant != wantTenant || ep != c.endpoint || ev != c.event {
			t.Errorf("ParseFanoutDeliveryID(%q) = %q, %q, %q, %v", id, tenant, ep, ev, ok)
		}
		if tenant, ev, ok := ParseDeliveryID(id); !ok || tenant != wantTenant || ev != c.event {
			t.Errorf("ParseDeliveryID(%q) = %q, %q, %v", id, tenant, ev, ok)
		}
	}
	for _, id := range []string{"delivery:x", "delivery@acme:x", "delivery+@acme:x", "delivery+ep@:x", "delivery+ep", "endpoint:ep", NoDestinationID("acme", "x")} {
		if _, _, _, ok := ParseFanoutDeliveryID(id); ok {
			t.Errorf("ParseFanoutDeliveryID(%q) took it for a fan-out delivery", id)
		}
	}
}

func TestNormalizeTypes(t *testing.T) {
	if NormalizeTypes([]string{"order.*", "*"}) != nil || NormalizeTypes(nil) != nil {
		t.Error("a subscription with * is every type (nil)")
	}
	if got := NormalizeTypes([]string{"b", "a"}); len(got) != 2 || got[0] != "b" {
		t.Errorf("NormalizeTypes kept %q", got)
	}
}
