package gate

import (
	"context"
	"sync"
)

// batcher sends items to one place in batches: one send in flight at a time, and what
// comes meanwhile goes in the next. Under load many items share a send; alone, an item goes
// at once. add waits for the send its item went in.
type batcher[T any] struct {
	send func(context.Context, []T) error

	mu      sync.Mutex
	next    *batch[T]
	sending bool
}

type batch[T any] struct {
	items []T
	done  chan struct{}
	err   error
}

// add sends item with the next batch and returns that send's error.
func (b *batcher[T]) add(ctx context.Context, item T) error {
	b.mu.Lock()
	if b.next == nil {
		b.next = &batch[T]{done: make(chan struct{})}
	}
	bt := b.next
	bt.items = append(bt.items, item)
	start := !b.sending
	b.sending = true
	b.mu.Unlock()
	if start {
		go b.run()
	}
	select {
	case <-bt.done:
		return bt.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run sends batches until none is waiting.
func (b *batcher[T]) run() {
	for {
		b.mu.Lock()
		bt := b.next
		b.next = nil
		if bt == nil {
			b.sending = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
		bt.err = b.send(ctx, bt.items)
		cancel()
		close(bt.done)
	}
}
