package netguard

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Timeouts and pool sizes of the Transport.
const (
	// DialTimeout bounds connecting, DNS lookup included.
	DialTimeout = 10 * time.Second
	// TLSHandshakeTimeout bounds the TLS handshake.
	TLSHandshakeTimeout = 10 * time.Second
	// IdleConnTimeout closes a pooled connection left unused this long.
	IdleConnTimeout = 90 * time.Second
	// MaxIdleConnsPerHost keeps enough warm connections for a busy endpoint.
	MaxIdleConnsPerHost = 64
)

// ErrHTTPSRequired is returned by a Transport of a Policy with RequireHTTPS for a request
// that is not https (including a redirect to plain http).
var ErrHTTPSRequired = errors.New("https required")

// Control is a net.Dialer Control hook: it refuses, before connecting, an address that
// Check refuses. The error is a *ForbiddenError (wrapping ErrForbidden), or wraps
// ErrForbidden alone if address is not an IP and port. Use it when building a dialer
// other than Dialer's.
func (p Policy) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check %s address %q: %v", ErrForbidden, network, address, err)
	}
	return p.Check(ap.Addr())
}

// Dialer returns a net.Dialer whose Control hook refuses forbidden addresses: it runs on
// each address a name resolves to, after the lookup and before connecting, so a name
// that resolves or rebinds to a forbidden address is refused too. The error wraps
// ErrForbidden (errors.As finds a *ForbiddenError). A zero timeout means only the
// context bounds the dial.
func (p Policy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Control:   p.Control,
	}
}

// Transport returns an http.Transport that dials with Dialer(DialTimeout), never uses a
// proxy (environment variables such as HTTPS_PROXY are ignored), speaks HTTP/2 when the
// server offers it, and pools MaxIdleConnsPerHost connections per host. It sets no
// response deadline: bound each request with its context. With RequireHTTPS, a request
// that is not https fails with ErrHTTPSRequired before any connection; that check is
// done by the Proxy hook, which never returns a proxy.
func (p Policy) Transport() *http.Transport {
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           p.Dialer(DialTimeout).DialContext,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   TLSHandshakeTimeout,
		IdleConnTimeout:       IdleConnTimeout,
		MaxIdleConns:          8 * MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:   MaxIdleConnsPerHost,
		ExpectContinueTimeout: time.Second,
	}
	if p.RequireHTTPS {
		t.Proxy = refusePlainHTTP
	}
	return t
}

// refusePlainHTTP is a Transport Proxy hook that selects no proxy and fails requests
// whose scheme is not https.
func refusePlainHTTP(req *http.Request) (*url.URL, error) {
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("%w: refusing %s request to %s", ErrHTTPSRequired, req.URL.Scheme, req.URL.Host)
	}
	return nil, nil
}
