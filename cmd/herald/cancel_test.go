package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

func TestParseSchedule(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at       string
		delay    time.Duration
		delaySet bool
		want     time.Time
		bad      bool
	}{
		{"", 0, false, time.Time{}, false},
		{"", 10 * time.Minute, true, now.Add(10 * time.Minute), false},
		{"2026-12-24T09:00:00Z", 0, false, time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC), false},
		{"2026-12-24T10:00:00+01:00", 0, false, time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC), false},
		{"2026-12-24 09:00", 0, false, time.Time{}, true},
		{"2026-12-24T09:00:00", 0, false, time.Time{}, true}, // no zone
		{"", 0, true, time.Time{}, true},
		{"", -time.Minute, true, time.Time{}, true},
		{"2026-12-24T09:00:00Z", time.Minute, true, time.Time{}, true},
	} {
		got, err := parseSchedule(tc.at, tc.delay, tc.delaySet, now)
		if tc.bad != (err != nil) || (err != nil && !errors.Is(err, errUsage)) {
			t.Errorf("parseSchedule(%q, %s, %v): error %v, want bad %v", tc.at, tc.delay, tc.delaySet, err, tc.bad)
		}
		if !got.Equal(tc.want) {
			t.Errorf("parseSchedule(%q, %s): %s, want %s", tc.at, tc.delay, got, tc.want)
		}
	}
}

// FuzzParseSchedule: whatever --deliver-at holds, parseSchedule returns a usage error or a
// time that formats back to an RFC 3339 time it accepts again, at the same instant.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"2026-12-24T09:00:00Z", "2026-12-24T10:00:00+01:00", "2026-12-24T09:00:00.5Z", "", "now", "9999-12-31T23:59:59Z"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		at, err := parseSchedule(s, 0, false, now)
		if err != nil {
			if !errors.Is(err, errUsage) {
				t.Fatalf("error %v is not a usage error", err)
			}
			return
		}
		if s == "" {
			if !at.IsZero() {
				t.Fatalf("empty gives %s", at)
			}
			return
		}
		back, err := parseSchedule(at.Format(time.RFC3339Nano), 0, false, now)
		if err != nil || !back.Equal(at) {
			t.Fatalf("%q → %s → %v, %v", s, at, back, err)
		}
	})
}

// TestStatusScheduledAndCancelled: herald status says when a scheduled send goes (with the
// cancel command), and when, by whom and why a cancelled one stopped; herald endpoint get
// says how the probing of an endpoint disabled for failing stands.
func TestStatusScheduledAndCancelled(t *testing.T) {
	at := time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)
	ev := herald.EventSummary{ID: "evt_1", EndpointID: "acme", Type: "invoice.due"}
	for _, tc := range []struct {
		st   herald.Status
		want []string
	}{
		{herald.Status{Event: ev, State: herald.StateScheduled, DeliverAt: at}, []string{"scheduled", "Scheduled  the first attempt goes at", "herald cancel evt_1", "No attempt yet"}},
		{herald.Status{Event: ev, State: herald.StateCancelled, Cancelled: &herald.Cancellation{At: at, Reason: "refunded", By: "operator", Phase: herald.StateScheduled}},
			[]string{"cancelled", "Cancelled  ", "while scheduled by operator: refunded"}},
	} {
		var out bytes.Buffer
		if err := (&globals{}).printStatus(&out, tc.st, herald.DefaultTenant); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("status output lacks %q:\n%s", w, out.String())
			}
		}
	}
	r := &policy.Recovery{Probes: 2, NextAt: at, Last: "probe 2: 503 Service Unavailable"}
	if got := recoveryText(r); !strings.Contains(got, "probe 3 at") || !strings.Contains(got, "2 made; last: probe 2: 503") {
		t.Errorf("recoveryText = %q", got)
	}
	if got := recoveryText(&policy.Recovery{Probes: 33, Ended: true}); !strings.Contains(got, "enable the endpoint by hand") {
		t.Errorf("recoveryText of an ended probing = %q", got)
	}
}
