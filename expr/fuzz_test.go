package expr

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzExpr compiles any text as a filter and a transformation and runs what compiles on
// any data: nothing panics, every evaluation ends within its bounds, and an error is a
// value that names what it is about.
func FuzzExpr(f *testing.F) {
	for _, s := range []struct{ src, data string }{
		{`type == "order.paid" && data.amount > 100`, `{"amount": 150}`},
		{`data.items.exists(i, i.sku == "b")`, `{"items": [{"sku": "b"}]}`},
		{`{"body": {"text": "Order " + string(data.order_id) + " paid"}}`, `{"order_id": 42}`},
		{`data.amount == 0 ? {"cancel": "nothing"} : {"body": data}`, `{"amount": 0}`},
		{`{"headers": {"X-A": tenant}, "body": data.?x.orValue("")}`, `null`},
		{`type ==`, `{`},
		{`data.items.all(i, data.items.all(j, i == j))`, `{"items": [1,2,3,4,5,6,7,8,9]}`},
	} {
		f.Add(s.src, s.data)
	}
	f.Fuzz(func(t *testing.T, src, data string) {
		in, inErr := NewInput(Event{ID: "evt_1", Type: "order.paid", Tenant: "acme", Data: []byte(data)})
		if fl, err := CompileFilter(src); err != nil {
			if !strings.HasPrefix(err.Error(), "filter: ") {
				t.Fatalf("error %q does not say it is about the filter", err)
			}
		} else if inErr == nil {
			if _, err := fl.Match(in); err != nil && !strings.HasPrefix(err.Error(), "filter: ") {
				t.Fatalf("error %q does not say it is about the filter", err)
			}
		}
		tr, err := CompileTransform(src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "transform: ") {
				t.Fatalf("error %q does not say it is about the transformation", err)
			}
			return
		}
		if inErr != nil {
			return
		}
		out, err := tr.Apply(context.Background(), in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "transform: ") {
				t.Fatalf("error %q does not say it is about the transformation", err)
			}
			return
		}
		if len(out.Body) > MaxBodyBytes || len(out.Cancel) > MaxCancelReason || (out.Cancel != "" && (out.Body != nil || out.Headers != nil)) {
			t.Fatalf("output out of contract: %d bytes of body, cancel %q, %d headers", len(out.Body), out.Cancel, len(out.Headers))
		}
		if out.Cancel != "" && !utf8.ValidString(out.Cancel) {
			t.Fatalf("cancel reason is not UTF-8: %q", out.Cancel)
		}
	})
}
