//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package devserver

import (
	"errors"
	"os"
	"syscall"
)

// flock takes an exclusive lock on f without waiting. The kernel drops it
// when f is closed or the process ends.
func flock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}
