package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// AllowFlag is the command-line flag that operators use to allow a range; refusal hints name it.
const AllowFlag = "--allow-cidr"

// ErrForbidden is wrapped by every refusal of an address, so callers can tell a policy
// refusal from a network failure with errors.Is.
var ErrForbidden = errors.New("forbidden address")

// ForbiddenError carries the address and reason, so callers can record why an attempt was refused.
type ForbiddenError struct {
	// Addr is the address refused, as dialled or written (zone and IPv4-mapped form included).
	Addr netip.Addr
	// Reason says what kind of address it is, e.g. "private (RFC 1918)".
	Reason string
	// Hint says how an operator can allow it, or that nothing can.
	Hint string
}

// Error reads like "address 10.0.0.5 is private (RFC 1918); allow it with --allow-cidr 10.0.0.5/32".
func (e *ForbiddenError) Error() string {
	msg := fmt.Sprintf("address %s is %s", e.Addr, e.Reason)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Unwrap returns ErrForbidden.
func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

// Policy says which addresses Herald may connect to. The zero Policy refuses every
// address that is not globally reachable unicast and allows plain http.
type Policy struct {
	// Allow lists ranges that are dialled even though they are refused by default, e.g.
	// 10.20.0.0/16 for endpoints inside the operator's own network. Unspecified,
	// multicast and broadcast addresses are refused even when allowed.
	Allow []netip.Prefix
	// RequireHTTPS refuses plain http endpoints and requests.
	RequireHTTPS bool
}

// ParseCIDRs parses an allow list such as the values of --allow-cidr. Each entry is a CIDR
// prefix ("10.20.0.0/16", "fd00::/8") or a bare address, taken as a single-address
// prefix (/32 or /128). An entry with host bits set ("10.0.0.5/8") is refused as
// ambiguous. The error names the bad entry and its position.
func ParseCIDRs(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for i, raw := range list {
		entry := strings.TrimSpace(raw)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("allow-list entry %d %q: %s", i+1, raw, fmt.Sprintf(format, args...))
		}
		if entry == "" {
			return nil, bad("empty; give a CIDR such as 10.20.0.0/16 or an address such as 10.20.0.7")
		}
		if !strings.Contains(entry, "/") {
			a, err := netip.ParseAddr(entry)
			if err != nil {
				return nil, bad("not an IP address or CIDR prefix; write it as 10.20.0.0/16, fd00::/8 or 10.20.0.7")
			}
			if a.Zone() != "" {
				return nil, bad("has an IPv6 zone; remove the %%%s suffix", a.Zone())
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			return nil, bad("not a CIDR prefix (%v); write it as 10.20.0.0/16 or fd00::/8", err)
		}
		if m := p.Masked(); m != p {
			return nil, bad("has host bits set; write %s for the whole network or %s for the single address",
				m, netip.PrefixFrom(p.Addr(), p.Addr().BitLen()))
		}
		out = append(out, p)
	}
	return out, nil
}

// Check reports why ip may not be dialled, as a *ForbiddenError, or nil. It is a pure
// function of the policy and ip. IPv6 zones are ignored; IPv4-mapped addresses
// (::ffff:a.b.c.d) are judged as the IPv4 address they carry, and so are NAT64
// (64:ff9b::/96) and 6to4 (2002::/16) addresses.
func (p Policy) Check(ip netip.Addr) error {
	if !ip.IsValid() {
		return &ForbiddenError{Addr: ip, Reason: "not a valid IP address", Hint: "give an IPv4 or IPv6 address"}
	}
	a := ip.WithZone("")
	u := a.Unmap()
	c := classify(u)
	if c.reason == "" {
		return nil
	}
	reason := c.reason
	if u != a {
		reason = fmt.Sprintf("IPv4-mapped %s, which is %s", u, reason)
	}
	if c.fixed {
		return &ForbiddenError{Addr: ip, Reason: reason, Hint: "no allow-list entry can permit it"}
	}
	for _, pre := range p.Allow {
		pre = unmapPrefix(pre)
		if pre.Contains(a) || pre.Contains(u) || (c.embedded.IsValid() && pre.Contains(c.embedded)) {
			return nil
		}
	}
	return &ForbiddenError{
		Addr:   ip,
		Reason: reason,
		Hint:   fmt.Sprintf("allow it with %s %s", AllowFlag, netip.PrefixFrom(u, u.BitLen())),
	}
}

// unmapPrefix turns an IPv4-mapped prefix such as ::ffff:10.0.0.0/104 into its IPv4
// form (10.0.0.0/8), so it matches the IPv4 addresses Check judges.
func unmapPrefix(pre netip.Prefix) netip.Prefix {
	if a := pre.Addr(); a.Is4In6() && pre.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), pre.Bits()-96)
	}
	return pre
}

// class is why an unmapped, unzoned address is refused by default.
type class struct {
	reason   string     // "" means allowed
	fixed    bool       // refused whatever the allow list says
	embedded netip.Addr // the IPv4 address a NAT64 or 6to4 address leads to, if that is why
}

// classify looks a up in the default ranges. a has no zone and is not IPv4-mapped.
func classify(a netip.Addr) class {
	if a.Is4() {
		for _, fr := range ipv4Ranges {
			if fr.prefix.Contains(a) {
				return class{reason: fr.reason, fixed: fr.fixed}
			}
		}
		return class{}
	}
	for _, fr := range ipv6Ranges {
		if fr.prefix.Contains(a) {
			return class{reason: fr.reason, fixed: fr.fixed}
		}
	}
	b := a.As16()
	for _, e := range []struct {
		prefix netip.Prefix
		v4     netip.Addr
		name   string
	}{
		{nat64WellKnown, netip.AddrFrom4([4]byte(b[12:16])), "NAT64 (RFC 6052)"},
		{sixToFour, netip.AddrFrom4([4]byte(b[2:6])), "6to4 (RFC 3056)"},
	} {
		if !e.prefix.Contains(a) {
			continue
		}
		inner := classify(e.v4)
		if inner.reason == "" {
			return class{}
		}
		return class{
			reason:   fmt.Sprintf("%s for %s, which is %s", e.name, e.v4, inner.reason),
			fixed:    inner.fixed,
			embedded: e.v4,
		}
	}
	if !globalUnicast.Contains(a) {
		return class{reason: "outside IPv6 global unicast (2000::/3)"}
	}
	return class{}
}
