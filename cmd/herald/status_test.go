package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// TestStatusSaysBusy: a status read while an attempt is in flight says so, and does not
// claim there was no attempt.
func TestStatusSaysBusy(t *testing.T) {
	st := herald.Status{
		Event: herald.EventSummary{ID: "evt_1", EndpointID: "acme", Type: "report.ready"},
		State: herald.StateAttempting,
		Busy:  &herald.Busy{Since: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)},
	}
	var out bytes.Buffer
	if err := (&globals{}).printStatus(&out, st, herald.DefaultTenant); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"attempting", "an attempt in flight since", "the attempts show once it ends"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "No attempt yet") {
		t.Errorf("a busy status says no attempt was made:\n%s", out.String())
	}
}
