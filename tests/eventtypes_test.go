package tests

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/starter"
)

// TestEventTypes: on a stack of its own (the catalog is the installation's), a type put
// with a JSON Schema lets valid data through and refuses invalid data naming the failing
// path and rule, starting nothing; strict types refuse an unregistered type and accept a
// registered one; another client sees a change once its cached catalog is older than its TTL.
func TestEventTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stk, err := testkit.Start(ctx, testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stk.Stop)
	h := stk.Starter

	rcv := newReceiver(t, status(http.StatusOK))
	if _, err := h.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "shop", URL: rcv.URL}); err != nil {
		t.Fatal(err)
	}

	// Before any put: no catalog, nothing strict, any type goes.
	cat, err := h.EventTypes(ctx)
	if err != nil || cat.StrictTypes || len(cat.Types) != 0 {
		t.Fatalf("empty installation: catalog %+v, %v", cat, err)
	}
	send := func(id, typ, data string) error {
		_, err := h.Send(ctx, starter.Event{ID: id, EndpointID: "shop", Type: typ, Data: json.RawMessage(data)})
		return err
	}
	if err := send("evt_free", "anything.goes", `{"x":1}`); err != nil {
		t.Fatalf("unknown type, strict off: %v", err)
	}

	// A bad schema is refused, and starts no catalog.
	desc := "An order was paid."
	_, err = h.PutEventType(ctx, herald.PutEventTypeRequest{Name: "order.paid", Description: &desc, Schema: json.RawMessage(`{"type":"objekt"}`)})
	if !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), "/type") {
		t.Fatalf("bad schema: %v", err)
	}
	if _, err := stk.Client.DescribeWorkflow(ctx, herald.EventTypesID, ""); err == nil {
		t.Fatal("a refused put started the catalog workflow")
	}

	schema := `{"type":"object","required":["order"],"properties":{"order":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}}}`
	put, err := h.PutEventType(ctx, herald.PutEventTypeRequest{Name: "order.paid", Description: &desc, Schema: json.RawMessage(schema)})
	if err != nil {
		t.Fatal(err)
	}
	if put.Version != 1 || put.Description != desc || put.CreatedAt.IsZero() {
		t.Fatalf("put returned %+v", put)
	}

	// Valid data is delivered.
	if err := send("evt_ok", "order.paid", `{"order":{"id":42}}`); err != nil {
		t.Fatalf("valid data: %v", err)
	}
	waitFor(t, stk.Starter, "evt_ok", herald.StateDelivered)

	// Invalid data is refused with the path and the rule, and nothing is started.
	err = send("evt_bad", "order.paid", `{"order":{"id":"forty-two"}}`)
	for _, want := range []string{"order.paid", "at /order/id", "want integer", "rule /properties/order/properties/id/type"} {
		if !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Fatalf("invalid data: error %v, want ErrInvalid naming %q", err, want)
		}
	}
	if _, err := stk.Client.DescribeWorkflow(ctx, herald.DeliveryID("", "evt_bad"), ""); err == nil {
		t.Fatal("refused event evt_bad has a delivery")
	}

	// A second client (another producer) reads the catalog on its own clock.
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	other := starter.New(stk.Client, starter.Options{EventTypeCacheTTL: time.Minute, Now: now})
	if _, err := other.Send(ctx, starter.Event{ID: "evt_other_1", EndpointID: "shop", Type: "order.shipped", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatalf("other client, strict off: %v", err)
	}

	// Strict types: an unregistered type is refused, naming it and how to register it.
	st, err := h.SetStrictTypes(ctx, true)
	if err != nil || !st.StrictTypes {
		t.Fatalf("strict on: %+v, %v", st, err)
	}
	err = send("evt_unknown", "order.shipped", `{}`)
	if !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), `"order.shipped" is not registered`) ||
		!strings.Contains(err.Error(), "herald event-type put order.shipped") {
		t.Fatalf("strict, unknown type: %v", err)
	}
	if _, err := stk.Client.DescribeWorkflow(ctx, herald.DeliveryID("", "evt_unknown"), ""); err == nil {
		t.Fatal("refused event evt_unknown has a delivery")
	}
	if err := send("evt_known", "order.paid", `{"order":{"id":7}}`); err != nil {
		t.Fatalf("strict, registered type: %v", err)
	}
	waitFor(t, stk.Starter, "evt_known", herald.StateDelivered)

	// The other client uses its cached catalog until its TTL has passed, then the new one.
	if _, err := other.Send(ctx, starter.Event{ID: "evt_other_2", EndpointID: "shop", Type: "order.shipped", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatalf("other client within its TTL: %v", err)
	}
	mu.Lock()
	clock = clock.Add(time.Minute)
	mu.Unlock()
	if _, err := other.Send(ctx, starter.Event{ID: "evt_other_3", EndpointID: "shop", Type: "order.shipped", Data: json.RawMessage(`{}`)}); !errors.Is(err, starter.ErrInvalid) {
		t.Fatalf("other client past its TTL, strict on: %v", err)
	}

	// Registering the type (no schema) lets it through at once from the client that put it.
	if _, err := h.PutEventType(ctx, herald.PutEventTypeRequest{Name: "order.shipped"}); err != nil {
		t.Fatal(err)
	}
	if err := send("evt_shipped", "order.shipped", `"anything"`); err != nil {
		t.Fatalf("strict, type just registered: %v", err)
	}

	// A change keeps what it does not name; the list is sorted and carries the setting.
	newDesc := "An order was paid in full."
	changed, err := h.PutEventType(ctx, herald.PutEventTypeRequest{Name: "order.paid", Description: &newDesc})
	if err != nil {
		t.Fatal(err)
	}
	if changed.Version != 2 || changed.Description != newDesc || string(changed.Schema) != schema || !changed.CreatedAt.Equal(put.CreatedAt) {
		t.Fatalf("changed type: %+v", changed)
	}
	cat, err = h.EventTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !cat.StrictTypes || len(cat.Types) != 2 || cat.Types[0].Name != "order.paid" || cat.Types[1].Name != "order.shipped" {
		t.Fatalf("catalog: %+v", cat)
	}
	if _, err := h.GetEventType(ctx, "order.refunded"); !errors.Is(err, starter.ErrNotFound) {
		t.Fatalf("get unknown type: %v", err)
	}

	// Clearing the schema lets any data through again.
	if _, err := h.PutEventType(ctx, herald.PutEventTypeRequest{Name: "order.paid", ClearSchema: true}); err != nil {
		t.Fatal(err)
	}
	if err := send("evt_free_again", "order.paid", `{"order":"whatever"}`); err != nil {
		t.Fatalf("schema cleared: %v", err)
	}
}
