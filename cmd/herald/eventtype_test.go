package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// TestEventTypeRefusesBeforeDialing: bad input to event-type put and strict is refused with
// what to fix, before anything is dialed (the address goes nowhere).
func TestEventTypeRefusesBeforeDialing(t *testing.T) {
	offline(t)
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"type":"objekt"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		is   error
		say  string
	}{
		{[]string{"event-type", "strict", "maybe"}, errUsage, "say on or off"},
		{[]string{"event-type", "put"}, errUsage, "give the type's NAME"},
		{[]string{"event-type", "put", "order.paid", "--schema", "missing.json"}, starter.ErrInvalid, "--schema missing.json"},
		{[]string{"event-type", "put", "order.paid", "--schema", empty}, starter.ErrInvalid, "is empty"},
		{[]string{"event-type", "put", "order paid"}, starter.ErrInvalid, "contains ' '"},
		{[]string{"event-type", "put", "order.paid", "--schema", bad}, starter.ErrInvalid, "not a valid JSON Schema: at /type"},
	} {
		_, err := runHerald(append(c.args, nowhere)...)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.say) {
			t.Errorf("herald %s: %v, want %v saying %q", strings.Join(c.args, " "), err, c.is, c.say)
		}
	}
}

func TestReadSchemaLimit(t *testing.T) {
	big := strings.NewReader(strings.Repeat(" ", 4*herald.MaxSchemaBytes+1))
	if _, err := readSchema("-", big); !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), "64 KiB") {
		t.Errorf("readSchema of a huge stdin: %v", err)
	}
	b, err := readSchema("-", strings.NewReader(`{"type":"object"}`))
	if err != nil || string(b) != `{"type":"object"}` {
		t.Errorf("readSchema(-) = %s, %v", b, err)
	}
}
