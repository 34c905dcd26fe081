package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The Standard Webhooks header names.
const (
	// HeaderID carries the event id; it stays the same on every retry and replay.
	HeaderID = "webhook-id"
	// HeaderTimestamp carries the attempt time in Unix seconds.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature carries the space-separated "v1,<base64>" signatures.
	HeaderSignature = "webhook-signature"
)

// SignatureVersion prefixes every HMAC-SHA256 signature in the webhook-signature header.
const SignatureVersion = "v1"

// MaxIDLength is the longest event id ValidateID accepts.
const MaxIDLength = 255

// ValidateID reports why id cannot be used as a webhook-id, or nil. An id must be 1 to
// 255 printable ASCII characters without spaces or full stops: a "." would make the
// signed content "{id}.{timestamp}.{body}" ambiguous, and whitespace, control or
// non-ASCII characters do not survive HTTP headers intact.
func ValidateID(id string) error {
	if id == "" {
		return errors.New("invalid event id: empty; use 1 to 255 printable ASCII characters without '.' or spaces")
	}
	if len(id) > MaxIDLength {
		return fmt.Errorf("invalid event id: %d bytes long; use at most %d", len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c == '.':
			return fmt.Errorf("invalid event id %q: contains '.' at byte %d, which would make the signed content ambiguous; use another separator such as '_' or '-'", id, i)
		case c == ' ':
			return fmt.Errorf("invalid event id %q: contains a space at byte %d; remove it", id, i)
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("invalid event id %q: contains control character %#02x at byte %d; use printable ASCII only", id, c, i)
		case c > 0x7f:
			return fmt.Errorf("invalid event id %q: contains a non-ASCII byte at %d; use printable ASCII only", id, i)
		}
	}
	return nil
}

// Sign returns the webhook-signature header value for an attempt made at ts: one
// "v1,<base64>" entry per secret, space-separated, in the order given. It fails if no
// secret is given, a secret is malformed, id fails ValidateID, or ts is before 1970.
func Sign(id string, ts time.Time, body []byte, secrets ...Secret) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	if len(secrets) == 0 {
		return "", errors.New("sign: no secret given; pass at least one signing secret")
	}
	if ts.Unix() < 0 {
		return "", fmt.Errorf("sign: timestamp %s is before the Unix epoch; pass the attempt time", ts.UTC().Format(time.RFC3339))
	}
	tsText := formatTimestamp(ts)
	var b strings.Builder
	for i, s := range secrets {
		key, err := s.key()
		if err != nil {
			return "", fmt.Errorf("sign: secret %d of %d: %w", i+1, len(secrets), err)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(formatSignature(mac(key, id, tsText, body)))
	}
	return b.String(), nil
}

// Headers sets webhook-id, webhook-timestamp and webhook-signature on h for an attempt
// made at ts. On error h is left unchanged.
func Headers(h http.Header, id string, ts time.Time, body []byte, secrets ...Secret) error {
	sig, err := Sign(id, ts, body, secrets...)
	if err != nil {
		return err
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, formatTimestamp(ts))
	h.Set(HeaderSignature, sig)
	return nil
}

// mac returns HMAC-SHA256 with key over "{id}.{ts}.{body}".
func mac(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}
