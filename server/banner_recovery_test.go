package server

import (
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// TestBannerProbing: the banner of an endpoint disabled for failing says when its next
// probe goes, and that one in flight is.
func TestBannerProbing(t *testing.T) {
	at := time.Date(2026, 5, 1, 13, 0, 0, 0, time.UTC)
	e := herald.EndpointState{ID: "acme-prod"}
	e.Disabled = &policy.Disablement{Cause: policy.DisabledFailing, Reason: "every attempt failed for 1h0m0s", At: at,
		Recovery: &policy.Recovery{Probes: 1, NextAt: at.Add(4 * time.Hour)}}
	want := "Your endpoint acme-prod is disabled since 2026-05-01 13:00: every attempt failed for 1h0m0s. Nothing is sent to it until it is enabled again, or until a probe succeeds: the next is at 2026-05-01 17:00 (1 made so far)."
	if b := Banner(e, true, time.UTC); b != want {
		t.Fatalf("banner\n  %q\nwant\n  %q", b, want)
	}
	e.Disabled.Recovery = &policy.Recovery{Probes: 2, InFlight: true}
	if b := Banner(e, true, time.UTC); b != "Your endpoint acme-prod is disabled since 2026-05-01 13:00: every attempt failed for 1h0m0s. Nothing is sent to it until it is enabled again, or until a probe succeeds: one is in flight." {
		t.Fatalf("banner with a probe in flight: %q", b)
	}
}
