package main

import (
	"testing"

	"github.com/heraldhq/herald"
)

// Printed hints carry every connection flag whose value is not the default, quoted for
// the shell, so they work when pasted.
func TestHintsEchoNonDefaultFlags(t *testing.T) {
	def := &globals{address: defaultAddress, namespace: defaultNamespace, taskQueue: herald.DefaultTaskQueue, keyFile: defaultKeyFile}
	if got, want := def.herald("status", "evt_1"), "herald status evt_1"; got != want {
		t.Errorf("defaults: got %q, want %q", got, want)
	}
	g := &globals{address: "127.0.0.1:17233", namespace: "staging", taskQueue: "hooks", keyFile: "/tmp/my keys/codec.key"}
	if got, want := g.herald("send", "--data", `{"a":"it's"}`),
		`herald send --data '{"a":"it'\''s"}' --address 127.0.0.1:17233 --namespace staging --task-queue hooks --codec-key-file '/tmp/my keys/codec.key'`; got != want {
		t.Errorf("non-defaults:\n got %s\nwant %s", got, want)
	}
	if got, want := def.heraldAt("127.0.0.1:7300", "default", "endpoint", "enable", "acme"), "herald endpoint enable acme --address 127.0.0.1:7300"; got != want {
		t.Errorf("dev address: got %q, want %q", got, want)
	}
	if got, want := tokenCreate(".herald/tokens.json"), "herald token create --operator"; got != want {
		t.Errorf("default tokens file: got %q", got)
	}
	if got, want := tokenCreate("/srv/t.json"), "herald token create --operator --tokens-file /srv/t.json"; got != want {
		t.Errorf("tokens file: got %q, want %q", got, want)
	}
}
