package netguard

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testkit/check"
)

func TestCheckDefaultPolicy(t *testing.T) {
	tests := []struct {
		ip         string
		wantReason string // "" means allowed
	}{
		// Global unicast is allowed.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.216.34", ""},
		{"100.63.255.255", ""},  // just below CGNAT
		{"100.128.0.0", ""},     // just above CGNAT
		{"172.15.255.255", ""},  // just below 172.16/12
		{"172.32.0.0", ""},      // just above 172.16/12
		{"192.169.0.1", ""},     // just above 192.168/16
		{"223.255.255.255", ""}, // just below multicast
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001:80b::200e", ""},
		{"::ffff:8.8.8.8", ""},    // mapped public
		{"64:ff9b::8.8.8.8", ""},  // NAT64 to a public address
		{"2002:0808:0808::1", ""}, // 6to4 for 8.8.8.8
		{"2001:4860:4860::8888", ""},

		// IPv4 non-global.
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "this network"},
		{"10.0.0.5", "private (RFC 1918)"},
		{"10.255.255.255", "private (RFC 1918)"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.254", "CGNAT"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "cloud metadata"},
		{"169.254.0.1", "link-local"},
		{"172.16.0.1", "private (RFC 1918)"},
		{"172.31.255.255", "private (RFC 1918)"},
		{"192.0.0.8", "IETF protocol assignments"},
		{"192.0.2.1", "documentation"},
		{"192.88.99.1", "6to4 relay"},
		{"192.168.1.1", "private (RFC 1918)"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.254", "reserved"},
		{"255.255.255.255", "broadcast"},

		// IPv6 non-global.
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"fc00::1", "unique local"},
		{"fd12:3456:789a::1", "unique local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"febf::1", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"ff0e::1", "multicast"},
		{"100::1", "outside IPv6 global unicast"},   // discard-only
		{"::7f00:1", "outside IPv6 global unicast"}, // IPv4-compatible 127.0.0.1
		{"5f00::1", "outside IPv6 global unicast"},  // SRv6 SIDs
		{"4000::1", "outside IPv6 global unicast"},  // unallocated
		{"64:ff9b:1::a00:1", "local-use NAT64"},     // RFC 8215
		{"2001::1", "Teredo"},                       // Teredo
		{"2001:2::1", "benchmarking"},               // RFC 5180
		{"2001:db8::1", "documentation"},            // RFC 3849
		{"3fff::1", "documentation"},                // RFC 9637
		{"2001:20::1", "ORCHIDv2"},                  // RFC 7343

		// IPv4-mapped forms are judged as the IPv4 address.
		{"::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1, which is loopback"},
		{"::ffff:10.0.0.5", "IPv4-mapped 10.0.0.5, which is private (RFC 1918)"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		{"::ffff:100.64.0.1", "CGNAT"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"::ffff:255.255.255.255", "broadcast"},
		{"::ffff:224.0.0.1", "multicast"},

		// Addresses that carry an IPv4 address to reach.
		{"64:ff9b::127.0.0.1", "NAT64 (RFC 6052) for 127.0.0.1, which is loopback"},
		{"64:ff9b::a9fe:a9fe", "NAT64 (RFC 6052) for 169.254.169.254"},
		{"2002:0a00:0005::1", "6to4 (RFC 3056) for 10.0.0.5, which is private"},
		{"2002:7f00:0001::", "6to4 (RFC 3056) for 127.0.0.1"},
	}
	var p Policy
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.ip)
			err := p.Check(ip)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want nil", ip, err)
				}
				return
			}
			var fe *ForbiddenError
			if !errors.As(err, &fe) || !errors.Is(err, ErrForbidden) {
				t.Fatalf("Check(%s) = %v, want a *ForbiddenError wrapping ErrForbidden", ip, err)
			}
			if !strings.Contains(fe.Reason, tt.wantReason) {
				t.Errorf("reason %q, want it to contain %q", fe.Reason, tt.wantReason)
			}
			if fe.Addr != ip {
				t.Errorf("Addr = %s, want %s", fe.Addr, ip)
			}
		})
	}
}

