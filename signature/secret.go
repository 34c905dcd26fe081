package signature

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
)

// SecretPrefix starts every secret in its serialized form.
const SecretPrefix = "whsec_"

// Bounds on the number of random bytes a secret encodes, per the Standard Webhooks spec.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
	// GeneratedSecretBytes is how many random bytes GenerateSecret draws.
	GeneratedSecretBytes = 32
)

// redacted is what String and LogValue print in place of a secret.
const redacted = SecretPrefix + "[REDACTED]"

// Secret is an HMAC signing secret in its serialized form: "whsec_" followed by the
// standard base64 encoding of 24 to 64 random bytes.
//
// String, GoString and LogValue redact it, so it never reaches a log line or an error by
// accident; JSON keeps the full value, because endpoint configuration carries it (in
// encrypted Temporal payloads). Convert explicitly with string(s) to reveal it.
type Secret string

// GenerateSecret returns a new secret of 32 random bytes from crypto/rand.
func GenerateSecret() (Secret, error) {
	b := make([]byte, GeneratedSecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	return Secret(SecretPrefix + base64.StdEncoding.EncodeToString(b)), nil
}

// ParseSecret checks that s is a well-formed secret ("whsec_" + standard base64 of 24
// to 64 bytes) and returns it. Surrounding whitespace is ignored. The error never
// contains the secret itself.
func ParseSecret(s string) (Secret, error) {
	sec := Secret(strings.TrimSpace(s))
	if _, err := sec.key(); err != nil {
		return "", err
	}
	return sec, nil
}

// key returns the HMAC key s encodes, or an error saying what is wrong with s.
func (s Secret) key() ([]byte, error) {
	const form = `expected "whsec_" followed by the standard base64 encoding of 24 to 64 random bytes`
	str := string(s)
	if str == "" {
		return nil, fmt.Errorf("invalid secret: empty; %s", form)
	}
	enc, ok := strings.CutPrefix(str, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("invalid secret: missing %q prefix; %s", SecretPrefix, form)
	}
	if strings.ContainsAny(enc, "\r\n") {
		// DecodeString would skip line breaks; a secret has none.
		return nil, fmt.Errorf("invalid secret: contains a line break; %s", form)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil {
		// The base64 error quotes an offset, never the secret.
		return nil, fmt.Errorf("invalid secret: not standard base64 (%v); %s", err, form)
	}
	if len(b) < MinSecretBytes || len(b) > MaxSecretBytes {
		return nil, fmt.Errorf("invalid secret: encodes %d bytes; %s", len(b), form)
	}
	return b, nil
}

// String returns a redacted placeholder, or "" for the empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString returns a redacted placeholder, so %#v does not reveal the secret either.
func (s Secret) GoString() string {
	return fmt.Sprintf("signature.Secret(%q)", s.String())
}

// LogValue implements slog.LogValuer with the same redacted placeholder as String.
func (s Secret) LogValue() slog.Value {
	return slog.StringValue(s.String())
}
