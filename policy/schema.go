package policy

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// english prints the library's messages.
var english = message.NewPrinter(language.English)

// An event type's JSON Schema, and the check of an event's data against it.
//
// Schemas are JSON Schema (draft 2020-12 unless their $schema names draft 4, 6, 7 or
// 2019-09). A schema may refer only inside itself ($ref to "#/$defs/..."): nothing is
// fetched, neither from the network nor from files. The format keyword is asserted
// (an "email" must be one). Compiling and checking are deterministic for the same input.

// schemaURL is the base URL a schema document is compiled under; rules are named relative
// to it.
const schemaURL = "https://herald.invalid/event-type-schema.json"

// Bounds on a schema, checked before and after compiling, so that neither compiling one nor
// checking data against one can take long: a schema within them compiles in milliseconds.
const (
	// MaxSchemaBytes is the largest schema document, compacted.
	MaxSchemaBytes = 64 << 10
	// MaxSchemaDepth is the deepest nesting of objects and arrays in a schema document
	// (a property's schema under "properties" is two levels below its parent's).
	MaxSchemaDepth = 64
	// MaxSchemaExpansion is the most subschemas a schema may have once every $ref is
	// replaced by what it refers to: it bounds the work of checking one value.
	MaxSchemaExpansion = 20000
)

// Schema is a compiled event type schema, safe for concurrent use.
type Schema struct{ s *jsonschema.Schema }

// CheckSchemaBounds checks a schema document's size and nesting depth, in one pass and
// without compiling it: what must be true before CompileSchema is worth running.
func CheckSchemaBounds(doc []byte) error {
	if len(doc) > MaxSchemaBytes {
		return fmt.Errorf("the schema is %d bytes; the limit is %d (64 KiB)", len(doc), MaxSchemaBytes)
	}
	if d := jsonDepth(doc); d > MaxSchemaDepth {
		return fmt.Errorf("the schema nests objects and arrays %d deep; the limit is %d: flatten it, or name repeated parts under $defs and refer to them with $ref", d, MaxSchemaDepth)
	}
	return nil
}

// jsonDepth is the deepest nesting of objects and arrays in a JSON text (brackets inside
// strings do not count); it reads text that is not JSON without failing.
func jsonDepth(doc []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range doc {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// CompileSchema checks that doc is a JSON Schema Herald can use, and compiles it. The
// error says what is wrong: over the bounds (CheckSchemaBounds, MaxSchemaExpansion), not
// JSON, not valid against the draft's metaschema, a $ref outside the document, or a
// recursive $ref.
func CompileSchema(doc []byte) (*Schema, error) {
	if err := CheckSchemaBounds(doc); err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("the schema is not valid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		if _, isBool := v.(bool); !isBool {
			return nil, fmt.Errorf("the schema is a JSON %s: a JSON Schema is an object (or true/false)", jsonKind(v))
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, v); err != nil {
		return nil, fmt.Errorf("the schema cannot be used: %v", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, schemaCompileError(err)
	}
	if err := checkExpansion(s); err != nil {
		return nil, err
	}
	return &Schema{s: s}, nil
}

// schemaCompileError says why a schema does not compile, without the library's URLs.
func schemaCompileError(err error) error {
	var inv *jsonschema.SchemaValidationError
	if errors.As(err, &inv) {
		var ve *jsonschema.ValidationError
		if errors.As(inv.Err, &ve) {
			vs := violations(ve)
			if len(vs) > 0 {
				return fmt.Errorf("the schema is not a valid JSON Schema: %s", describe(vs))
			}
		}
		return fmt.Errorf("the schema is not a valid JSON Schema: %v", inv.Err)
	}
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		return fmt.Errorf("the schema refers to %s: a schema may only refer inside itself (\"$ref\": \"#/$defs/...\"); put what it needs under $defs", load.URL)
	}
	return fmt.Errorf("the schema cannot be compiled: %s", strings.ReplaceAll(err.Error(), schemaURL, "schema"))
}

// noLoader refuses every URL: a schema is checked on its own, with nothing fetched.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is outside the schema", url)
}

// Violation is one way an event's data breaks its type's schema.
type Violation struct {
	// Path is where in the data, as a JSON pointer ("/order/id"); "" is the data itself.
	Path string `json:"path"`
	// Rule is the schema keyword that failed, as a JSON pointer into the schema
	// ("/properties/order/properties/id/type").
	Rule string `json:"rule"`
	// Message says what the rule wanted.
	Message string `json:"message"`
}

// String is "at /order/id: got string, want integer (rule /properties/order/properties/id/type)".
func (v Violation) String() string {
	path := v.Path
	if path == "" {
		path = "/ (the data itself)"
	}
	s := fmt.Sprintf("at %s: %s", path, v.Message)
	if v.Rule != "" {
		s += fmt.Sprintf(" (rule %s)", v.Rule)
	}
	return s
}

// SchemaError is data that does not match a schema: its violations, sorted by path.
type SchemaError struct {
	Violations []Violation
}

// Error names the first violations (three at most) and how many more there are.
func (e *SchemaError) Error() string { return describe(e.Violations) }

// maxNamed is how many violations an error names.
const maxNamed = 3

func describe(vs []Violation) string {
	parts := make([]string, 0, maxNamed)
	for i, v := range vs {
		if i == maxNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-maxNamed))
			break
		}
		parts = append(parts, v.String())
	}
	return strings.Join(parts, "; ")
}

// Check checks JSON data against the schema: nil when it matches, a *SchemaError when it
// does not, another error when data is not JSON.
func (s *Schema) Check(data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("data is not valid JSON: %v", err)
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	vs := violations(ve)
	if len(vs) == 0 {
		vs = []Violation{{Message: ve.Error()}}
	}
	return &SchemaError{Violations: vs}
}

// violations flattens a validation error to its leaves (the rules that failed themselves,
// not the groups around them), sorted by path then rule.
func violations(e *jsonschema.ValidationError) []Violation {
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if _, ok := e.ErrorKind.(*kind.Schema); ok {
			return
		}
		out = append(out, Violation{
			Path:    pointer(e.InstanceLocation),
			Rule:    rule(e),
			Message: e.ErrorKind.LocalizedString(english),
		})
	}
	walk(e)
	slices.SortFunc(out, func(a, b Violation) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Rule, b.Rule))
	})
	return slices.Compact(out)
}

// rule is the failed keyword's place in the schema, a JSON pointer when it is in the
// schema checked, else the absolute location the library gives (a metaschema's).
func rule(e *jsonschema.ValidationError) string {
	base, frag, _ := strings.Cut(e.SchemaURL, "#")
	loc := frag + pointer(e.ErrorKind.KeywordPath())
	if base == schemaURL {
		return loc
	}
	return base + "#" + loc
}

// pointer writes tokens as a JSON pointer (RFC 6901).
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case []any:
		return "array"
	case bool:
		return "boolean"
	}
	return "number"
}