func TestCheckErrorMessage(t *testing.T) {
	tests := []struct {
		ip   string
		want string
	}{
		{"10.0.0.5", "address 10.0.0.5 is private (RFC 1918); allow it with --allow-cidr 10.0.0.5/32"},
		{"fd00::7", "address fd00::7 is unique local (RFC 4193); allow it with --allow-cidr fd00::7/128"},
		{"::ffff:127.0.0.1", "address ::ffff:127.0.0.1 is IPv4-mapped 127.0.0.1, which is loopback; allow it with --allow-cidr 127.0.0.1/32"},
		{"fe80::1%eth0", "address fe80::1%eth0 is link-local; allow it with --allow-cidr fe80::1/128"},
		{"0.0.0.0", "address 0.0.0.0 is unspecified; no allow-list entry can permit it"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			err := Policy{}.Check(netip.MustParseAddr(tt.ip))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Check(%s) = %v\nwant %s", tt.ip, err, tt.want)
			}
		})
	}
	if err := (Policy{}).Check(netip.Addr{}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("Check(zero Addr) = %v, want a refusal", err)
	}
}

func TestCheckAllow(t *testing.T) {
	allow, err := ParseCIDRs([]string{"10.20.0.0/16", "127.0.0.0/8", "fd00::/8", "100.64.0.1", "::ffff:192.168.7.0/120", "169.254.169.254"})
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Allow: allow}
	tests := []struct {
		ip      string
		allowed bool
	}{
		{"10.20.3.4", true},
		{"10.21.0.1", false},
		{"127.0.0.1", true},
		{"::ffff:127.0.0.1", true}, // mapped form of an allowed IPv4 address
		{"::1", false},             // IPv4 loopback allowed, IPv6 loopback not
		{"fd00::1", true},
		{"fe80::1", false},
		{"100.64.0.1", true},
		{"100.64.0.2", false},
		{"192.168.7.9", true}, // IPv4 form of an allowed mapped prefix
		{"192.168.8.9", false},
		{"64:ff9b::a14:304", true},  // NAT64 for 10.20.3.4
		{"2002:0a14:0304::1", true}, // 6to4 for 10.20.3.4
		{"169.254.169.254", true},   // explicitly allowed
		{"8.8.8.8", true},
		{"224.0.0.1", false},
		{"0.0.0.0", false},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			err := p.Check(netip.MustParseAddr(tt.ip))
			if (err == nil) != tt.allowed {
				t.Fatalf("Check(%s) = %v, want allowed=%v", tt.ip, err, tt.allowed)
			}
		})
	}
}

func TestFixedRangesCannotBeAllowed(t *testing.T) {
	all, err := ParseCIDRs([]string{"0.0.0.0/0", "::/0"})
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Allow: all}
	for _, ip := range []string{"0.0.0.0", "::", "255.255.255.255", "224.0.0.251", "ff02::fb", "::ffff:0.0.0.0", "64:ff9b::e000:1"} {
		if err := p.Check(netip.MustParseAddr(ip)); !errors.Is(err, ErrForbidden) {
			t.Errorf("Check(%s) with everything allowed = %v, want a refusal", ip, err)
		}
	}
	for _, ip := range []string{"10.0.0.1", "127.0.0.1", "::1", "fe80::1", "169.254.169.254"} {
		if err := p.Check(netip.MustParseAddr(ip)); err != nil {
			t.Errorf("Check(%s) with everything allowed = %v, want nil", ip, err)
		}
	}
}

func TestParseCIDRs(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr string
	}{
		{"nil", nil, []string{}, ""},
		{"prefixes and bare addresses", []string{"10.0.0.0/8", " 192.168.1.10 ", "fd00::/8", "2001:db8::5"},
			[]string{"10.0.0.0/8", "192.168.1.10/32", "fd00::/8", "2001:db8::5/128"}, ""},
		{"empty entry", []string{"10.0.0.0/8", ""}, nil, `entry 2 "": empty`},
		{"garbage", []string{"intranet"}, nil, `entry 1 "intranet": not an IP address or CIDR prefix`},
		{"bad prefix length", []string{"10.0.0.0/33"}, nil, `entry 1 "10.0.0.0/33": not a CIDR prefix`},
		{"host bits set", []string{"10.0.0.5/8"}, nil, "write 10.0.0.0/8 for the whole network or 10.0.0.5/32 for the single address"},
		{"zone", []string{"fe80::1%eth0"}, nil, "zone"},
		{"leading zeros", []string{"010.0.0.1"}, nil, "not an IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCIDRs(tt.in)
			if check.Err(t, "ParseCIDRs", err, tt.wantErr) {
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseCIDRs = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].String() != tt.want[i] {
					t.Fatalf("ParseCIDRs = %v, want %v", got, tt.want)
				}
			}
		})
	}
}
