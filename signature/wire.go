package signature

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The text of the webhook-timestamp and webhook-signature values, each format next to the
// reading of it that Verify uses.

// maxTimestampDigits bounds webhook-timestamp: Unix seconds fit in 19 digits until long after we are gone.
const maxTimestampDigits = 19

// formatTimestamp is the webhook-timestamp value for ts: Unix seconds in decimal.
func formatTimestamp(ts time.Time) string { return strconv.FormatInt(ts.Unix(), 10) }

// formatSignature is one webhook-signature entry for a MAC: "v1,<base64>".
func formatSignature(mac []byte) string {
	return SignatureVersion + "," + base64.StdEncoding.EncodeToString(mac)
}

// parseTimestamp reads a webhook-timestamp: decimal digits only, no sign.
func parseTimestamp(s string) (time.Time, error) {
	bad := func() error {
		return fmt.Errorf("%w: %q is not Unix seconds (decimal digits only)", ErrInvalidTimestamp, s)
	}
	if len(s) > maxTimestampDigits {
		return time.Time{}, bad()
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, bad()
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, bad()
	}
	return time.Unix(n, 0), nil
}

// candidates returns the decoded v1 signatures in a webhook-signature value, skipping
// other versions and entries that are not base64.
func candidates(header string) [][]byte {
	var out [][]byte
	for _, entry := range strings.Fields(header) {
		version, enc, ok := strings.Cut(entry, ",")
		if !ok || version != SignatureVersion {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			continue
		}
		out = append(out, b)
	}
	return out
}
