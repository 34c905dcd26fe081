package devserver

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/internal/filelock"
)

// dbLock keeps a second server from opening a database file that a running
// server uses: two servers on one file would fight over its history shard.
type dbLock = filelock.Lock

// lockDBFile creates path's directory if missing and locks path+".lock".
func lockDBFile(path string) (*dbLock, error) {
	lockPath := path + ".lock"
	l, err := filelock.TryLock(lockPath)
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("database file %s is in use by another running dev server (it holds %s); stop that server, or use another file",
			path, lockPath)
	}
	if err != nil {
		return nil, fmt.Errorf("database file %s: %w", path, err)
	}
	return l, nil
}
