package herald

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Header is a custom header an endpoint's attempts carry (e.g. X-Team: billing).
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Limits of an endpoint's custom headers.
const (
	// MaxHeaders is how many custom headers an endpoint may have.
	MaxHeaders = 20
	// MaxHeaderValue is the longest value of a custom header.
	MaxHeaderValue = 1024
)

// reservedHeaders are the headers Herald sets itself, or that HTTP reserves: a custom
// header may not be one of them (canonical form).
var reservedHeaders = []string{
	"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature",
	"Content-Type", "Content-Length", "Content-Encoding", "User-Agent", "Host",
	"Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade",
}

// ParseHeader reads a header given as "Name: Value".
func ParseHeader(s string) (Header, error) {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return Header{}, fmt.Errorf("header %q: write it as \"Name: value\", e.g. \"X-Team: billing\"", s)
	}
	return Header{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)}, nil
}

// NormalizeHeaders checks hs and returns them with canonical names, sorted by name: a
// valid name used once, not one Herald sets itself (signature headers, Content-Type,
// User-Agent, ...), and a value without control characters of at most MaxHeaderValue bytes.
func NormalizeHeaders(hs []Header) ([]Header, error) {
	if len(hs) > MaxHeaders {
		return nil, fmt.Errorf("%d headers: an endpoint may have at most %d", len(hs), MaxHeaders)
	}
	out := make([]Header, 0, len(hs))
	for _, h := range hs {
		if h.Name == "" || !httpguts.ValidHeaderFieldName(h.Name) {
			return nil, fmt.Errorf("header name %q is not a valid HTTP header name (letters, digits and -, e.g. X-Team)", h.Name)
		}
		name := http.CanonicalHeaderKey(h.Name)
		if slices.Contains(reservedHeaders, name) {
			return nil, fmt.Errorf("header %s is set by Herald itself and cannot be overridden; choose another name", name)
		}
		if len(h.Value) > MaxHeaderValue {
			return nil, fmt.Errorf("header %s: the value is %d bytes long; the limit is %d", name, len(h.Value), MaxHeaderValue)
		}
		if !httpguts.ValidHeaderFieldValue(h.Value) {
			return nil, fmt.Errorf("header %s: the value has control characters", name)
		}
		if slices.ContainsFunc(out, func(o Header) bool { return o.Name == name }) {
			return nil, fmt.Errorf("header %s is given twice: give each header once", name)
		}
		out = append(out, Header{Name: name, Value: h.Value})
	}
	slices.SortFunc(out, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
