package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
)

// TestKeygenWithKeyFileEnv: HERALD_CODEC_KEY_FILE naming the file keygen is about to create
// must not stop keygen (it used to load the missing file first and fail).
func TestKeygenWithKeyFileEnv(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		env  func(path string) map[string]string
	}{
		{"env names the new file", func(p string) map[string]string { return map[string]string{"HERALD_CODEC_KEY_FILE": p} }},
		{"env names another missing file", func(string) map[string]string {
			return map[string]string{"HERALD_CODEC_KEY_FILE": filepath.Join(dir, "missing.key")}
		}},
		{"no env", func(string) map[string]string { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".key")
			for k, v := range tc.env(path) {
				t.Setenv(k, v)
			}
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs([]string{"keygen", path})
			if err := root.Execute(); err != nil {
				t.Fatalf("keygen: %v", err)
			}
			if _, err := codec.LoadKeyring(path); err != nil {
				t.Fatalf("the new key file does not load: %v", err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStatusSaysWaitingForKey: herald status prints why an undecryptable event waits.
func TestStatusSaysWaitingForKey(t *testing.T) {
	st := herald.Status{
		Event:   herald.EventSummary{ID: "evt_1", EndpointID: "acme", Type: "t"},
		State:   herald.StateWaitingKey,
		Waiting: &herald.Waiting{Hold: herald.Hold{Reason: codec.WaitingForKey("k2")}},
	}
	var out bytes.Buffer
	(&globals{}).printStatus(&out, st, herald.DefaultTenant)
	for _, want := range []string{"waiting_key", "waiting for a worker with payload key k2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
}
