package bench

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// StartProfile starts a CPU profile of the whole process into a new file at path and
// returns what stops it and closes the file. Go holds one CPU profile at a time.
func StartProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("CPU profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
