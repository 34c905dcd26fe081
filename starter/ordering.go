package starter

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"

	"github.com/heraldhq/herald"
)

// placeOrdered gives the delivery wfID of ev its place in ev's ordering key, before it is
// started: the key's sequencer appends it and answers the delivery before it. It returns
// nil for an event without a key, and for an id sent before (a resend keeps the place its
// delivery has: the sequencer is not asked again). A send that fails after the append
// leaves a tail that never starts: the sequencer (or, when it had not seen it started yet,
// the next delivery itself) finds it missing past a grace, and that one goes after the
// missing one's predecessor (no gap in the key).
func (s *Client) placeOrdered(ctx context.Context, tenant, wfID string, ev Event) (*herald.Ordering, error) {
	if ev.OrderingKey == "" {
		return nil, nil
	}
	_, err := s.c.DescribeWorkflowExecution(ctx, wfID, "")
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return nil, nil // sent before: startOnce finds it and compares
	case !errors.As(err, &nf):
		return nil, fmt.Errorf("ordering key %s: %w", ev.OrderingKey, err)
	}
	seqID := herald.SequencerWorkflowID(tenant, ev.EndpointID, ev.OrderingKey)
	var place herald.OrderingPlace
	u := startUpdate{
		ID: seqID, Type: herald.SequencerWorkflow, Summary: "ordering key " + ev.OrderingKey + " → " + ev.EndpointID,
		Input: herald.SequencerInput{}, Name: herald.UpdateOrderingAppend, Arg: herald.OrderingAppend{Delivery: wfID},
	}
	release, err := s.appendSlot(ctx, seqID)
	if err != nil {
		return nil, fmt.Errorf("ordering key %s: %w", ev.OrderingKey, err)
	}
	defer release()
	if _, err := s.updateWithStart(ctx, u, &place); err != nil {
		// The sequencer may have closed (idle) as the update came, or be continuing as
		// new: once more, on its next run.
		if _, err = s.updateWithStart(ctx, u, &place); err != nil {
			return nil, fmt.Errorf("ordering key %s: %w", ev.OrderingKey, err)
		}
	}
	// A ready place (the delivery before it closed, or none) starts with its turn: it asks
	// nobody (a worker before versionOrderingPlaced reads Turn the same way).
	return &herald.Ordering{Key: ev.OrderingKey, After: place.After, Seq: place.Seq, Turn: place.Ready, Starting: place.Starting}, nil
}

// maxAppendsInFlight is how many appends to one sequencer a Client has in flight at once;
// the others wait in this process. The server refuses more than 10
// updates in flight per workflow (history.maxInFlightUpdates) and the SDK retries a refused
// one with a backoff of seconds: 200 sends of one key at once from one process took 15 to
// 57 s to be accepted, and a send could fail, where waiting here keeps every slot busy.
const maxAppendsInFlight = 4

// appendSlots are the slots of one sequencer's appends, and how many sends use or wait for
// them (the entry goes when none does: the map holds only keys with sends in progress).
type appendSlots struct {
	slots chan struct{}
	users int
}

// appendSlot waits for a slot to append to sequencer seqID (maxAppendsInFlight at once)
// and returns the func that gives it back; it fails only when ctx ends first.
func (s *Client) appendSlot(ctx context.Context, seqID string) (func(), error) {
	s.appendMu.Lock()
	if s.appending == nil {
		s.appending = map[string]*appendSlots{}
	}
	a := s.appending[seqID]
	if a == nil {
		a = &appendSlots{slots: make(chan struct{}, maxAppendsInFlight)}
		s.appending[seqID] = a
	}
	a.users++
	s.appendMu.Unlock()
	leave := func() {
		s.appendMu.Lock()
		if a.users--; a.users == 0 {
			delete(s.appending, seqID)
		}
		s.appendMu.Unlock()
	}
	select {
	case a.slots <- struct{}{}:
		return func() { <-a.slots; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
