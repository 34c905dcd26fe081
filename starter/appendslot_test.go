package starter

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAppendSlot: at most maxAppendsInFlight appends to one sequencer at once, another
// sequencer's are not held by them, a wait ends with its context, and no entry is left once
// no send uses the key (the map holds only keys with sends in progress).
func TestAppendSlot(t *testing.T) {
	s := &Client{}
	var in, most atomic.Int32
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := s.appendSlot(context.Background(), "ordering:k")
			if err != nil {
				t.Error(err)
				return
			}
			n := in.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(2 * time.Millisecond)
			in.Add(-1)
			release()
		}()
	}
	// Another key goes while the first is busy.
	other, err := s.appendSlot(context.Background(), "ordering:other")
	if err != nil {
		t.Fatal(err)
	}
	other()
	wg.Wait()
	if m := most.Load(); m > maxAppendsInFlight || m < 2 {
		t.Errorf("%d appends at once, want 2 to %d", m, maxAppendsInFlight)
	}

	// A full key: the next wait ends with its context.
	var held []func()
	for range maxAppendsInFlight {
		r, err := s.appendSlot(context.Background(), "ordering:full")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.appendSlot(ctx, "ordering:full"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait on a full key: %v, want the context's deadline", err)
	}
	for _, r := range held {
		r()
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if len(s.appending) != 0 {
		t.Errorf("%d keys left in the map, want none", len(s.appending))
	}
}
