package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// KeySize is the length in bytes of every key: AES-256 needs 32.
const KeySize = 32

const maxKeyIDLen = 64

// Keyring holds AES-256 keys by id; the first is used to encrypt, all can
// decrypt. A Keyring is immutable and safe for concurrent use.
type Keyring struct {
	ids   []string // in file order; ids[0] is active
	aeads map[string]cipher.AEAD
}

// ActiveKeyID returns the id of the key that encrypts new payloads.
func (k *Keyring) ActiveKeyID() string { return k.ids[0] }

// KeyIDs returns the ids of all keys in file order, the active key first.
func (k *Keyring) KeyIDs() []string { return append([]string(nil), k.ids...) }

func (k *Keyring) aead(id string) (cipher.AEAD, bool) {
	a, ok := k.aeads[id]
	return a, ok
}

// LoadKeyring reads a key file (format in the package documentation).
func LoadKeyring(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("codec key file %s does not exist; create one with `herald keygen %s` or fix the path", path, path)
		}
		return nil, fmt.Errorf("codec key file %s: %w", path, err)
	}
	k, err := parseKeyring(string(b))
	if err != nil {
		return nil, fmt.Errorf("codec key file %s: %w", path, err)
	}
	return k, nil
}

// ParseKeyring parses keys in the key file format, such as the value of the
// HERALD_CODEC_KEYS environment variable.
func ParseKeyring(text string) (*Keyring, error) {
	k, err := parseKeyring(text)
	if err != nil {
		return nil, fmt.Errorf("codec keys: %w", err)
	}
	return k, nil
}

// KeyringFromEnvOrFile loads keys from envValue (the HERALD_CODEC_KEYS value)
// if it is not blank, otherwise from the key file at path. It returns
// (nil, nil) when both are empty: no encryption configured.
func KeyringFromEnvOrFile(envValue string, path string) (*Keyring, error) {
	if strings.TrimSpace(envValue) != "" {
		k, err := parseKeyring(envValue)
		if err != nil {
			return nil, fmt.Errorf("HERALD_CODEC_KEYS: %w", err)
		}
		return k, nil
	}
	if path == "" {
		return nil, nil
	}
	return LoadKeyring(path)
}

// GenerateKeyFile creates a key file at path holding one new random key and
// returns its keyring. The file is created with mode 0600 and missing parent
// directories with 0700. It refuses to overwrite an existing file.
func GenerateKeyFile(path string) (*Keyring, error) {
	if path == "" {
		return nil, errors.New("codec key file path is empty; give the path of the file to create")
	}
	id, line, err := newKeyLine(time.Now())
	if err != nil {
		return nil, err
	}
	text := "# Herald codec keys: one \"id:base64(32 bytes)\" per line; the first key encrypts, every key decrypts.\n" +
		"# To rotate, add a new key as the first line and keep the old ones below it.\n" +
		line + "\n"
	k, err := parseKeyring(text)
	if err != nil {
		return nil, fmt.Errorf("generated key %s: %w", id, err)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("codec key file %s: create directory: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("codec key file %s already exists; refusing to overwrite it because its keys may be needed to decrypt history (choose another path, or add a key to it by hand)", path)
		}
		return nil, fmt.Errorf("codec key file %s: %w", path, err)
	}
	_, werr := f.WriteString(text)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("codec key file %s: write: %w", path, werr)
	}
	return k, nil
}

// newKeyLine returns a fresh key id ("YYYYMMDD-<6 hex>") and its key file line.
func newKeyLine(now time.Time) (id, line string, err error) {
	var raw [KeySize + 3]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", fmt.Errorf("generate codec key: %w", err)
	}
	id = now.UTC().Format("20060102") + "-" + hex.EncodeToString(raw[KeySize:])
	return id, id + ":" + base64.StdEncoding.EncodeToString(raw[:KeySize]), nil
}

func parseKeyring(text string) (*Keyring, error) {
	k := &Keyring{aeads: make(map[string]cipher.AEAD)}
	firstLine := make(map[string]int)
	for n, line := range strings.Split(text, "\n") {
		lineNo := n + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, entry := range strings.Split(line, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			id, key, err := parseEntry(entry)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			if prev, dup := firstLine[id]; dup {
				return nil, fmt.Errorf("line %d: key id %q is already used on line %d; give each key its own id", lineNo, id, prev)
			}
			block, err := aes.NewCipher(key)
			if err != nil {
				return nil, fmt.Errorf("line %d: key %s: %w", lineNo, id, err)
			}
			aead, err := cipher.NewGCM(block)
			if err != nil {
				return nil, fmt.Errorf("line %d: key %s: %w", lineNo, id, err)
			}
			firstLine[id] = lineNo
			k.ids = append(k.ids, id)
			k.aeads[id] = aead
		}
	}
	if len(k.ids) == 0 {
		return nil, errors.New("no keys found; add a line \"<id>:<base64 of 32 random bytes>\" (e.g. from `openssl rand -base64 32`)")
	}
	return k, nil
}

func parseEntry(entry string) (id string, key []byte, err error) {
	id, b64, ok := strings.Cut(entry, ":")
	if !ok {
		return "", nil, errors.New("expected \"<id>:<base64 key>\" but found no ':'")
	}
	id, b64 = strings.TrimSpace(id), strings.TrimSpace(b64)
	if err := checkKeyID(id); err != nil {
		return "", nil, err
	}
	if b64 == "" {
		return "", nil, fmt.Errorf("key %s has no value after ':'; put the base64 of 32 random bytes there", id)
	}
	key, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(b64, "="))
	if err != nil {
		return "", nil, fmt.Errorf("key %s is not valid standard base64 (%v); encode the 32 key bytes with the standard alphabet, e.g. `openssl rand -base64 32`", id, err)
	}
	if len(key) != KeySize {
		return "", nil, fmt.Errorf("key %s is %d bytes; AES-256 needs %d", id, len(key), KeySize)
	}
	return id, key, nil
}

func checkKeyID(id string) error {
	if id == "" {
		return errors.New("key id before ':' is empty; name the key, e.g. 20260701-a1")
	}
	if len(id) > maxKeyIDLen {
		return fmt.Errorf("key id %.20q... is %d characters; use at most %d", id, len(id), maxKeyIDLen)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("key id %q has character %q; use only letters, digits, '.', '_' and '-'", id, r)
		}
	}
	return nil
}
