package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A compiled schema is a graph: each subschema points to those inside it and, through
// $ref, $dynamicRef and $recursiveRef, to those it refers to. Without references it is a
// tree. checkExpansion walks it once, refusing a cycle (a schema that refers back to
// itself: checking data against it may never end, and the library then blames the data)
// and counting the subschemas of the tree the references unfold into, which bounds the
// work of checking one value (a chain of $defs each referring twice to the next doubles it
// at every link).

// checkExpansion refuses a recursive schema or one that unfolds into more than
// MaxSchemaExpansion subschemas.
func checkExpansion(root *jsonschema.Schema) error {
	w := walker{state: map[*jsonschema.Schema]int8{}, size: map[*jsonschema.Schema]int{}}
	n, err := w.visit(root)
	if err != nil {
		return err
	}
	if n > MaxSchemaExpansion {
		return fmt.Errorf("the schema unfolds into more than %d subschemas once its $refs are replaced by what they refer to: refer to large parts from fewer places", MaxSchemaExpansion)
	}
	return nil
}

type walker struct {
	state map[*jsonschema.Schema]int8 // 1 on the path being walked, 2 done
	size  map[*jsonschema.Schema]int  // subschemas once unfolded, capped past the limit
}

func (w *walker) visit(s *jsonschema.Schema) (int, error) {
	if w.state[s] == 2 {
		return w.size[s], nil
	}
	w.state[s] = 1
	n := 1
	for _, c := range subschemas(s) {
		if w.state[c] == 1 {
			return 0, fmt.Errorf("the schema is recursive: %s refers back to %s, which contains it (directly or through other $refs): Herald refuses recursive schemas, since checking data against one may never end; write the nesting out to the depth your events use", location(s), location(c))
		}
		m, err := w.visit(c)
		if err != nil {
			return 0, err
		}
		n = min(n+m, MaxSchemaExpansion+1)
	}
	w.state[s], w.size[s] = 2, n
	return n, nil
}

// location is where s is in the schema, as a JSON pointer ("/" for the schema itself).
func location(s *jsonschema.Schema) string {
	base, frag, _ := strings.Cut(s.Location, "#")
	if frag == "" {
		frag = "/"
	}
	if base != schemaURL {
		return base + "#" + frag
	}
	return frag
}

// subschemas lists the schemas s points to: those inside it and those it refers to.
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(cs ...*jsonschema.Schema) {
		for _, c := range cs {
			if c != nil {
				out = append(out, c)
			}
		}
	}
	addAny := func(v any) {
		switch v := v.(type) {
		case *jsonschema.Schema:
			add(v)
		case []*jsonschema.Schema:
			add(v...)
		}
	}
	add(s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames, s.UnevaluatedProperties,
		s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema)
	if s.DynamicRef != nil {
		add(s.DynamicRef.Ref)
	}
	add(s.AllOf...)
	add(s.AnyOf...)
	add(s.OneOf...)
	add(s.PrefixItems...)
	// In a fixed order, so that the error names the same place every time.
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		add(s.Properties[k])
	}
	patterns := slices.SortedFunc(maps.Keys(s.PatternProperties), func(a, b jsonschema.Regexp) int {
		return strings.Compare(a.String(), b.String())
	})
	for _, k := range patterns {
		add(s.PatternProperties[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		add(s.DependentSchemas[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
		addAny(s.Dependencies[k])
	}
	addAny(s.AdditionalProperties)
	addAny(s.Items)
	addAny(s.AdditionalItems)
	return out
}
