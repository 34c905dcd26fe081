package expr

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkFilter1000 is a send's filter work for 1,000 subscribers: the event decoded
// once, then one evaluation per subscriber (all sharing one compiled filter, as the
// cache makes them).
func BenchmarkFilter1000(b *testing.B) {
	data := []byte(`{"order_id": 42, "amount": 150.5, "customer": {"country": "FR"}}`)
	f, err := CompileFilter(`type == "order.paid" && data.amount > 100 && data.customer.country in ["FR", "DE"]`)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		in, err := NewInput(Event{ID: "evt_1", Type: "order.paid", Tenant: "acme", Data: data})
		if err != nil {
			b.Fatal(err)
		}
		for range 1000 {
			if ok, err := f.Match(in); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	}
}

// BenchmarkTransform2KB is one attempt's transformation of a 2 KB event into a
// Slack-style body: the data decoded, the expression run, the body encoded.
func BenchmarkTransform2KB(b *testing.B) {
	note := strings.Repeat("x", 1900)
	data, _ := json.Marshal(map[string]any{"order_id": 42, "amount": 150.5, "note": note})
	t, err := CompileTransform(`{"body": {"text": "Order " + string(data.order_id) + " paid", "blocks": [{"type": "section", "text": data.note}]}}`)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		in, err := NewInput(Event{ID: "evt_1", Type: "order.paid", Tenant: "acme", Data: data})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := t.Apply(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}
