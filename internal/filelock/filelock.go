// Package filelock takes exclusive locks on files that hold across processes: a server
// keeping others off its database file, writers of a shared file taking turns.
package filelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// ErrLocked is returned by TryLock when another process, or another lock in this one,
// holds the lock.
var ErrLocked = errors.New("locked")

// Lock is a held lock; Unlock releases it. The kernel also releases it when the process ends.
type Lock struct {
	f    *os.File
	once sync.Once
}

// Acquire creates path (mode 0600) and its directory if missing and locks it, waiting until
// no one else holds it. Locks taken through separate Acquire calls exclude each other, in
// one process as across processes.
func Acquire(path string) (*Lock, error) { return lock(path, true) }

// TryLock is Acquire without waiting: it returns an error wrapping ErrLocked when the lock
// is held.
func TryLock(path string) (*Lock, error) { return lock(path, false) }

func lock(path string, wait bool) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock file %s: create directory: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	if err := flock(f, wait); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock; it may be called on a nil Lock and more than once.
func (l *Lock) Unlock() {
	if l == nil {
		return
	}
	l.once.Do(func() { l.f.Close() })
}
