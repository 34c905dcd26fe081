package codec

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testkit/check"
)

// keyLine returns "id:base64(n bytes of b)".
func keyLine(id string, b byte, n int) string {
	return id + ":" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n))
}

func TestParseKeyring(t *testing.T) {
	k1, k2, k3 := keyLine("k1", 1, 32), keyLine("k2", 2, 32), keyLine("k3", 3, 32)
	tests := []struct {
		name    string
		text    string
		wantIDs []string
		wantErr string
	}{
		{name: "one key", text: k1, wantIDs: []string{"k1"}},
		{name: "comments and blanks", text: "# header\n\n  " + k2 + "  \n# old\n" + k1 + "\n", wantIDs: []string{"k2", "k1"}},
		{name: "comma separated", text: k3 + "," + k1 + ", " + k2, wantIDs: []string{"k3", "k1", "k2"}},
		{name: "crlf line ends", text: k1 + "\r\n" + k2 + "\r\n", wantIDs: []string{"k1", "k2"}},
		{name: "padding optional", text: strings.TrimRight(k1, "="), wantIDs: []string{"k1"}},
		{name: "empty", text: "", wantErr: "no keys found"},
		{name: "only comments", text: "# nothing\n\n", wantErr: "no keys found"},
		{name: "no colon", text: "k1 " + strings.TrimPrefix(k1, "k1:"), wantErr: "line 1: expected \"<id>:<base64 key>\""},
		{name: "empty id", text: strings.TrimPrefix(k1, "k1"), wantErr: "key id before ':' is empty"},
		{name: "bad id char", text: "k 1" + strings.TrimPrefix(k1, "k1"), wantErr: `key id "k 1" has character ' '`},
		{name: "long id", text: strings.Repeat("a", 65) + strings.TrimPrefix(k1, "k1"), wantErr: "is 65 characters; use at most 64"},
		{name: "empty value", text: "k1:", wantErr: "key k1 has no value after ':'"},
		{name: "bad base64", text: "k1:not*base64!", wantErr: "key k1 is not valid standard base64"},
		{name: "16 bytes", text: keyLine("short", 1, 16), wantErr: "key short is 16 bytes; AES-256 needs 32"},
		{name: "33 bytes", text: keyLine("long", 1, 33), wantErr: "key long is 33 bytes; AES-256 needs 32"},
		{name: "duplicate id", text: k1 + "\n#\n" + keyLine("k1", 9, 32), wantErr: `line 3: key id "k1" is already used on line 1`},
		{name: "duplicate on one line", text: k1 + "," + k1, wantErr: `key id "k1" is already used on line 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKeyring(tt.text)
			if check.Err(t, "ParseKeyring", err, tt.wantErr) {
				if k != nil {
					t.Errorf("ParseKeyring returned a keyring with an error")
				}
				return
			}
			if got := k.KeyIDs(); !slices.Equal(got, tt.wantIDs) {
				t.Errorf("KeyIDs = %v, want %v", got, tt.wantIDs)
			}
			if got := k.ActiveKeyID(); got != tt.wantIDs[0] {
				t.Errorf("ActiveKeyID = %q, want %q", got, tt.wantIDs[0])
			}
		})
	}
}

func TestLoadKeyring(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.keys", "# keys\n"+keyLine("new", 2, 32)+"\n"+keyLine("old", 1, 32)+"\n")
	short := write("short.keys", "# keys\n"+keyLine("new", 2, 32)+"\n"+keyLine("old", 1, 16)+"\n")
	dup := write("dup.keys", keyLine("a", 1, 32)+"\n"+keyLine("a", 2, 32)+"\n")
	b64 := write("b64.keys", "a:%%%%\n")
	tests := []struct {
		name     string
		path     string
		wantID   string
		wantErrs []string
	}{
		{name: "good", path: good, wantID: "new"},
		{name: "missing", path: filepath.Join(dir, "nope.keys"), wantErrs: []string{"nope.keys does not exist"}},
		{name: "wrong length", path: short, wantErrs: []string{short, "line 3", "key old is 16 bytes; AES-256 needs 32"}},
		{name: "duplicate id", path: dup, wantErrs: []string{dup, `key id "a" is already used on line 1`}},
		{name: "bad base64", path: b64, wantErrs: []string{b64, "line 1", "key a is not valid standard base64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := LoadKeyring(tt.path)
			if len(tt.wantErrs) > 0 {
				if err == nil {
					t.Fatalf("LoadKeyring succeeded, want error")
				}
				for _, w := range tt.wantErrs {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadKeyring: %v", err)
			}
			if k.ActiveKeyID() != tt.wantID {
				t.Errorf("ActiveKeyID = %q, want %q", k.ActiveKeyID(), tt.wantID)
			}
		})
	}
}

func TestKeyringFromEnvOrFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "herald.keys")
	if err := os.WriteFile(file, []byte(keyLine("fromfile", 1, 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.keys")
	tests := []struct {
		name    string
		env     string
		path    string
		wantNil bool
		wantID  string
		wantErr string
	}{
		{name: "both empty", wantNil: true},
		{name: "blank env, no path", env: "  \n", wantNil: true},
		{name: "env only", env: keyLine("fromenv", 2, 32), wantID: "fromenv"},
		{name: "env wins over file", env: keyLine("fromenv", 2, 32), path: file, wantID: "fromenv"},
		{name: "env wins over missing file", env: keyLine("fromenv", 2, 32), path: missing, wantID: "fromenv"},
		{name: "file when env empty", path: file, wantID: "fromfile"},
		{name: "bad env", env: keyLine("x", 1, 16), path: file, wantErr: "HERALD_CODEC_KEYS: line 1: key x is 16 bytes"},
		{name: "missing file", path: missing, wantErr: "missing.keys does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := KeyringFromEnvOrFile(tt.env, tt.path)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("KeyringFromEnvOrFile: %v", err)
			case tt.wantNil:
				if k != nil {
					t.Fatalf("keyring = %v, want nil", k.KeyIDs())
				}
			case k == nil:
				t.Fatalf("keyring is nil, want %q", tt.wantID)
			case k.ActiveKeyID() != tt.wantID:
				t.Fatalf("ActiveKeyID = %q, want %q", k.ActiveKeyID(), tt.wantID)
			}
		})
	}
}

func TestGenerateKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etc", "herald")
	path := filepath.Join(dir, "codec.keys")
	k, err := GenerateKeyFile(path)
	if err != nil {
		t.Fatalf("GenerateKeyFile: %v", err)
	}
	if ids := k.KeyIDs(); len(ids) != 1 {
		t.Fatalf("generated keyring has ids %v, want one", ids)
	}
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{path, 0o600}, {dir, 0o700}, {filepath.Dir(dir), 0o700}} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != c.mode {
			t.Errorf("%s mode = %v, want %v", c.path, got, c.mode)
		}
	}
	loaded, err := LoadKeyring(path)
	if err != nil {
		t.Fatalf("LoadKeyring of generated file: %v", err)
	}
	if loaded.ActiveKeyID() != k.ActiveKeyID() {
		t.Errorf("loaded ActiveKeyID = %q, want %q", loaded.ActiveKeyID(), k.ActiveKeyID())
	}
	// The file holds the same key bytes: what one encrypts the other decrypts.
	enc, err := NewCodec(k).Encode(samplePayloads())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewCodec(loaded).Decode(enc); err != nil {
		t.Errorf("generated key does not match the file: %v", err)
	}

	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GenerateKeyFile(path); err == nil || !strings.Contains(err.Error(), "already exists; refusing to overwrite") {
		t.Fatalf("second GenerateKeyFile error = %v, want refusal", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("key file changed after refused overwrite")
	}

	k2, err := GenerateKeyFile(filepath.Join(dir, "other.keys"))
	if err != nil {
		t.Fatal(err)
	}
	if k2.ActiveKeyID() == k.ActiveKeyID() {
		t.Errorf("two generated keys share id %q", k.ActiveKeyID())
	}
	if _, err := GenerateKeyFile(""); err == nil {
		t.Errorf("GenerateKeyFile(\"\") succeeded, want error")
	}
}
