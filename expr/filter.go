package expr

import (
	"fmt"

	"cel.dev/cel-go/cel"
)

// Filter is a compiled filter: an expression that gives true for the events its endpoint
// receives.
type Filter struct {
	src string
	prg cel.Program
}

// CompileFilter compiles src as a filter (from the cache when it was compiled before).
func CompileFilter(src string) (*Filter, error) {
	p, err := compile(KindFilter, src)
	if err != nil {
		return nil, err
	}
	return &Filter{src: src, prg: p}, nil
}

// String is the filter's text.
func (f *Filter) String() string { return f.src }

// Match evaluates the filter on in. An error (a field the event lacks, a type that does
// not fit, the cost limit passed, a result that is not a bool) means the event does not
// go to the endpoint; the error says why.
func (f *Filter) Match(in Input) (bool, error) {
	v, _, err := f.prg.Eval(in.vars)
	if err != nil {
		return false, fmt.Errorf("filter: %w", err)
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("filter: gave %s, not a bool", v.Type().TypeName())
	}
	return b, nil
}
