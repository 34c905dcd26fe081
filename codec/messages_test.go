package codec

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingKeyFileNamesTheCommand: the error a user sees names the command that fixes it,
// not a Go function.
func TestMissingKeyFileNamesTheCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "codec.key")
	_, err := LoadKeyring(path)
	if err == nil || !strings.Contains(err.Error(), "herald keygen "+path) || strings.Contains(err.Error(), "GenerateKeyFile") {
		t.Fatalf("error %v, want one naming `herald keygen %s`", err, path)
	}
}
