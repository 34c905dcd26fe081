package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// CheckURL validates an endpoint URL at registration and returns it parsed. It requires
// an absolute http or https URL (https only when RequireHTTPS) with a host, no
// user:password, no fragment and a port in 1–65535. A literal IP host must pass Check;
// a name must be a plausible DNS name, not a numeric IPv4 form such as "2130706433", and
// not "localhost" unless loopback is allowed. CheckURL does no DNS lookup and never
// dials: the dialer checks the resolved address on every connection.
func (p Policy) CheckURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("endpoint URL is empty; give an absolute URL such as https://example.com/webhooks")
	}
	if strings.TrimSpace(raw) != raw {
		return nil, errors.New("endpoint URL has leading or trailing whitespace; remove it")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the input; do not echo a password back.
		if strings.Contains(raw, "@") {
			return nil, errors.New("endpoint URL does not parse; check its syntax (it is not repeated here because it may hold credentials)")
		}
		return nil, fmt.Errorf("endpoint URL does not parse: %w", err)
	}
	shown := u.Redacted()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("endpoint URL %q: %s", shown, fmt.Sprintf(format, args...))
	}

	switch u.Scheme {
	case "https":
	case "http":
		if p.RequireHTTPS {
			return nil, bad("plain http is not allowed on this server; use https://")
		}
	case "":
		return nil, bad("has no scheme; write it as https://host/path")
	default:
		return nil, bad("scheme %q is not supported; use https:// (or http://)", u.Scheme)
	}
	if u.Opaque != "" {
		return nil, bad("has no host; write it as %s://host/path", u.Scheme)
	}
	if u.User != nil {
		return nil, bad("contains a user name or password; remove it: Herald authenticates with the webhook signature")
	}
	if strings.Contains(raw, "#") {
		return nil, bad("has a fragment (#...); remove it: fragments are never sent to the server")
	}
	host := u.Hostname()
	if host == "" {
		return nil, bad("has no host; write it as %s://host/path", u.Scheme)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, bad("port %s is out of range; use 1-65535", port)
		}
	}

	if addr, err := netip.ParseAddr(host); err == nil {
		if err := p.Check(addr); err != nil {
			return nil, fmt.Errorf("endpoint URL %q: %w", shown, err)
		}
		return u, nil
	}
	if strings.Contains(host, ":") {
		return nil, bad("host %q is not a valid IPv6 address", host)
	}
	if err := p.checkHostname(host); err != nil {
		return nil, fmt.Errorf("endpoint URL %q: %w", shown, err)
	}
	return u, nil
}

// checkHostname checks a host name without resolving it.
func (p Policy) checkHostname(host string) error {
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return fmt.Errorf("host %q is not ASCII; write it in its ASCII (punycode, xn--) form", host)
		}
	}
	name := strings.TrimSuffix(host, ".")
	if len(name) > 253 {
		return fmt.Errorf("host name is %d characters long; DNS allows at most 253", len(name))
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("host %q has an empty or over-long (>63) label; check the name", host)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("host %q contains %q; a DNS name has only letters, digits, '-' and '_'", host, c)
			}
		}
	}
	// No top-level domain is numeric, but some resolvers read "127.1", "2130706433" or
	// "0x7f.1" as IPv4 addresses.
	last := strings.ToLower(labels[len(labels)-1])
	if strings.HasPrefix(last, "0x") || strings.Trim(last, "0123456789") == "" {
		return fmt.Errorf("host %q looks like an IPv4 address in a non-standard form; write the address as four decimal numbers (a.b.c.d)", host)
	}
	// RFC 6761: localhost and its subdomains always name this machine.
	if lower := strings.ToLower(name); lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		v4 := p.Check(netip.AddrFrom4([4]byte{127, 0, 0, 1}))
		v6 := p.Check(netip.IPv6Loopback())
		if v4 != nil && v6 != nil {
			return &ForbiddenError{
				Addr:   netip.AddrFrom4([4]byte{127, 0, 0, 1}),
				Reason: fmt.Sprintf("loopback (the name %q always means this machine)", host),
				Hint:   fmt.Sprintf("allow it with %s 127.0.0.1/32", AllowFlag),
			}
		}
	}
	return nil
}
