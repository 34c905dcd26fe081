package expr

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func input(t testing.TB, data string) Input {
	t.Helper()
	in, err := NewInput(Event{ID: "evt_1", Type: "order.paid", Tenant: "acme", Data: []byte(data)})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestFilter(t *testing.T) {
	in := input(t, `{"order_id": 42, "amount": 150.5, "customer": {"country": "FR"}, "items": [{"sku": "a"}, {"sku": "b"}]}`)
	for _, c := range []struct {
		src  string
		want bool
		err  string
	}{
		{src: `type == "order.paid"`, want: true},
		{src: `type.startsWith("invoice.")`, want: false},
		{src: `tenant == "acme" && id == "evt_1"`, want: true},
		{src: `data.amount > 100 && data.customer.country in ["FR", "DE"]`, want: true},
		{src: `data.order_id == 42 && data.order_id % 2 == 0`, want: true},
		{src: `data.items.exists(i, i.sku == "b")`, want: true},
		{src: `data.?missing.orValue("none") == "none"`, want: true},
		{src: `has(data.missing)`, want: false},
		{src: `data.missing == 1`, err: "no such key"},
		{src: `data.customer`, err: "not a bool"},
	} {
		f, err := CompileFilter(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got, err := f.Match(in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.src, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s = %v, %v; want %v", c.src, got, err, c.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		kind      Kind
		src, want string
	}{
		{KindFilter, `type == `, "line 1, column 9"},
		{KindFilter, "type == \"a\" &&\n  nope > 1", "line 2, column 3: undeclared reference to 'nope'"},
		{KindFilter, `type == 1`, "line 1, column 6: found no matching overload"},
		{KindFilter, `type`, "a filter must give a bool"},
		{KindFilter, ` `, "empty"},
		{KindFilter, strings.Repeat("true && ", MaxFilterBytes/8) + "true", "the limit is 2048"},
		{KindTransform, `"text"`, "a transformation must give a map"},
		{KindTransform, `data.n == 0 ? {"cancel": "none"} : {"body": {"text": "x"}}`, "line 1, column 13: found no matching overload for '_?_:_'"},
		{KindTransform, `{"body": `, "line 1, column 10"},
		{KindTransform, strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200), "recursion"},
	} {
		err := Check(c.kind, c.src)
		var ce *CompileError
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %.40q: error %v, want one saying %q", c.kind, c.src, err, c.want)
		} else if strings.Contains(c.want, "line") && !errors.As(err, &ce) {
			t.Errorf("%s %q: %T is not a CompileError", c.kind, c.src, err)
		}
	}
}

func TestCostLimit(t *testing.T) {
	items := make([]int, 2000)
	b, _ := json.Marshal(map[string]any{"items": items})
	in := input(t, string(b))
	f, err := CompileFilter(`data.items.all(i, data.items.all(j, i == j))`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Match(in); err == nil || !strings.Contains(err.Error(), "cost") {
		t.Fatalf("quadratic filter on 2,000 items: %v, want the cost limit", err)
	}
	tr, err := CompileTransform(`{"body": data.items.map(i, data.items.map(j, i + j))}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Apply(context.Background(), in); err == nil || !strings.Contains(err.Error(), "cost") {
		t.Fatalf("quadratic transformation on 2,000 items: %v, want the cost limit", err)
	}
}

func TestTransform(t *testing.T) {
	in := input(t, `{"order_id": 42, "amount": 0, "note": "<b>&</b>"}`)
	for _, c := range []struct {
		src, body, cancel, err string
		headers                map[string]string
	}{
		{src: `{"body": {"text": "Order " + string(data.order_id) + " paid"}}`, body: `{"text":"Order 42 paid"}`},
		{src: `{"body": {"text": "Order %d paid".format([data.order_id])}, "headers": {"X-Kind": type}}`, body: `{"text":"Order 42 paid"}`, headers: map[string]string{"X-Kind": "order.paid"}},
		{src: `{"body": data.note}`, body: `<b>&</b>`},
		{src: `{"body": {"n": data.note}}`, body: `{"n":"<b>&</b>"}`},
		{src: `{"headers": {"X-Tenant": tenant}}`, headers: map[string]string{"X-Tenant": "acme"}},
		{src: `data.amount == 0 ? {"cancel": "nothing to pay"} : {"body": data}`, cancel: "nothing to pay"},
		{src: `data.amount == 0 ? dyn({"cancel": "nothing to pay"}) : dyn({"body": {"text": "x"}})`, cancel: "nothing to pay"},
		{src: `{"cancel": ""}`, err: "non-empty"},
		{src: `{"cancel": "x", "body": 1}`, err: "alone"},
		{src: `{"bdy": 1}`, err: `unknown key "bdy"`},
		{src: `{"headers": {"X-N": 1}}`, err: "must be a string"},
		{src: `{"body": data.nope}`, err: "no such key"},
	} {
		tr, err := CompileTransform(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		out, err := tr.Apply(context.Background(), in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.src, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if string(out.Body) != c.body || out.Cancel != c.cancel || len(out.Headers) != len(c.headers) {
			t.Errorf("%s = body %s, cancel %q, headers %v; want %s, %q, %v", c.src, out.Body, out.Cancel, out.Headers, c.body, c.cancel, c.headers)
		}
		for k, v := range c.headers {
			if out.Headers[k] != v {
				t.Errorf("%s: header %s = %q, want %q", c.src, k, out.Headers[k], v)
			}
		}
	}
}

func TestTransformBodyLimit(t *testing.T) {
	tr, err := CompileTransform(`{"body": {"s": data.s}}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Apply(context.Background(), input(t, `{"s": "`+strings.Repeat("x", MaxBodyBytes)+`"}`)); err == nil || !strings.Contains(err.Error(), "the limit is") {
		t.Fatalf("a body past %d bytes: %v", MaxBodyBytes, err)
	}
}

func TestNewInputRefusesNonJSON(t *testing.T) {
	if _, err := NewInput(Event{Data: []byte(`{"a":`)}); err == nil {
		t.Fatal("broken JSON accepted")
	}
	if _, err := NewInput(Event{Data: []byte(`1 2`)}); err == nil {
		t.Fatal("two JSON values accepted")
	}
	in, err := NewInput(Event{})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := CompileFilter(`data == null`)
	if ok, err := f.Match(in); !ok || err != nil {
		t.Fatalf("empty data is not null: %v %v", ok, err)
	}
}
