package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// countingServer starts an HTTP server on 127.0.0.1 that counts the connections it accepts.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start() // httptest listens on 127.0.0.1:0
	t.Cleanup(srv.Close)
	return srv, &conns
}

// hostsOnly is a resolver that answers from /etc/hosts and refuses to send any DNS query,
// so resolving "localhost" in a test never leaves the machine.
var hostsOnly = &net.Resolver{
	PreferGo: true,
	Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("DNS is disabled in netguard tests")
	},
}

// transport returns p's Transport; if viaHosts, its dialer resolves with hostsOnly.
func transport(p Policy, viaHosts bool) *http.Transport {
	tr := p.Transport()
	if viaHosts {
		d := p.Dialer(DialTimeout)
		d.Resolver = hostsOnly
		tr.DialContext = d.DialContext
	}
	return tr
}

func TestTransportDialing(t *testing.T) {
	srv, conns := countingServer(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	byIP := srv.URL // http://127.0.0.1:port
	byName := "http://localhost:" + strconv.Itoa(port)
	loopback := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

	tests := []struct {
		name     string
		policy   Policy
		url      string
		viaHosts bool
		wantOK   bool
		wantMsg  string
	}{
		{"default policy refuses 127.0.0.1", Policy{}, byIP, false, false, "address 127.0.0.1 is loopback; allow it with --allow-cidr 127.0.0.1/32"},
		{"default policy refuses localhost", Policy{}, byName, true, false, "is loopback"},
		{"IPv6 loopback allowed only refuses 127.0.0.1", Policy{Allow: []netip.Prefix{netip.MustParsePrefix("::1/128")}}, byIP, false, false, "127.0.0.1 is loopback"},
		{"https required refuses plain http", Policy{RequireHTTPS: true, Allow: loopback.Allow}, byIP, false, false, "https required"},
		{"allowed loopback, by address", loopback, byIP, false, true, ""},
		{"allowed loopback, by name", loopback, byName, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := conns.Load()
			tr := transport(tt.policy, tt.viaHosts)
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			resp, err := client.Get(tt.url)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("GET %s = %v, want success", tt.url, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || string(body) != "ok" {
					t.Fatalf("GET %s = %d %q, want 200 ok", tt.url, resp.StatusCode, body)
				}
				if conns.Load() == before {
					t.Fatal("the server saw no new connection for a successful request")
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s succeeded, want a refusal", tt.url)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("GET %s = %v, want an error containing %q", tt.url, err, tt.wantMsg)
			}
			if got := conns.Load() - before; got != 0 {
				t.Fatalf("the server accepted %d connection(s); the refusal must come before connecting", got)
			}
		})
	}
}

func TestRefusalErrorChain(t *testing.T) {
	srv, conns := countingServer(t)
	client := &http.Client{Transport: transport(Policy{}, false)}
	_, err := client.Get(srv.URL)
	if err == nil {
		t.Fatal("GET to loopback with the default policy succeeded")
	}
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("error %v does not wrap ErrForbidden", err)
	}
	var fe *ForbiddenError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v holds no *ForbiddenError", err)
	}
	if fe.Addr != netip.MustParseAddr("127.0.0.1") || fe.Reason != "loopback" || fe.Hint != "allow it with --allow-cidr 127.0.0.1/32" {
		t.Fatalf("ForbiddenError = %+v", *fe)
	}
	if conns.Load() != 0 {
		t.Fatalf("the server accepted %d connection(s)", conns.Load())
	}

	// The HTTPS requirement is a different refusal.
	client = &http.Client{Transport: transport(Policy{RequireHTTPS: true}, false)}
	_, err = client.Get(srv.URL)
	if !errors.Is(err, ErrHTTPSRequired) || errors.Is(err, ErrForbidden) {
		t.Fatalf("GET http:// with RequireHTTPS = %v, want ErrHTTPSRequired only", err)
	}
}

func TestDialerDirect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	_, err = Policy{}.Dialer(0).Dial("tcp", ln.Addr().String())
	var fe *ForbiddenError
	if !errors.As(err, &fe) {
		t.Fatalf("Dial to %s = %v, want a *ForbiddenError", ln.Addr(), err)
	}

	c, err := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}.Dialer(0).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("Dial with 127.0.0.1/32 allowed = %v", err)
	}
	defer c.Close()
	// Connections are accepted in order: if the refused dial had connected, it would come first.
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if first.RemoteAddr().String() != c.LocalAddr().String() {
		t.Fatalf("first accepted connection is from %s, not the allowed dial from %s: the refused dial connected", first.RemoteAddr(), c.LocalAddr())
	}
}

func TestControlFailsClosed(t *testing.T) {
	for _, addr := range []string{"localhost:80", "", "/run/x.sock", "127.0.0.1"} {
		if err := (Policy{}).Control("tcp", addr, nil); !errors.Is(err, ErrForbidden) {
			t.Errorf("Control(%q) = %v, want a refusal", addr, err)
		}
	}
	if err := (Policy{}).Control("tcp4", "8.8.8.8:443", nil); err != nil {
		t.Errorf("Control on a public address = %v, want nil", err)
	}
}

func TestTransportSettings(t *testing.T) {
	tr := Policy{}.Transport()
	if tr.Proxy != nil {
		t.Error("Transport.Proxy is set; environment proxies must not be used")
	}
	if tr.DialContext == nil || tr.TLSHandshakeTimeout == 0 || tr.IdleConnTimeout == 0 {
		t.Errorf("Transport lacks its dialer or timeouts: %+v", tr)
	}
	// With RequireHTTPS the Proxy hook only refuses; it never picks a proxy.
	tr = Policy{RequireHTTPS: true}.Transport()
	req := httptest.NewRequest(http.MethodPost, "https://hooks.example.com/", nil)
	if u, err := tr.Proxy(req); u != nil || err != nil {
		t.Errorf("Proxy(https) = %v, %v; want nil, nil", u, err)
	}
	req = httptest.NewRequest(http.MethodPost, "http://hooks.example.com/", nil)
	if u, err := tr.Proxy(req); u != nil || !errors.Is(err, ErrHTTPSRequired) {
		t.Errorf("Proxy(http) = %v, %v; want nil, ErrHTTPSRequired", u, err)
	}
}
