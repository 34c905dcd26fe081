package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// nowhere is a Temporal address nothing answers on: the commands that must refuse their
// input before dialing are run against it.
const nowhere = "--address=127.0.0.1:1"

// offline readies a test of commands that must refuse their input before dialing: no
// payload key from the environment or from the working directory.
func offline(t *testing.T) {
	t.Helper()
	t.Setenv("HERALD_CODEC_KEY_FILE", "")
	t.Setenv("HERALD_CODEC_KEYS", "")
	t.Chdir(t.TempDir())
}

// runHerald runs herald with args, for at most 20 seconds, and returns what it printed
// (standard output and error together) and its error.
func runHerald(args ...string) (string, error) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), err
}
