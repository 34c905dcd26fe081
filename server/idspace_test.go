package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestOneEventIDPerTenant: a tenant's event id names one event whichever way it is sent,
// to one endpoint (endpoint_id) or to the tenant (tenant): in either order, the same type
// and data is the same event (202, the same delivery, nothing more sent) and other type or
// data is 409.
func TestOneEventIDPerTenant(t *testing.T) {
	tenant := uniq("ids")
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("ids-ep")
	putEndpoint(t, ep, tenant, rcv.URL, 1, map[string]any{"types": []string{"order.*"}})
	send := func(route, id, typ string, n int) (int, map[string]any) {
		t.Helper()
		body := map[string]any{"type": typ, "id": id, "data": map[string]any{"n": n}}
		if route == "endpoint" {
			body["endpoint_id"] = ep
		} else {
			body["tenant"] = tenant
		}
		return call(t, "POST", "/v1/events", shared.operator, body)
	}
	conflict := func(what string, code int, out map[string]any) {
		t.Helper()
		want(t, what, code, http.StatusConflict, out)
		if msg, _ := out["error"].(string); !strings.Contains(msg, "was already sent") {
			t.Errorf("%s: error %q, want it to say the id was already sent", what, msg)
		}
	}
	deliveryOf := func(out map[string]any) string {
		t.Helper()
		if wf, ok := out["workflow_id"].(string); ok {
			return wf
		}
		ds, _ := out["deliveries"].([]any)
		if len(ds) != 1 {
			t.Fatalf("want one delivery, got %v", out)
		}
		return ds[0].(map[string]any)["workflow_id"].(string)
	}

	var ids []string
	for _, order := range [][2]string{{"endpoint", "tenant"}, {"tenant", "endpoint"}} {
		first, then := order[0], order[1]
		id := uniq("ids-" + first + "-first")
		ids = append(ids, id)
		code, out := send(first, id, "order.paid", 1)
		want(t, "first send to the "+first, code, http.StatusAccepted, out)
		wf := deliveryOf(out)

		code, out = send(then, id, "order.paid", 2)
		conflict("the same id to the "+then+" with other data", code, out)
		code, out = send(then, id, "order.refunded", 1)
		conflict("the same id to the "+then+" with another type", code, out)

		for _, route := range []string{then, first} {
			code, out = send(route, id, "order.paid", 1)
			want(t, "the same event to the "+route, code, http.StatusAccepted, out)
			if got := deliveryOf(out); got != wf {
				t.Errorf("the same event to the %s answered delivery %s, want %s (the first)", route, got, wf)
			}
		}
		code, out = call(t, "GET", "/v1/events/"+id+"?tenant="+tenant, shared.operator, nil)
		want(t, "status of "+id, code, http.StatusOK, out)
		eventually(t, id+" to be delivered", func() bool { return rcv.count(id) >= 1 })
	}
	// Every later send started nothing: each event reached the receiver once.
	for _, id := range ids {
		if n := rcv.count(id); n != 1 {
			t.Errorf("event %s reached the receiver %d times, want once", id, n)
		}
	}
}
