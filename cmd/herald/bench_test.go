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

// TestBenchRejectsBadBacklogRateLimit: a --backlog-rate-limit below 0 or above the most an
// endpoint may have is refused before anything starts.
func TestBenchRejectsBadBacklogRateLimit(t *testing.T) {
	for _, v := range []string{"-1", "10001"} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{"bench", "--scenario", "backlog", "--backlog-rate-limit", v})
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), "--backlog-rate-limit "+v+": give 0") {
			t.Fatalf("bench --backlog-rate-limit %s: %v; want a usage error naming the flag", v, err)
		}
	}
}
