package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchRejectsNegativeHogs: --rate-hogs below 0 is refused before anything starts.
func TestBenchRejectsNegativeHogs(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"bench", "--scenario", "ratelimit", "--rate-hogs", "-1"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "--rate-hogs -1: give 0") {
		t.Fatalf("bench --rate-hogs -1: %v; want a usage error naming the flag", err)
	}
}
