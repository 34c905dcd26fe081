package netguard

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	loopback := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	httpsOnly := Policy{RequireHTTPS: true}
	tests := []struct {
		name      string
		policy    Policy
		raw       string
		wantErr   string // "" means accepted
		forbidden bool   // the error must wrap ErrForbidden
	}{
		{"https name", Policy{}, "https://hooks.example.com/in?x=1", "", false},
		{"http name", Policy{}, "http://hooks.example.com:8080/in", "", false},
		{"upper-case scheme", Policy{}, "HTTPS://hooks.example.com/", "", false},
		{"trailing-dot name", Policy{}, "https://hooks.example.com./", "", false},
		{"public IPv4", Policy{}, "https://8.8.8.8/", "", false},
		{"public IPv6", Policy{}, "https://[2606:4700:4700::1111]:8443/", "", false},
		{"https required, https given", httpsOnly, "https://hooks.example.com/", "", false},
		{"allowed loopback", loopback, "http://127.0.0.1:9000/", "", false},
		{"localhost when loopback is allowed", loopback, "http://localhost:9000/", "", false},

		{"empty", Policy{}, "", "empty", false},
		{"whitespace", Policy{}, " https://hooks.example.com/", "whitespace", false},
		{"no scheme", Policy{}, "hooks.example.com/in", "no scheme", false},
		{"ftp", Policy{}, "ftp://hooks.example.com/", `scheme "ftp" is not supported`, false},
		{"file", Policy{}, "file:///etc/passwd", `scheme "file"`, false},
		{"javascript", Policy{}, "javascript:alert(1)", `scheme "javascript"`, false},
		{"http when https required", httpsOnly, "http://hooks.example.com/", "plain http is not allowed", false},
		{"opaque", Policy{}, "http:hooks.example.com", "has no host", false},
		{"no host", Policy{}, "https:///path", "has no host", false},
		{"port only", Policy{}, "https://:443/", "has no host", false},
		{"user and password", Policy{}, "https://user:hunter2@hooks.example.com/", "user name or password", false},
		{"user only", Policy{}, "https://user@hooks.example.com/", "user name or password", false},
		{"fragment", Policy{}, "https://hooks.example.com/in#frag", "fragment", false},
		{"empty fragment", Policy{}, "https://hooks.example.com/in#", "fragment", false},
		{"port zero", Policy{}, "https://hooks.example.com:0/", "port 0 is out of range", false},
		{"port too big", Policy{}, "https://hooks.example.com:65536/", "port 65536 is out of range", false},
		{"underscore-free bad char", Policy{}, "https://hooks!.example.com/", "contains '!'", false},
		{"empty label", Policy{}, "https://hooks..example.com/", "empty or over-long", false},
		{"non-ASCII name", Policy{}, "https://bücher.example/", "punycode", false},
		{"decimal IPv4", Policy{}, "http://2130706433/", "non-standard form", false},
		{"short IPv4", Policy{}, "http://127.1/", "non-standard form", false},
		{"hex IPv4", Policy{}, "http://0x7f.0x1/", "non-standard form", false},
		{"octal-ish IPv4", Policy{}, "http://0177.0.0.01/", "non-standard form", false},

		// Literal addresses are checked without any lookup.
		{"loopback IPv4", Policy{}, "http://127.0.0.1:8080/", "loopback", true},
		{"loopback IPv6", Policy{}, "http://[::1]/", "loopback", true},
		{"private", Policy{}, "https://10.0.0.5/hook", "address 10.0.0.5 is private (RFC 1918); allow it with --allow-cidr 10.0.0.5/32", true},
		{"metadata", Policy{}, "http://169.254.169.254/latest/meta-data/", "cloud metadata", true},
		{"mapped loopback", Policy{}, "http://[::ffff:127.0.0.1]/", "IPv4-mapped 127.0.0.1", true},
		{"link-local with zone", Policy{}, "http://[fe80::1%25eth0]/", "link-local", true},
		{"unspecified", Policy{}, "http://0.0.0.0:8080/", "unspecified", true},
		{"CGNAT", Policy{}, "https://100.64.1.1/", "CGNAT", true},
		{"localhost name", Policy{}, "http://localhost:8080/", `the name "localhost" always means this machine`, true},
		{"localhost subdomain", Policy{}, "http://api.LOCALHOST/", "always means this machine", true},
		{"private, https required", httpsOnly, "https://192.168.0.10/", "private", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := tt.policy.CheckURL(tt.raw)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tt.raw, err)
				}
				if u == nil || u.Host == "" {
					t.Fatalf("CheckURL(%q) returned %v, want the parsed URL", tt.raw, u)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckURL(%q) = %v, want an error containing %q", tt.raw, err, tt.wantErr)
			}
			if u != nil {
				t.Errorf("CheckURL returned a URL with an error")
			}
			if got := errors.Is(err, ErrForbidden); got != tt.forbidden {
				t.Errorf("errors.Is(err, ErrForbidden) = %v, want %v", got, tt.forbidden)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q reveals the password", err)
			}
		})
	}
}
