package main

import (
	"errors"
	"strings"
	"testing"
)

// TestProbeTimeoutBounded: --timeout past its bound is refused before anything is dialled.
func TestProbeTimeoutBounded(t *testing.T) {
	for _, v := range []string{"3m", "0s"} {
		cmd := newProbeCmd()
		cmd.SetArgs([]string{"--timeout", v, "http://127.0.0.1:1/"})
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "give a duration from 1ms to 2m") {
			t.Errorf("--timeout %s: %v, want a usage error naming the bound", v, err)
		}
	}
}
