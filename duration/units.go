package duration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// RequireUnits checks JSON text from outside (an API request body) meant for v, a pointer
// to the value it is decoded into: every Duration in it must be a string with a unit
// ("15m"), never a bare number, which Duration reads as nanoseconds only for records Herald
// wrote before durations were strings. The error names the field by its JSON path
// ("overrides.breaker.probe_timeout") and shows the form to use. Types without a Duration
// are not read at all.
func RequireUnits(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || !holdsDuration(t) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil // the decoder of v says what is wrong with it
	}
	return checkUnits(doc, t, "")
}

var durationType = reflect.TypeFor[Duration]()

// holds caches holdsDuration by type.
var holds sync.Map // reflect.Type → bool

// holdsDuration reports whether a value of type t can hold a Duration. Only the answer for
// t is cached: types met on the way may still be in progress (a type that refers to
// itself), so their answers are not final.
func holdsDuration(t reflect.Type) bool {
	if v, ok := holds.Load(t); ok {
		return v.(bool)
	}
	found := reachesDuration(t, map[reflect.Type]bool{})
	holds.Store(t, found)
	return found
}

// reachesDuration reports whether a Duration can be reached from t, by a depth-first walk
// that visits each type once (seen).
func reachesDuration(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == durationType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return reachesDuration(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && reachesDuration(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

func checkUnits(doc any, t reflect.Type, path string) error {
	if t == durationType {
		if n, ok := doc.(json.Number); ok {
			return fmt.Errorf("%q: %s is a bare number: give a duration as a string with a unit, like %q: %q (units ms, s, m, h)", path, n, path, "15m")
		}
		return nil
	}
	if !holdsDuration(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkUnits(doc, t.Elem(), path)
	case reflect.Slice, reflect.Array:
		items, _ := doc.([]any)
		for i, item := range items {
			if err := checkUnits(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, _ := doc.(map[string]any)
		for k, item := range obj {
			if err := checkUnits(item, t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		obj, _ := doc.(map[string]any)
		if obj == nil {
			return nil
		}
		return checkFields(obj, t, path)
	}
	return nil
}

// checkFields checks the members of a JSON object decoded into struct type t, matching
// names as encoding/json does (the tag's name, else the field's; embedded structs'
// fields promoted; case-insensitively).
func checkFields(obj map[string]any, t reflect.Type, path string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() && !f.Anonymous || tag == "-" {
			continue // encoding/json reads an embedded struct's fields even when its type is unexported
		}
		ft := f.Type
		if f.Anonymous && tag == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := checkFields(obj, ft, path); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		key := tag
		if key == "" {
			key = f.Name
		}
		for k, item := range obj {
			if strings.EqualFold(k, key) {
				if err := checkUnits(item, ft, join(path, k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
