package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
)

// TestReservedTenantRefusedByCLI: no command gives the operational tenant a token, a portal
// link, an endpoint or a fan-out send; each says the name is reserved, before dialing
// Temporal (the address below answers nothing).
func TestReservedTenantRefusedByCLI(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	ops := herald.OpsTenant
	for _, args := range [][]string{
		{"token", "create", "--tokens-file", tokens, "--tenant", ops},
		{"portal-link", "--tokens-file", tokens, "--tenant", ops},
		{"endpoint", "put", "acme-prod", "--tenant", ops, "--url", "https://example.com/hook", nowhere},
		{"send", "--tenant", ops, "--type", "order.paid", "--data", "{}", nowhere},
	} {
		out, err := runHerald(args...)
		if err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("herald %s: %v, want refused as reserved\n%s", strings.Join(args, " "), err, out)
		}
	}
}
