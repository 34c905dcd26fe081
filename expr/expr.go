// Package expr runs the expressions an endpoint may carry, written in CEL (the Common
// Expression Language of Kubernetes and Envoy, cel.dev): a filter, which decides whether
// an event sent to the endpoint's tenant goes to it, and a transformation, which shapes
// the request an attempt sends.
//
// Both see the event through four variables:
//
//	id      string  the event's id
//	type    string  the event's type, e.g. "order.paid"
//	tenant  string  the tenant it was sent to
//	data    dyn     the event's data, decoded from JSON (objects are maps, arrays lists,
//	                integral numbers ints, other numbers doubles)
//
// with CEL's standard functions and macros (has, all, exists, map, filter), the strings
// extension ("Order %s paid".format([...]), join, split, lowerAscii...) and optional
// values (data.?customer.?email.orValue("")).
//
// An expression is compiled and type-checked once (Compile errors name the line and
// column), then cached by its text in a bounded cache, so that a send to a thousand
// endpoints sharing a filter compiles it once. Every evaluation is bounded: the
// expression's length (MaxFilterBytes, MaxTransformBytes), its cost as CEL counts it
// (FilterCostLimit, TransformCostLimit: roughly one unit per operation, and per few bytes
// a string operation touches), a transformation's wall time (TransformTimeout) and its
// output (MaxBodyBytes). The package imports nothing from Herald or Temporal.
package expr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Bounds of an expression and of its evaluation.
const (
	// MaxFilterBytes is the longest filter.
	MaxFilterBytes = 2 << 10
	// MaxTransformBytes is the longest transformation.
	MaxTransformBytes = 8 << 10
	// FilterCostLimit is the most a filter may cost on one event (CEL's runtime cost).
	FilterCostLimit = 10_000
	// TransformCostLimit is the most a transformation may cost on one event.
	TransformCostLimit = 100_000
	// maxRecursion bounds the nesting of an expression's parse tree.
	maxRecursion = 64
	// cacheSize is how many compiled expressions the cache keeps (least recently used
	// out first).
	cacheSize = 1024
)

// Kind says what an expression is for.
type Kind string

// Kinds of expression.
const (
	KindFilter    Kind = "filter"
	KindTransform Kind = "transform"
)

// maxBytes is the longest expression of kind k.
func (k Kind) maxBytes() int {
	if k == KindTransform {
		return MaxTransformBytes
	}
	return MaxFilterBytes
}

// env is the CEL environment of every expression: the event's variables, the strings
// extension and optional values.
var env = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("id", cel.StringType),
		cel.Variable("type", cel.StringType),
		cel.Variable("tenant", cel.StringType),
		cel.Variable("data", cel.DynType),
		ext.Strings(),
		cel.OptionalTypes(),
		cel.ParserRecursionLimit(maxRecursion),
		cel.ParserExpressionSizeLimit(MaxTransformBytes),
	)
})

// cache holds compiled programs by kind and text.
var cache = func() *lru.Cache[string, cel.Program] {
	c, err := lru.New[string, cel.Program](cacheSize)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return c
}()

// compile returns the program of src as an expression of kind k, from the cache when it
// was compiled before.
func compile(k Kind, src string) (cel.Program, error) {
	key := string(k) + "\x00" + src
	if p, ok := cache.Get(key); ok {
		return p, nil
	}
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("%s: the expression is empty", k)
	}
	if len(src) > k.maxBytes() {
		return nil, fmt.Errorf("%s: the expression is %d bytes long; the limit is %d", k, len(src), k.maxBytes())
	}
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	ast, iss := e.Compile(src)
	if iss.Err() != nil {
		return nil, positioned(k, iss.Errors())
	}
	switch t := ast.OutputType(); {
	case t.Kind() == types.DynKind:
		// Known at evaluation only (e.g. data.flag): checked then.
	case k == KindFilter && !cel.BoolType.IsAssignableType(t):
		return nil, fmt.Errorf("filter: the expression gives %s; a filter must give a bool, e.g. type == \"order.paid\" && data.amount > 100", t)
	case k == KindTransform && !cel.MapType(cel.StringType, cel.DynType).IsAssignableType(t):
		return nil, fmt.Errorf(`transform: the expression gives %s; a transformation must give a map, e.g. {"body": {"text": "Order " + string(data.id) + " paid"}}`, t)
	}
	limit := uint64(FilterCostLimit)
	if k == KindTransform {
		limit = TransformCostLimit
	}
	p, err := e.Program(ast, cel.CostLimit(limit), cel.InterruptCheckFrequency(100), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	cache.Add(key, p)
	return p, nil
}

// positioned is a compile error naming the line and column (from 1) of each issue, at most
// three of them.
func positioned(k Kind, errs []*common.Error) error {
	var b strings.Builder
	for i, e := range errs {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(errs)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "line %d, column %d: %s", e.Location.Line(), e.Location.Column()+1, e.Message)
		if strings.Contains(e.Message, "'_?_:_'") {
			b.WriteString(` (the two branches give different types: wrap each in dyn(), e.g. c ? dyn({"cancel": "why"}) : dyn({"body": ...}))`)
		}
	}
	return &CompileError{Kind: k, Msg: b.String()}
}

// CompileError is an expression that does not parse or type-check.
type CompileError struct {
	Kind Kind
	// Msg names the line and column of each issue.
	Msg string
}

func (e *CompileError) Error() string { return string(e.Kind) + ": " + e.Msg }

// Check compiles src as an expression of kind k, as a put does: nil if it parses,
// type-checks and gives the right type (a bool for a filter, a map for a transformation).
func Check(k Kind, src string) error {
	_, err := compile(k, src)
	return err
}

// Event is what an expression sees of an event.
type Event struct {
	ID     string
	Type   string
	Tenant string
	// Data is the event's data, JSON.
	Data []byte
}

// Input is an event ready for evaluation: its data decoded once, however many expressions
// see it.
type Input struct {
	vars map[string]any
}

// NewInput decodes ev's data for evaluation. Data that is not JSON is an error; empty data
// is null.
func NewInput(ev Event) (Input, error) {
	var data any
	if len(bytes.TrimSpace(ev.Data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(ev.Data))
		dec.UseNumber()
		if err := dec.Decode(&data); err != nil {
			return Input{}, fmt.Errorf("the event's data is not JSON: %v", err)
		}
		if dec.More() {
			return Input{}, errors.New("the event's data is not one JSON value")
		}
		data = numbers(data)
	}
	return Input{vars: map[string]any{"id": ev.ID, "type": ev.Type, "tenant": ev.Tenant, "data": data}}, nil
}

// numbers replaces each JSON number in v by an int64 when it is an integer that fits, a
// float64 otherwise: so that data.count % 2 and data.id == 42 read as people expect.
func numbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, x := range t {
			t[k] = numbers(x)
		}
	case []any:
		for i, x := range t {
			t[i] = numbers(x)
		}
	}
	return v
}
