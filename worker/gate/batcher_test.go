package gate

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// waitFor waits, yielding, until cond holds, or fails the test after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		runtime.Gosched()
	}
}

// An item alone goes at once; the items that come while a send is in flight go together
// in the next one, and each add returns its own send's error.
func TestBatcherBatchesWhileASendIsInFlight(t *testing.T) {
	release := make(chan error)
	var mu sync.Mutex
	var sends [][]int
	b := &batcher[int]{send: func(ctx context.Context, items []int) error {
		mu.Lock()
		sends = append(sends, slices.Clone(items))
		mu.Unlock()
		return <-release
	}}
	first := make(chan error, 1)
	go func() { first <- b.add(context.Background(), 0) }()
	waitFor(t, "the first send", func() bool { mu.Lock(); defer mu.Unlock(); return len(sends) == 1 })

	const more = 10
	errs := make(chan error, more)
	for i := 1; i <= more; i++ {
		go func() { errs <- b.add(context.Background(), i) }()
	}
	waitFor(t, "the items queued behind the first send", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.next != nil && len(b.next.items) == more
	})
	release <- nil // the first send succeeds
	if err := <-first; err != nil {
		t.Fatalf("first add: %v", err)
	}
	boom := errors.New("boom")
	release <- boom // the second, with all ten, fails
	for range more {
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("add in the second batch: %v, want %v", err, boom)
		}
	}
	if len(sends) != 2 || !slices.Equal(sends[0], []int{0}) || len(sends[1]) != more {
		t.Fatalf("sends %v, want [0] then the ten others together", sends)
	}
	waitFor(t, "the sender to stop with nothing to send", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return !b.sending && b.next == nil
	})
}

// An add whose context ends returns at once; its item still goes with its batch.
func TestBatcherAddHonoursItsContext(t *testing.T) {
	release := make(chan struct{})
	sent := make(chan []string, 1)
	b := &batcher[string]{send: func(ctx context.Context, items []string) error {
		<-release
		sent <- items
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.add(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("add with a canceled context: %v", err)
	}
	close(release)
	if items := <-sent; !slices.Equal(items, []string{"a"}) {
		t.Fatalf("sent %v, want [a]", items)
	}
}
