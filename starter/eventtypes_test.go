package starter

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// withCatalog returns a client whose cached catalog is cat, read at now: no Temporal call
// is made while it is fresh (the Temporal client is nil).
func withCatalog(cat herald.EventTypeCatalog, now time.Time) *Client {
	s := New(nil, Options{Now: func() time.Time { return now }})
	s.types.catalog, s.types.read, s.types.compiled = cat, now, map[string]compiledSchema{}
	return s
}

func TestCheckType(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["order"],"properties":{"order":{"type":"integer"}}}`)
	cat := herald.EventTypeCatalog{Types: []herald.EventType{
		{Name: "order.paid", Version: 1, Schema: schema},
		{Name: "order.shipped", Version: 1},
	}}
	ev := func(typ, data string) Event {
		return Event{ID: "evt_1", EndpointID: "shop", Type: typ, Data: json.RawMessage(data)}
	}
	for _, strict := range []bool{false, true} {
		cat.StrictTypes = strict
		s := withCatalog(cat, time.Now())
		ctx := context.Background()
		if err := s.checkType(ctx, ev("order.paid", `{"order":1}`)); err != nil {
			t.Errorf("strict %v, valid data: %v", strict, err)
		}
		if err := s.checkType(ctx, ev("order.shipped", `"anything"`)); err != nil {
			t.Errorf("strict %v, type without schema: %v", strict, err)
		}
		err := s.checkType(ctx, ev("order.paid", `{"order":"one"}`))
		var se *policy.SchemaError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &se) || se.Violations[0].Path != "/order" ||
			!strings.Contains(err.Error(), "event evt_1: data does not match the schema of event type order.paid: at /order: got string, want integer (rule /properties/order/type)") {
			t.Errorf("strict %v, invalid data: %v", strict, err)
		}
		err = s.checkType(ctx, ev("order.refunded", `{}`))
		if strict != (err != nil) {
			t.Errorf("strict %v, unregistered type: %v", strict, err)
		}
		if strict && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"order.refunded" is not registered`) ||
			!strings.Contains(err.Error(), "PUT /v1/event-types/order.refunded")) {
			t.Errorf("strict, unregistered type: %v, want it named with how to register it", err)
		}
		if n := len(s.types.compiled); n != 1 {
			t.Errorf("%d schemas compiled, want 1 (once, then reused)", n)
		}
	}
}

// BenchmarkCheckType is the send path's cost of checking an event against a cached
// catalog: a type with a small schema.
func BenchmarkCheckType(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","required":["order"],"properties":{"order":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"},"email":{"type":"string","format":"email"}}}}}`)
	s := withCatalog(herald.EventTypeCatalog{Types: []herald.EventType{{Name: "order.paid", Version: 1, Schema: schema}}}, time.Now())
	ev := Event{ID: "evt_1", EndpointID: "shop", Type: "order.paid", Data: json.RawMessage(`{"order":{"id":42,"email":"a@example.com"}}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.checkType(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
}
