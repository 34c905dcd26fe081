package main

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// TestOverflowShown: herald status says a delivery turned away by a full queue is not
// queued and will be nudged back; herald endpoint get says when the queue was last full,
// and says nothing of it for an endpoint whose queue has not overflowed.
func TestOverflowShown(t *testing.T) {
	st := herald.Status{State: herald.StateWaitingEndpoint, Waiting: &herald.Waiting{
		Hold: herald.Hold{Reason: "circuit open; the queue is full", Full: true}, Since: time.Now()}}
	var b strings.Builder
	if err := (&globals{}).printStatus(&b, st, herald.DefaultTenant); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "not queued: the endpoint nudges it back once its queue is half empty") {
		t.Errorf("status of a turned-away delivery:\n%s", b.String())
	}
	var ep herald.EndpointState
	ep.ID, ep.QueueFullAt = "acme", time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	b.Reset()
	if err := (&globals{}).printEndpoint(&b, ep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Overflow   the queue was last full at 2026-12-05") {
		t.Errorf("endpoint get of an overflowed endpoint:\n%s", b.String())
	}
	ep.QueueFullAt = time.Time{}
	b.Reset()
	if err := (&globals{}).printEndpoint(&b, ep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Overflow") {
		t.Errorf("endpoint get shows an overflow that is not there:\n%s", b.String())
	}
}
