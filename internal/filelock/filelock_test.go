package filelock

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestTryLockWhileHeld(t *testing.T) {
	if !Supported {
		t.Skip("no flock on this platform")
	}
	path := filepath.Join(t.TempDir(), "sub", "x.lock")
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while held = %v, want ErrLocked", err)
	}
	got := make(chan *Lock)
	go func() {
		l2, err := Acquire(path)
		if err != nil {
			t.Error(err)
		}
		got <- l2
	}()
	select {
	case <-got:
		t.Fatal("Acquire returned while the lock was held")
	case <-time.After(100 * time.Millisecond):
	}
	l.Unlock()
	l.Unlock() // twice is fine
	select {
	case l2 := <-got:
		l2.Unlock()
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not return after Unlock")
	}
	var none *Lock
	none.Unlock()
}
