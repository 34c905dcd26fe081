package server

import (
	"net/http"
	"testing"
)

// TestSendOrderingKey: the API takes ordering_on_dead_letter on an endpoint put and
// ordering_key on a send, refusing values outside their grammar, and the event's status
// names its key.
func TestSendOrderingKey(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("ordered")
	code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"url": rcv.URL, "tenant": "acme", "ordering_on_dead_letter": "drop"})
	want(t, "put with a bad ordering_on_dead_letter", code, http.StatusBadRequest, out)
	code, out = call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"url": rcv.URL, "tenant": "acme", "ordering_on_dead_letter": "skip"})
	want(t, "put", code, http.StatusCreated, out)

	for _, bad := range []string{"a b", "it's", "k/1", string(make([]byte, 129))} {
		code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "type": "t", "data": 1, "ordering_key": bad})
		want(t, "send with ordering key "+bad, code, http.StatusBadRequest, out)
	}
	id := uniq("evt_ordered")
	code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "id": id, "type": "t", "data": 1, "ordering_key": "customer:42"})
	want(t, "send", code, http.StatusAccepted, out)
	waitState(t, id, "delivered")
	_, st := call(t, "GET", "/v1/events/"+id, shared.acme, nil)
	if o, _ := st["ordering"].(map[string]any); o["key"] != "customer:42" {
		t.Fatalf("status ordering %v, want key customer:42: %v", st["ordering"], st)
	}
}
