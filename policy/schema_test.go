package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCompileSchemaRefuses(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"not JSON", `{"type":`, []string{"not valid JSON"}},
		{"an array", `[{"type":"string"}]`, []string{"is a JSON array", "an object"}},
		{"a string", `"object"`, []string{"is a JSON string"}},
		{"unknown type", `{"type":"objekt"}`, []string{"not a valid JSON Schema", "at /type"}},
		{"minimum not a number", `{"properties":{"n":{"minimum":"3"}}}`, []string{"not a valid JSON Schema", "at /properties/n/minimum"}},
		{"bad pattern", `{"type":"string","pattern":"(?=x)"}`, []string{"at /pattern", "regex"}},
		{"remote $ref", `{"$ref":"https://example.com/s.json"}`, []string{"refers to https://example.com/s.json", "only refer inside itself"}},
		{"file $ref", `{"$ref":"file:///etc/hostname"}`, []string{"refers to file:///etc/hostname"}},
		{"unknown metaschema", `{"$schema":"https://example.com/meta"}`, []string{"https://example.com/meta"}},
		{"dangling local $ref", `{"$ref":"#/$defs/missing"}`, []string{"missing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CompileSchema([]byte(c.doc))
			if err == nil {
				t.Fatalf("CompileSchema(%s) accepted it", c.doc)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("CompileSchema(%s) = %q, want it to say %q", c.doc, err, w)
				}
			}
		})
	}
}

func TestSchemaCheck(t *testing.T) {
	const doc = `{
	  "type": "object",
	  "required": ["order"],
	  "properties": {
	    "order": {
	      "type": "object",
	      "required": ["id"],
	      "properties": {
	        "id": {"type": "integer", "minimum": 1},
	        "email": {"type": "string", "format": "email"},
	        "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}}
	      }
	    },
	    "a/b~c": {"type": "boolean"}
	  },
	  "$defs": {"line": {"type": "object", "required": ["sku"]}}
	}`
	s, err := CompileSchema([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		data string
		want []Violation // nil: valid
	}{
		{`{"order":{"id":42}}`, nil},
		{`{"order":{"id":42,"email":"a@example.com","lines":[{"sku":"x"}]},"extra":true}`, nil},
		{`{}`, []Violation{{Path: "", Rule: "/required"}}},
		{`[]`, []Violation{{Path: "", Rule: "/type"}}},
		{`{"order":{"id":"42"}}`, []Violation{{Path: "/order/id", Rule: "/properties/order/properties/id/type"}}},
		{`{"order":{"id":0}}`, []Violation{{Path: "/order/id", Rule: "/properties/order/properties/id/minimum"}}},
		{`{"order":{"id":1,"email":"nope"}}`, []Violation{{Path: "/order/email", Rule: "/properties/order/properties/email/format"}}},
		{`{"order":{"id":1,"lines":[{"sku":"a"},{}]}}`, []Violation{{Path: "/order/lines/1", Rule: "/$defs/line/required"}}},
		{`{"order":{"id":1},"a/b~c":1}`, []Violation{{Path: "/a~1b~0c", Rule: "/properties/a~1b~0c/type"}}},
		{`{"order":{"id":"x","email":"nope"}}`, []Violation{
			{Path: "/order/email", Rule: "/properties/order/properties/email/format"},
			{Path: "/order/id", Rule: "/properties/order/properties/id/type"},
		}},
	} {
		err := s.Check([]byte(c.data))
		if c.want == nil {
			if err != nil {
				t.Errorf("Check(%s) = %v, want it valid", c.data, err)
			}
			continue
		}
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Errorf("Check(%s) = %v, want a SchemaError", c.data, err)
			continue
		}
		if len(se.Violations) != len(c.want) {
			t.Errorf("Check(%s) = %+v, want %d violations", c.data, se.Violations, len(c.want))
			continue
		}
		for i, w := range c.want {
			got := se.Violations[i]
			if got.Path != w.Path || got.Rule != w.Rule || got.Message == "" {
				t.Errorf("Check(%s) violation %d = %+v, want path %q rule %q and a message", c.data, i, got, w.Path, w.Rule)
			}
			if !strings.Contains(err.Error(), "rule "+w.Rule) {
				t.Errorf("Check(%s) = %q, want it to name rule %s", c.data, err, w.Rule)
			}
		}
	}
	if err := s.Check([]byte(`{"order":`)); err == nil || errors.As(err, new(*SchemaError)) {
		t.Errorf("Check of broken JSON = %v, want a JSON error", err)
	}
}

func TestSchemaErrorNamesAtMostThree(t *testing.T) {
	s, err := CompileSchema([]byte(`{"type":"array","items":{"type":"integer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Check([]byte(`["a","b","c","d","e"]`))
	msg := err.Error()
	if !strings.Contains(msg, "at /0:") || !strings.Contains(msg, "at /2:") || strings.Contains(msg, "at /3:") || !strings.HasSuffix(msg, "and 2 more") {
		t.Errorf("error = %q, want the first three violations and \"and 2 more\"", msg)
	}
	if !strings.Contains(msg, "want integer") {
		t.Errorf("error = %q, want it to say what the rule wanted", msg)
	}
}

func TestSchemaDrafts(t *testing.T) {
	// draft-07's exclusiveMinimum is a number; draft-04's a boolean next to minimum.
	for _, doc := range []string{
		`{"$schema":"http://json-schema.org/draft-07/schema#","exclusiveMinimum":1}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","minimum":1,"exclusiveMinimum":true}`,
	} {
		s, err := CompileSchema([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if s.Check([]byte(`1`)) == nil || s.Check([]byte(`2`)) != nil {
			t.Errorf("%s: 1 must fail and 2 pass", doc)
		}
	}
}

// nested is a schema n levels of "items" deep.
func nested(n int) string {
	return strings.Repeat(`{"items":`, n) + `{"type":"string"}` + strings.Repeat(`}`, n)
}

func TestCompileSchemaBounds(t *testing.T) {
	// A $defs chain where each link refers twice to the next: 2^30 subschemas once unfolded.
	var bomb strings.Builder
	bomb.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := range 30 {
		fmt.Fprintf(&bomb, `"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	bomb.WriteString(`"d30":{"type":"string"}}}`)
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"1,000 deep", nested(1000), []string{"nests objects and arrays 1001 deep", "the limit is 64"}},
		{"6,000 deep", nested(6000), []string{"nests objects and arrays 6001 deep", "the limit is 64"}},
		{"over 64 KiB", `{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`, []string{"the limit is 65536 (64 KiB)"}},
		{"refers to itself", `{"type":"object","properties":{"child":{"$ref":"#"}}}`, []string{"the schema is recursive: /properties/child refers back to /, which contains it"}},
		{"a $defs cycle", `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}}}`, []string{"the schema is recursive"}},
		{"a direct loop", `{"$ref":"#"}`, []string{"the schema is recursive"}},
		{"unfolds exponentially", bomb.String(), []string{"unfolds into more than 20000 subschemas"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CompileSchema([]byte(c.doc))
			if err == nil {
				t.Fatalf("CompileSchema accepted it")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("CompileSchema = %q, want it to say %q", err, w)
				}
			}
		})
	}
	// Within the bounds: deep but under the limit, and $refs that do not loop.
	for _, doc := range []string{
		nested(60),
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string","pattern":"[{\\[\"]"}}}`,
		`{"description":"brackets in strings do not nest: ` + strings.Repeat("[{", 100) + `"}`,
	} {
		if _, err := CompileSchema([]byte(doc)); err != nil {
			t.Errorf("CompileSchema(%.80s…) = %v, want it accepted", doc, err)
		}
	}
}
