package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestFanoutThroughTheAPI: POST /v1/events with a tenant reaches the endpoints subscribed
// to the type, GET /v1/events/{id} shows each delivery, a replay of the event replays its
// dead letters, and an event nobody subscribed to says so.
func TestFanoutThroughTheAPI(t *testing.T) {
	tenant := uniq("fan")
	orders, invoices := newReceiver(t, http.StatusOK), newReceiver(t, http.StatusInternalServerError)
	e1, e2 := uniq("fan-orders"), uniq("fan-invoices")
	putEndpoint(t, e1, tenant, orders.URL, 1, map[string]any{"types": []string{"order.*"}})
	code, out := call(t, "PUT", "/v1/endpoints/"+e2, shared.operator, map[string]any{"url": invoices.URL, "tenant": tenant, "attempts": 1, "schedule": []string{"1s"}, "types": []string{"invoice.sent"}})
	want(t, "put "+e2, code, http.StatusCreated, out)
	if types, _ := out["types"].([]any); len(types) != 1 || types[0] != "invoice.sent" {
		t.Fatalf("put answer shows types %v", out["types"])
	}

	publish := func(typ, id string) map[string]any {
		t.Helper()
		code, out := call(t, "POST", "/v1/events", shared.operator, map[string]any{"tenant": tenant, "type": typ, "id": id, "data": map[string]any{"n": 1}})
		want(t, "publish "+typ, code, http.StatusAccepted, out)
		return out
	}
	endpointsOf := func(out map[string]any) []string { return column(out, "deliveries", "endpoint_id") }
	if got := endpointsOf(publish("order.paid", "fan-api-1")); !slices.Equal(got, []string{e1}) {
		t.Fatalf("order.paid went to %v, want [%s]", got, e1)
	}
	if got := endpointsOf(publish("invoice.sent", "fan-api-2")); !slices.Equal(got, []string{e2}) {
		t.Fatalf("invoice.sent went to %v, want [%s]", got, e2)
	}
	if out := publish("user.created", "fan-api-3"); out["no_destination"] != true || len(endpointsOf(out)) != 0 {
		t.Fatalf("an event nobody subscribed to: %v", out)
	}
	q := "?tenant=" + url.QueryEscape(tenant)
	stateOf := func(ev string) string {
		_, v := call(t, "GET", "/v1/events/"+ev+q, shared.operator, nil)
		ds, _ := v["deliveries"].([]any)
		if len(ds) != 1 {
			return ""
		}
		st, _ := ds[0].(map[string]any)["status"].(map[string]any)
		s, _ := st["state"].(string)
		return s
	}
	eventually(t, "fan-api-2 to be a dead letter", func() bool { return stateOf("fan-api-2") == "dead_letter" })
	invoices.set(http.StatusOK)
	code, out = call(t, "POST", "/v1/events/fan-api-2/replay"+q, shared.operator, nil)
	want(t, "replay the event", code, http.StatusAccepted, out)
	if eps, _ := out["endpoints"].([]any); len(eps) != 1 || eps[0] != e2 {
		t.Fatalf("replay answer: %v", out)
	}
	eventually(t, "fan-api-2 to be delivered", func() bool { return stateOf("fan-api-2") == "delivered" })
	code, out = call(t, "GET", "/v1/events/fan-api-2"+q+"&endpoint="+e2, shared.operator, nil)
	want(t, "one delivery", code, http.StatusOK, out)
	if out["state"] != "delivered" || len(out["attempts"].([]any)) != 2 {
		t.Fatalf("the delivery to %s: %v", e2, out)
	}
	code, out = call(t, "GET", "/v1/events/fan-api-3"+q, shared.operator, nil)
	want(t, "the event with no destination", code, http.StatusOK, out)
	if out["no_destination"] != true {
		t.Fatalf("status of the event with no destination: %v", out)
	}

	// The dashboard links an endpoint's deliveries of events sent to its tenant to their page.
	c := browserClient(t)
	signIn(t, c, shared.operator)
	_, page := get(t, c, "/endpoints/"+e2)
	link := "/events/fan-api-2?endpoint=" + url.QueryEscape(e2) + "&amp;tenant=" + url.QueryEscape(tenant)
	if !strings.Contains(page, link) {
		t.Fatalf("the endpoint page does not link its delivery of fan-api-2 (%s):\n%s", link, page)
	}
	code, page = get(t, c, strings.ReplaceAll(link, "&amp;", "&"))
	if code != http.StatusOK || !strings.Contains(page, "delivered") {
		t.Fatalf("the delivery's page: status %d\n%s", code, page)
	}

	code, out = call(t, "POST", "/v1/events", shared.operator, map[string]any{"type": "test.event", "tenant": tenant, "endpoint_id": e1, "data": 1})
	want(t, "tenant and endpoint_id both", code, http.StatusBadRequest, out)
	code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"type": "test.event", "tenant": tenant, "data": 1})
	want(t, "a tenant token sending to another tenant", code, http.StatusForbidden, out)
	code, out = call(t, "PUT", "/v1/endpoints/"+e1, shared.operator, map[string]any{"types": []string{"order.*.x"}})
	want(t, "a bad pattern", code, http.StatusBadRequest, out)
	if !strings.Contains(out["error"].(string), "wildcard") {
		t.Fatalf("bad pattern error: %v", out)
	}
}

// TestDashboardEditsSubscriptions: a tenant sees an endpoint's subscribed types on its page
// and changes them with the form.
func TestDashboardEditsSubscriptions(t *testing.T) {
	ep, _, c := endpointSession(t, "fan-dash", "acme", shared.acme)
	_, page := get(t, c, "/endpoints/"+ep)
	if !strings.Contains(page, `<span id="subscribed-types">*</span>`) {
		t.Fatalf("the endpoint page does not show that it receives every type:\n%s", page)
	}
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the endpoint page has no csrf field")
	}
	resp, err := c.PostForm(shared.http.URL+"/endpoints/"+ep+"/types", url.Values{"csrf": {m[1]}, "types": {"order.paid, invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("types form: status %d, want 303", resp.StatusCode)
	}
	_, page = get(t, c, "/endpoints/"+ep+"?done=types")
	if !strings.Contains(page, `<span id="subscribed-types">order.paid, invoice.*</span>`) || !strings.Contains(page, "Subscriptions saved") {
		t.Fatalf("the endpoint page does not show the new types:\n%s", page)
	}
	_, out := call(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil)
	if types, _ := out["types"].([]any); len(types) != 2 {
		t.Fatalf("the API shows types %v", out["types"])
	}
	resp, err = c.PostForm(shared.http.URL+"/endpoints/"+ep+"/types", url.Values{"csrf": {m[1]}, "types": {"order.*.x"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("types form with a bad pattern: status %d, want 400", resp.StatusCode)
	}
}
