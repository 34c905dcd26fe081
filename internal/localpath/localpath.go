// Package localpath decides whether a value from outside (a form's "next" field, a query
// parameter) may be sent back as a redirect's Location: only a path on this site passes.
//
// A browser reads a Location header by the WHATWG URL rules, more loosely than Go's
// net/url: it drops leading and trailing spaces and control characters, drops tabs and
// newlines anywhere, reads '\' as '/', and takes "//host", "/\host", "/<tab>/host" or
// "https:host" to another site. A check that strips or escapes some of these always misses
// one, so Valid accepts only a strict grammar (RFC 3986 terms):
//
//	path = "/" [ segment-nz *( "/" segment ) ] [ "?" query ]
//
// It starts with exactly one '/'; it holds only letters, digits, "-._~!$&'()*+,;=:@/?"
// and %XX escapes (no space, control character, '\', '#' or non-ASCII byte); it is at most
// MaxLength bytes long; and its path, unescaped once, still does not start with "//" or
// "/\" and holds no '\' or control character, for anything that unescapes it again.
package localpath

import (
	"net/url"
	"strings"
)

// MaxLength bounds a path Valid accepts, in bytes.
const MaxLength = 2048

// Or returns p when it is Valid, else def.
func Or(p, def string) string {
	if Valid(p) {
		return p
	}
	return def
}

// Valid reports whether p matches the package's grammar: a path on this site.
func Valid(p string) bool {
	if p == "" || len(p) > MaxLength || p[0] != '/' || (len(p) > 1 && (p[1] == '/' || p[1] == '\\')) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0:
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return false
			}
		default:
			return false
		}
	}
	path, _, _ := strings.Cut(p, "?")
	dec, err := url.PathUnescape(path)
	if err != nil || strings.HasPrefix(dec, "//") || strings.HasPrefix(dec, "/\\") {
		return false
	}
	for i := 0; i < len(dec); i++ {
		if c := dec[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
