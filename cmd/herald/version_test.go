package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
)

// TestVersion: herald version prints the release, as text and with -o json, without
// dialing Temporal or loading keys.
func TestVersion(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		root := newRootCmd()
		var out bytes.Buffer
		root.SetArgs(append(args, "--address", "127.0.0.1:1", "--codec-key-file", "/nonexistent/codec.key"))
		root.SetOut(&out)
		if err := root.Execute(); err != nil {
			t.Fatalf("herald %s: %v", strings.Join(args, " "), err)
		}
		return out.String()
	}
	if got := run("version"); !strings.HasPrefix(got, "herald "+herald.Version+" (go") {
		t.Errorf("herald version printed %q, want herald %s (go...)", got, herald.Version)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(run("version", "-o", "json")), &v); err != nil || v.Version != herald.Version || v.Go == "" {
		t.Errorf("herald version -o json: %+v (%v), want version %s", v, err, herald.Version)
	}
}
