package devserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// errLocked is returned by flock when another process, or another Server in
// this one, holds the lock.
var errLocked = errors.New("locked")

// dbLock keeps a second server from opening a database file that a running
// server uses: two servers on one file would fight over its history shard.
type dbLock struct {
	f    *os.File
	once sync.Once
}

// lockDBFile creates path's directory if missing and locks path+".lock".
func lockDBFile(path string) (*dbLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("database file %s: create directory: %w", path, err)
	}
	lockPath := path + ".lock"
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("database file %s: open lock file: %w", path, err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("database file %s is in use by another running dev server (it holds %s); stop that server, or use another file",
				path, lockPath)
		}
		return nil, fmt.Errorf("database file %s: lock %s: %w", path, lockPath, err)
	}
	return &dbLock{f: f}, nil
}

// release unlocks; it may be called on a nil lock and more than once.
func (l *dbLock) release() {
	if l == nil {
		return
	}
	l.once.Do(func() { l.f.Close() })
}
