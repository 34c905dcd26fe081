package netguard

import "net/netip"

// forbiddenRange is an address block refused unless allowed, and why.
type forbiddenRange struct {
	prefix netip.Prefix
	reason string
	// fixed ranges are never dialled, whatever Policy.Allow says: they are not unicast
	// destinations (or, for the unspecified address, silently mean "this host").
	fixed bool
}

// r is a range refused unless allowed.
func r(cidr, reason string) forbiddenRange {
	return forbiddenRange{prefix: netip.MustParsePrefix(cidr), reason: reason}
}

// fixed is a range refused even when allowed.
func fixed(cidr, reason string) forbiddenRange {
	fr := r(cidr, reason)
	fr.fixed = true
	return fr
}

// ipv4Ranges are the IPv4 blocks refused by default, most specific first. They follow the
// IANA IPv4 Special-Purpose Address Registry, keeping every block that is not globally
// reachable unicast.
var ipv4Ranges = []forbiddenRange{
	fixed("0.0.0.0/32", "unspecified"),
	fixed("255.255.255.255/32", "the broadcast address"),
	r("169.254.169.254/32", "link-local (cloud metadata service)"),
	r("0.0.0.0/8", `"this network" (RFC 791)`),
	r("10.0.0.0/8", "private (RFC 1918)"),
	r("100.64.0.0/10", "shared address space (CGNAT, RFC 6598)"),
	r("127.0.0.0/8", "loopback"),
	r("169.254.0.0/16", "link-local"),
	r("172.16.0.0/12", "private (RFC 1918)"),
	r("192.0.0.0/24", "reserved for IETF protocol assignments (RFC 6890)"),
	r("192.0.2.0/24", "reserved for documentation (TEST-NET-1)"),
	r("192.88.99.0/24", "the deprecated 6to4 relay anycast block (RFC 7526)"),
	r("192.168.0.0/16", "private (RFC 1918)"),
	r("198.18.0.0/15", "reserved for benchmarking (RFC 2544)"),
	r("198.51.100.0/24", "reserved for documentation (TEST-NET-2)"),
	r("203.0.113.0/24", "reserved for documentation (TEST-NET-3)"),
	fixed("224.0.0.0/4", "multicast"),
	r("240.0.0.0/4", "reserved (RFC 1112)"),
}

// ipv6Ranges are the IPv6 blocks refused by default, most specific first. Anything
// outside global unicast 2000::/3 is refused as well (see notGlobalUnicast), which covers
// unique local fc00::/7, link-local fe80::/10, site-local fec0::/10, discard-only 100::/64
// and the IPv4-compatible ::/96; these entries give the common ones a precise reason.
var ipv6Ranges = []forbiddenRange{
	fixed("::/128", "unspecified"),
	r("::1/128", "loopback"),
	fixed("ff00::/8", "multicast"),
	r("fc00::/7", "unique local (RFC 4193)"),
	r("fe80::/10", "link-local"),
	r("fec0::/10", "site-local (deprecated, RFC 3879)"),
	r("64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"),
	r("2001::/32", "Teredo (RFC 4380), which tunnels to an IPv4 address"),
	r("2001:2::/48", "reserved for benchmarking (RFC 5180)"),
	r("2001:10::/28", "ORCHID (RFC 4843)"),
	r("2001:20::/28", "ORCHIDv2 (RFC 7343)"),
	r("2001:db8::/32", "reserved for documentation (RFC 3849)"),
	r("3fff::/20", "reserved for documentation (RFC 9637)"),
}

// globalUnicast is the IPv6 block IANA allocates for global unicast.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// Prefixes whose IPv6 addresses carry an IPv4 address that may be reached through them.
var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052: IPv4 in the last 32 bits
	sixToFour      = netip.MustParsePrefix("2002::/16")    // RFC 3056: IPv4 in bits 16–47
)
