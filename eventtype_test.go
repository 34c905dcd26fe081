package herald

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestValidateEventTypeName(t *testing.T) {
	for _, ok := range []string{"order.paid", "a", "Order_Paid-v2", "invoice.line_item.created", strings.Repeat("x", MaxEventTypeName)} {
		if err := ValidateEventTypeName(ok); err != nil {
			t.Errorf("ValidateEventTypeName(%q) = %v, want ok", ok, err)
		}
	}
	for name, want := range map[string]string{
		"":                                "empty",
		"order paid":                      `contains ' '`,
		"order.*":                         `contains '*'`,
		"order\npaid":                     `contains '\n'`,
		"order/paid":                      `contains '/'`,
		"ordér":                           `contains 'é'`,
		strings.Repeat("x", 256):          "256 characters long: use at most 255",
		"order:paid":                      "use only letters, digits, '-', '_' and '.'",
		strings.Repeat("é", 128) + "long": "characters long",
	} {
		err := ValidateEventTypeName(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateEventTypeName(%.20q) = %v, want an error saying %q", name, err, want)
		}
	}
}

func TestPutEventTypeRequestValidate(t *testing.T) {
	str := func(s string) *string { return &s }
	big := `{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`
	for _, c := range []struct {
		name string
		req  PutEventTypeRequest
		want string // "" for ok
	}{
		{"name only", PutEventTypeRequest{Name: "order.paid"}, ""},
		{"schema", PutEventTypeRequest{Name: "order.paid", Schema: json.RawMessage(`{"type":"object"}`)}, ""},
		{"bad name", PutEventTypeRequest{Name: "order paid"}, "contains ' '"},
		{"long description", PutEventTypeRequest{Name: "a", Description: str(strings.Repeat("d", MaxEventTypeDescription+1))}, "use at most 1024"},
		{"description not UTF-8", PutEventTypeRequest{Name: "a", Description: str("\xff")}, "UTF-8"},
		{"schema not JSON", PutEventTypeRequest{Name: "a", Schema: json.RawMessage(`{`)}, "event type a: the schema is not valid JSON"},
		{"schema invalid", PutEventTypeRequest{Name: "a", Schema: json.RawMessage(`{"required":"id"}`)}, "event type a: the schema is not a valid JSON Schema: at /required"},
		{"schema too large", PutEventTypeRequest{Name: "a", Schema: json.RawMessage(big)}, "the limit is 65536 (64 KiB)"},
		{"schema and clear", PutEventTypeRequest{Name: "a", Schema: json.RawMessage(`{}`), ClearSchema: true}, "not both"},
	} {
		err := c.req.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
	r := PutEventTypeRequest{Name: "a", Schema: json.RawMessage("{ \"type\" :\n \"object\" }")}
	if err := r.Validate(); err != nil || string(r.Schema) != `{"type":"object"}` {
		t.Errorf("Validate kept the schema as %s (%v), want it compacted", r.Schema, err)
	}
}

func TestEventTypeCatalogPut(t *testing.T) {
	var c EventTypeCatalog
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	d := "paid"
	c.Put(PutEventTypeRequest{Name: "order.paid", Description: &d, Schema: json.RawMessage(`{"type":"object"}`)}, t0)
	c.Put(PutEventTypeRequest{Name: "invoice.sent"}, t0)
	got := c.Put(PutEventTypeRequest{Name: "order.paid"}, t1)
	if got.Version != 2 || got.Description != "paid" || string(got.Schema) != `{"type":"object"}` || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t1) {
		t.Errorf("a put naming nothing changed the type: %+v", got)
	}
	empty := ""
	got = c.Put(PutEventTypeRequest{Name: "order.paid", Description: &empty, ClearSchema: true}, t1)
	if got.Description != "" || got.Schema != nil || got.Version != 3 {
		t.Errorf("clearing: %+v", got)
	}
	if len(c.Types) != 2 || c.Types[0].Name != "invoice.sent" || c.Types[1].Name != "order.paid" {
		t.Errorf("types not sorted by name: %+v", c.Types)
	}
	if _, ok := c.Find("order.refunded"); ok {
		t.Error("Find found a type never put")
	}

	// The catalog's size is bounded as a whole, and CheckPut leaves the catalog alone.
	schema := json.RawMessage(`{"description":"` + strings.Repeat("s", 60<<10) + `"}`)
	var full EventTypeCatalog
	n := 0
	for ; ; n++ {
		req := PutEventTypeRequest{Name: "t" + strings.Repeat("x", n), Schema: schema}
		if err := full.CheckPut(req); err != nil {
			if !strings.Contains(err.Error(), "the limit is 1048576 (1 MiB)") {
				t.Fatalf("CheckPut: %v", err)
			}
			break
		}
		full.Put(req, t0)
	}
	if n != len(full.Types) || n < 15 || n > 17 {
		t.Errorf("%d types of 60 KiB fit (catalog holds %d), want about 16", n, len(full.Types))
	}
}
