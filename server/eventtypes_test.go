package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestEventTypesAPI: operators put event types (PUT and POST), every token lists and reads
// them, a schema is enforced on POST /v1/events with the failing path and rule, and
// strict types (PUT /v1/settings) refuse an unregistered type.
func TestEventTypesAPI(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("typed")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	paid, shipped := uniq("order.paid"), uniq("order.shipped")
	schema := map[string]any{
		"type": "object", "required": []string{"order"},
		"properties": map[string]any{"order": map[string]any{"type": "integer", "minimum": 1}},
	}

	// Only operators put.
	code, out := call(t, "PUT", "/v1/event-types/"+paid, shared.acme, map[string]any{"description": "x"})
	want(t, "tenant put", code, http.StatusForbidden, out)
	code, out = call(t, "PUT", "/v1/settings", shared.acme, map[string]any{"strict_types": true})
	want(t, "tenant settings", code, http.StatusForbidden, out)

	// Bad input says what is wrong.
	for _, c := range []struct {
		method, path string
		body         any
		say          string
	}{
		{"PUT", "/v1/event-types/order%20paid", map[string]any{}, "contains ' '"},
		{"PUT", "/v1/event-types/" + paid, map[string]any{"schema": map[string]any{"type": "objekt"}}, "at /type"},
		{"PUT", "/v1/event-types/" + paid, map[string]any{"schema": map[string]any{"$ref": "https://example.com/s.json"}}, "only refer inside itself"},
		{"PUT", "/v1/event-types/" + paid, map[string]any{"schema": nil}, "clear_schema"},
		{"PUT", "/v1/event-types/" + paid, map[string]any{"name": paid}, "unknown field"},
		{"POST", "/v1/event-types", map[string]any{"description": "no name"}, "name is missing"},
		{"PUT", "/v1/settings", map[string]any{}, "strict_types is missing"},
		{"PUT", "/v1/event-types/" + paid, `{"schema":` + deepSchema(1000) + `}`, "nests objects and arrays 1001 deep; the limit is 64"},
		{"PUT", "/v1/event-types/" + paid, `{"schema":` + deepSchema(6000) + `}`, "nests objects and arrays 6001 deep; the limit is 64"},
		{"PUT", "/v1/event-types/" + paid, map[string]any{"schema": map[string]any{"properties": map[string]any{"child": map[string]any{"$ref": "#"}}}}, "the schema is recursive: /properties/child refers back to /"},
	} {
		code, out := call(t, c.method, c.path, shared.operator, c.body)
		want(t, c.method+" "+c.path, code, http.StatusBadRequest, out)
		if msg, _ := out["error"].(string); !strings.Contains(msg, c.say) {
			t.Errorf("%s %s %v: error %q, want it to say %q", c.method, c.path, c.body, msg, c.say)
		}
	}
	code, out = call(t, "PUT", "/v1/event-types/"+paid, shared.operator, `{"schema":{"description":"`+strings.Repeat("x", 300<<10)+`"}}`)
	want(t, "huge schema", code, http.StatusRequestEntityTooLarge, out)

	code, out = call(t, "PUT", "/v1/event-types/"+paid, shared.operator, map[string]any{"description": "An order was paid.", "schema": schema})
	want(t, "put", code, http.StatusCreated, out)
	if out["name"] != paid || out["version"] != 1.0 || out["schema"] == nil {
		t.Fatalf("put answered %v", out)
	}
	code, out = call(t, "PUT", "/v1/event-types/"+paid, shared.operator, map[string]any{"description": "An order was paid in full."})
	want(t, "put again", code, http.StatusOK, out)
	if out["version"] != 2.0 || out["schema"] == nil {
		t.Fatalf("a put without a schema must keep it: %v", out)
	}
	code, out = call(t, "POST", "/v1/event-types", shared.operator, map[string]any{"name": shipped})
	want(t, "post", code, http.StatusCreated, out)

	// Every token reads the catalog.
	code, out = call(t, "GET", "/v1/event-types/"+paid, shared.acme, nil)
	want(t, "tenant get", code, http.StatusOK, out)
	if out["description"] != "An order was paid in full." {
		t.Fatalf("get answered %v", out)
	}
	code, out = call(t, "GET", "/v1/event-types", shared.globex, nil)
	want(t, "tenant list", code, http.StatusOK, out)
	names := map[string]bool{}
	list, _ := out["event_types"].([]any)
	for _, e := range list {
		names[e.(map[string]any)["name"].(string)] = true
	}
	if !names[paid] || !names[shipped] || out["strict_types"] != false {
		t.Fatalf("list answered %v", out)
	}
	code, out = call(t, "GET", "/v1/event-types/"+uniq("never.put"), shared.operator, nil)
	want(t, "get unknown", code, http.StatusNotFound, out)

	// The schema is enforced on send: 400 with the path and the rule, and nothing started.
	evt := uniq("evt_typed")
	code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "id": evt, "type": paid, "data": map[string]any{"order": 0}})
	want(t, "send invalid", code, http.StatusBadRequest, out)
	if msg, _ := out["error"].(string); !strings.Contains(msg, "at /order") || !strings.Contains(msg, "rule /properties/order/minimum") {
		t.Fatalf("send invalid: error %q should name the path and the rule", msg)
	}
	vs, _ := out["violations"].([]any)
	if len(vs) != 1 {
		t.Fatalf("send invalid: violations %v, want one", out["violations"])
	}
	if v := vs[0].(map[string]any); v["path"] != "/order" || v["rule"] != "/properties/order/minimum" || v["message"] == "" {
		t.Fatalf("send invalid: violation %v", v)
	}
	code, out = call(t, "GET", "/v1/events/"+evt, shared.acme, nil)
	want(t, "refused event", code, http.StatusNotFound, out)
	code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "id": evt, "type": paid, "data": map[string]any{"order": 7}})
	want(t, "send valid", code, http.StatusAccepted, out)
	waitState(t, evt, "delivered")

	// Strict types: an unregistered type is refused, a registered one goes.
	code, out = call(t, "PUT", "/v1/settings", shared.operator, map[string]any{"strict_types": true})
	want(t, "strict on", code, http.StatusOK, out)
	t.Cleanup(func() {
		if _, err := shared.starter.SetStrictTypes(context.Background(), false); err != nil {
			t.Errorf("strict off: %v", err)
		}
	})
	code, out = call(t, "GET", "/v1/settings", shared.acme, nil)
	want(t, "get settings", code, http.StatusOK, out)
	if out["strict_types"] != true {
		t.Fatalf("settings answered %v", out)
	}
	unknown := uniq("order.refunded")
	code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "type": unknown, "data": map[string]any{}})
	want(t, "send unregistered type", code, http.StatusBadRequest, out)
	if msg, _ := out["error"].(string); !strings.Contains(msg, unknown) || !strings.Contains(msg, "PUT /v1/event-types/"+unknown) {
		t.Fatalf("strict: error %q should name the type and how to register it", msg)
	}
	code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "type": shipped, "data": map[string]any{}})
	want(t, "send registered type", code, http.StatusAccepted, out)
	code, out = call(t, "PUT", "/v1/settings", shared.operator, map[string]any{"strict_types": false})
	want(t, "strict off", code, http.StatusOK, out)
}

// deepSchema is a JSON Schema n levels of "items" deep.
func deepSchema(n int) string {
	return strings.Repeat(`{"items":`, n) + `{"type":"string"}` + strings.Repeat(`}`, n)
}
