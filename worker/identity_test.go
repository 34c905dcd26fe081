package worker

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
)

// TestIdentityShowsVersionAndKeys: a worker's identity names its release, and the payload
// keys it advertises still read back.
func TestIdentityShowsVersionAndKeys(t *testing.T) {
	k, err := codec.GenerateKeyFile(filepath.Join(t.TempDir(), "codec.key"))
	if err != nil {
		t.Fatal(err)
	}
	id := Identity("7@host", k)
	if want := "7@host herald/" + herald.Version + " "; !strings.HasPrefix(id, want) {
		t.Errorf("identity %q, want it to start with %q", id, want)
	}
	if ids, ok := codec.IdentityKeyIDs(id); !ok || !slices.Equal(ids, k.KeyIDs()) {
		t.Errorf("keys of %q = %v (advertised %v), want %v", id, ids, ok, k.KeyIDs())
	}
	if def := Identity("", nil); !strings.Contains(def, "@") || !strings.Contains(def, " herald/"+herald.Version+" ") {
		t.Errorf("default identity %q, want pid@host and the version", def)
	}
}
