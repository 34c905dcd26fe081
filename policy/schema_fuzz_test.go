package policy

import (
	"strings"
	"testing"
)

// FuzzCompileSchema: any document is refused or compiled without panicking, and a schema
// compiled checks data without looping (the fuzzer's per-input timeout catches a hang).
func FuzzCompileSchema(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`,
		`{"properties":{"child":{"$ref":"#"}}}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},"b":{}}}`,
		`{"$dynamicRef":"#x","$defs":{"x":{"$dynamicAnchor":"x","items":{"$dynamicRef":"#x"}}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$ref":"#/definitions/a"}},"$ref":"#/definitions/a"}`,
		nested(10), `true`, `"x"`, `{"description":"[{[{"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		s, err := CompileSchema([]byte(doc))
		if err != nil {
			return
		}
		if d := jsonDepth([]byte(doc)); d > MaxSchemaDepth {
			t.Fatalf("compiled a schema %d deep", d)
		}
		for _, data := range []string{`{}`, `[]`, `"x"`, `1`, `null`, `{"a":[{"a":{}}]}`, strings.Repeat(`[`, 20) + strings.Repeat(`]`, 20)} {
			_ = s.Check([]byte(data))
		}
	})
}
