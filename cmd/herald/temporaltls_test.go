package main

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/heraldhq/herald/internal/testpki"
)

// tlsFrontend is a Temporal frontend stand-in behind mTLS: it answers the call a client makes
// when it connects (GetSystemInfo) and records who called and with what API key.
type tlsFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu       sync.Mutex
	clientCN []string
	auth     []string
}

func (f *tlsFrontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
			f.clientCN = append(f.clientCN, info.State.PeerCertificates[0].Subject.CommonName)
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	f.auth = append(f.auth, md.Get("authorization")...)
	return &workflowservice.GetSystemInfoResponse{}, nil
}

// writeFile writes b to a file named name in dir and returns its path.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTemporalTLS: with --tls-ca-path, --tls-cert-path, --tls-key-path and --api-key, Herald
// reaches a frontend that requires a client certificate, checks the frontend's certificate
// against the given authority, and sends the key as a bearer token; without the client
// certificate, or trusting another authority, the connection is refused with the address
// in the error.
func TestTemporalTLS(t *testing.T) {
	pki := testpki.NewPKI(t)
	srvCert, srvKey := pki.IssueServer(t, "127.0.0.1", "temporal.test")
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	front := &tlsFrontend{}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair}, ClientCAs: pki.Pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})))
	workflowservice.RegisterWorkflowServiceServer(gs, front)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	dir := t.TempDir()
	caPath := writeFile(t, dir, "ca.pem", pki.CAPEM)
	cert, key := pki.Issue(t, "herald-worker")
	certPath, keyPath := writeFile(t, dir, "herald.crt", cert), writeFile(t, dir, "herald.key", key)
	otherCA := writeFile(t, dir, "other.pem", testpki.NewPKI(t).CAPEM)

	dial := func(opts temporalTLS) error {
		g := &globals{address: lis.Addr().String(), namespace: "default", tls: opts}
		var err error
		if g.connTLS, g.creds, err = g.tls.connection(); err != nil {
			return err
		}
		c, err := g.dial(context.Background(), nil)
		if err == nil {
			c.Close()
		}
		return err
	}

	if err := dial(temporalTLS{caFile: caPath, certFile: certPath, keyFile: keyPath, apiKey: "hk_test.key-1"}); err != nil {
		t.Fatalf("mTLS with an API key: %v", err)
	}
	front.mu.Lock()
	if len(front.clientCN) == 0 || front.clientCN[0] != "herald-worker" {
		t.Errorf("frontend saw client certificates %q, want herald-worker", front.clientCN)
	}
	if len(front.auth) == 0 || front.auth[0] != "Bearer hk_test.key-1" {
		t.Errorf("frontend saw authorization %q, want Bearer hk_test.key-1", front.auth)
	}
	front.mu.Unlock()

	// The server name checked can differ from the address's host.
	if err := dial(temporalTLS{caFile: caPath, certFile: certPath, keyFile: keyPath, serverName: "temporal.test"}); err != nil {
		t.Fatalf("--tls-server-name in the certificate: %v", err)
	}
	for name, opts := range map[string]temporalTLS{
		"no client certificate":    {caFile: caPath},
		"another authority":        {caFile: otherCA, certFile: certPath, keyFile: keyPath},
		"a name not in the server": {caFile: caPath, certFile: certPath, keyFile: keyPath, serverName: "other.test"},
	} {
		err := dial(opts)
		if err == nil {
			t.Errorf("%s: connected", name)
			continue
		}
		if !strings.Contains(err.Error(), lis.Addr().String()) {
			t.Errorf("%s: the error does not name the address: %v", name, err)
		}
	}
}

// TestTemporalTLSFlagsRefused: flags that cannot make a connection are usage errors that
// name the flag, before anything is dialled.
func TestTemporalTLSFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	notPEM := writeFile(t, dir, "not.pem", []byte("hello"))
	for _, c := range []struct {
		opts temporalTLS
		want string
	}{
		{temporalTLS{certFile: notPEM}, "go together"},
		{temporalTLS{keyFile: notPEM}, "go together"},
		{temporalTLS{certFile: notPEM, keyFile: notPEM}, "--tls-cert-path"},
		{temporalTLS{caFile: notPEM}, "holds no PEM certificate"},
		{temporalTLS{caFile: filepath.Join(dir, "missing.pem")}, "--tls-ca-path"},
		{temporalTLS{serverName: "bad name"}, "--tls-server-name"},
		{temporalTLS{serverName: "-a.example.com"}, "hyphen"},
		{temporalTLS{apiKey: "key with space"}, "--api-key"},
		{temporalTLS{apiKey: "key\n"}, "line break"},
		{temporalTLS{apiKey: strings.Repeat("k", maxAPIKey+1)}, "over"},
	} {
		_, _, err := c.opts.connection()
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want a usage error containing %q", c.opts, err, c.want)
		}
	}
	if cfg, creds, err := (&temporalTLS{}).connection(); cfg != nil || creds != nil || err != nil {
		t.Errorf("no TLS flag: %v %v %v, want plain gRPC", cfg, creds, err)
	}
}

// FuzzTemporalTLSNames: a server name or API key that passes validation is what its grammar
// says — a DNS name of letters, digits, hyphens and dots; visible ASCII — so it reaches the
// TLS handshake and the authorization header unchanged.
func FuzzTemporalTLSNames(f *testing.F) {
	for _, s := range []string{"temporal.example.com", "a", "-a", "a..b", "hk_1.x-y", "k y", "é", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if validateServerName(s) == nil && s != "" {
			if len(s) > 253 || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
				t.Fatalf("server name %q accepted", s)
			}
			for _, c := range s {
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
					t.Fatalf("server name %q accepted with %q", s, c)
				}
			}
		}
		if validateAPIKey(s) == nil {
			if len(s) > maxAPIKey || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' }) {
				t.Fatalf("API key %q accepted", s)
			}
		}
	})
}
