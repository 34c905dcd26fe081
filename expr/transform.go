package expr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"google.golang.org/protobuf/types/known/structpb"
)

// Bounds of a transformation's evaluation.
const (
	// TransformTimeout bounds one evaluation's wall time.
	TransformTimeout = 100 * time.Millisecond
	// MaxBodyBytes is the largest body a transformation may produce.
	MaxBodyBytes = 256 << 10
	// MaxCancelReason is the longest reason a cancellation may give.
	MaxCancelReason = 500
)

// Transform is a compiled transformation. Its expression gives a map with these keys, all
// optional:
//
//	body     any JSON value: the request's body becomes its JSON; a string is sent as
//	         its bytes. Absent, the body is Herald's envelope, as without a transformation.
//	headers  a map of header names to string values, set on the request after the
//	         endpoint's custom headers (same rules; Content-Type may be set too).
//	cancel   a reason (a non-empty string): the delivery is cancelled, no request is sent.
//	         It cannot go with body or headers.
//
// e.g. {"body": {"text": "Order " + string(data.order_id) + " paid"}}, or
// data.amount == 0 ? {"cancel": "nothing to pay"} : {"body": data}.
type Transform struct {
	src string
	prg cel.Program
}

// Output is what a transformation made of an event.
type Output struct {
	// Body is the request's body; nil keeps Herald's envelope.
	Body []byte
	// Headers are the headers it sets, by name as written.
	Headers map[string]string
	// Cancel, when set, is why the delivery is cancelled.
	Cancel string
}

// CompileTransform compiles src as a transformation (from the cache when it was compiled
// before).
func CompileTransform(src string) (*Transform, error) {
	p, err := compile(KindTransform, src)
	if err != nil {
		return nil, err
	}
	return &Transform{src: src, prg: p}, nil
}

// String is the transformation's text.
func (t *Transform) String() string { return t.src }

// Apply evaluates the transformation on in, within TransformTimeout and
// TransformCostLimit, and checks its result against the contract (see Transform).
func (t *Transform) Apply(ctx context.Context, in Input) (Output, error) {
	ctx, cancel := context.WithTimeout(ctx, TransformTimeout)
	defer cancel()
	v, _, err := t.prg.ContextEval(ctx, in.vars)
	if err != nil {
		return Output{}, fmt.Errorf("transform: %w", err)
	}
	native, err := v.ConvertToNative(reflect.TypeFor[*structpb.Value]())
	if err != nil {
		return Output{}, fmt.Errorf("transform: the result is not JSON: %w", err)
	}
	m, ok := native.(*structpb.Value).AsInterface().(map[string]any)
	if !ok {
		return Output{}, fmt.Errorf("transform: gave %s, not a map", v.Type().TypeName())
	}
	return output(m)
}

// output checks a transformation's result m against the contract and encodes its body.
func output(m map[string]any) (Output, error) {
	var out Output
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "body" && k != "headers" && k != "cancel" {
			return out, fmt.Errorf("transform: unknown key %q: the result may have body, headers and cancel", k)
		}
	}
	if c, ok := m["cancel"]; ok {
		s, isString := c.(string)
		switch {
		case !isString || strings.TrimSpace(s) == "":
			return out, fmt.Errorf("transform: cancel must be a non-empty string (the reason)")
		case len(m) > 1:
			return out, fmt.Errorf("transform: cancel goes alone, without body or headers")
		case len(s) > MaxCancelReason:
			return out, fmt.Errorf("transform: the cancel reason is %d bytes long; the limit is %d", len(s), MaxCancelReason)
		}
		out.Cancel = s
		return out, nil
	}
	if b, ok := m["body"]; ok {
		if s, isString := b.(string); isString {
			out.Body = []byte(s)
		} else {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(b); err != nil {
				return out, fmt.Errorf("transform: encode the body: %w", err)
			}
			out.Body = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		}
		if len(out.Body) > MaxBodyBytes {
			return Output{}, fmt.Errorf("transform: the body is %d bytes long; the limit is %d", len(out.Body), MaxBodyBytes)
		}
	}
	if h, ok := m["headers"]; ok {
		hm, isMap := h.(map[string]any)
		if !isMap {
			return Output{}, fmt.Errorf("transform: headers must be a map of names to strings")
		}
		out.Headers = make(map[string]string, len(hm))
		for n, v := range hm {
			s, isString := v.(string)
			if !isString {
				return Output{}, fmt.Errorf("transform: header %q: the value must be a string", n)
			}
			out.Headers[n] = s
		}
	}
	return out, nil
}
