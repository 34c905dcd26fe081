package activities

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/oauth2"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testpki"
	"github.com/heraldhq/herald/netguard"
)

var loopback = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

// deliverTo builds the request of an attempt to ep and delivers it with d.
func deliverTo(t *testing.T, d *HTTP, ep herald.Endpoint) herald.Result {
	t.Helper()
	ep.Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	req, err := newRequest(herald.Event{ID: "evt_1", Type: "t", Data: json.RawMessage(`{}`)}, ep, nil, time.Now(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return d.Deliver(context.Background(), req)
}

// recordedAuthorization is the Authorization header the attempt recorded.
func recordedAuthorization(res herald.Result) string {
	for _, h := range res.HTTPExchange.RequestHeaders {
		if h.Name == "Authorization" {
			return h.Value
		}
	}
	return ""
}

func TestBasicAuth(t *testing.T) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "herald" || p != "pa:ss wörd" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer rcv.Close()
	d := NewHTTP(loopback, HTTPOptions{})
	ep := herald.Endpoint{ID: "ep", URL: rcv.URL, Auth: herald.EndpointAuth{Basic: &herald.BasicAuth{Username: "herald", Password: "pa:ss wörd"}}}
	res := deliverTo(t, d, ep)
	if !res.Delivered() || recordedAuthorization(res) != herald.RedactedValue {
		t.Fatalf("basic auth: %+v; want delivered, Authorization recorded as redacted", res)
	}
	ep.Auth.Basic.Password = "wrong"
	if res := deliverTo(t, d, ep); res.HTTPExchange.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %+v; want the receiver's 401", res)
	}
}

// tokenServer is an OAuth2 token endpoint on loopback: it issues tok-1, tok-2, ... to
// client herald with secret s3cret, each valid for ttl.
type tokenServer struct {
	*httptest.Server
	issued atomic.Int64
	ttl    int
}

func newTokenServer(t *testing.T, ttl int) *tokenServer {
	ts := &tokenServer{ttl: ttl}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if r.FormValue("client_id") != "" {
			id, secret = r.FormValue("client_id"), r.FormValue("client_secret")
		}
		if r.Method != http.MethodPost || r.FormValue("grant_type") != "client_credentials" || id != "herald" || secret != "s3cret" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client","error_description":"no such client"}`)
			return
		}
		if r.FormValue("scope") != "hooks:write" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_scope"}`)
			return
		}
		n := ts.issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"bearer","expires_in":%d}`, n, ts.ttl)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// A token is fetched once and kept; a receiver that refuses it gets the attempt again with
// a new one, once; a token about to expire is not used.
func TestOAuth2ClientCredentials(t *testing.T) {
	ts := newTokenServer(t, 3600)
	var mu sync.Mutex
	accept := "Bearer tok-1"
	var seen []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != accept {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer rcv.Close()
	d := NewHTTP(loopback, HTTPOptions{})
	o := &herald.OAuth2Auth{TokenURL: ts.URL + "/token", ClientID: "herald", ClientSecret: "s3cret", Scopes: []string{"hooks:write"}}
	ep := herald.Endpoint{ID: "ep", URL: rcv.URL, Auth: herald.EndpointAuth{OAuth2: o}}
	for i := range 3 {
		if res := deliverTo(t, d, ep); !res.Delivered() || recordedAuthorization(res) != herald.RedactedValue {
			t.Fatalf("attempt %d: %+v", i+1, res)
		}
	}
	if n := ts.issued.Load(); n != 1 {
		t.Fatalf("3 attempts fetched %d tokens; want 1, kept", n)
	}
	// The receiver no longer takes tok-1 (revoked): one 401, a new token, delivered.
	mu.Lock()
	accept, seen = "Bearer tok-2", nil
	mu.Unlock()
	if res := deliverTo(t, d, ep); !res.Delivered() {
		t.Fatalf("after revocation: %+v; want delivered with a new token", res)
	}
	if n := ts.issued.Load(); n != 2 || len(seen) != 2 || seen[0] != "Bearer tok-1" || seen[1] != "Bearer tok-2" {
		t.Fatalf("after revocation: %d tokens issued, receiver saw %q; want tok-1 refused then tok-2", n, seen)
	}
	// A receiver that refuses every token: one retry with a new token, then the 401 stands.
	mu.Lock()
	accept, seen = "never", nil
	mu.Unlock()
	if res := deliverTo(t, d, ep); res.HTTPExchange.StatusCode != http.StatusUnauthorized || len(seen) != 2 {
		t.Fatalf("refused: %+v after %d requests; want the 401 after 2 requests", res, len(seen))
	}
	// A fresh token refused is not fetched again in the same attempt.
	mu.Lock()
	seen = nil
	mu.Unlock()
	ep.ID = "other" // no token kept for it
	if res := deliverTo(t, d, ep); res.HTTPExchange.StatusCode != http.StatusUnauthorized || len(seen) != 1 {
		t.Fatalf("fresh token refused: %+v after %d requests; want one request", res, len(seen))
	}

	// Tokens that expire within the early-expiry margin are fetched each time.
	short := newTokenServer(t, 5)
	ep = herald.Endpoint{ID: "short", URL: rcv.URL, Auth: herald.EndpointAuth{OAuth2: &herald.OAuth2Auth{TokenURL: short.URL, ClientID: "herald", ClientSecret: "s3cret", Scopes: []string{"hooks:write"}}}}
	deliverTo(t, d, ep)
	deliverTo(t, d, ep)
	if n := short.issued.Load(); n != 2 {
		t.Fatalf("expiring tokens: %d fetched for 2 attempts; want 2", n)
	}

	// A wrong secret: the token server's answer, without its body, and no request.
	mu.Lock()
	seen = nil
	mu.Unlock()
	ep = herald.Endpoint{ID: "bad", URL: rcv.URL, Auth: herald.EndpointAuth{OAuth2: &herald.OAuth2Auth{TokenURL: ts.URL, ClientID: "herald", ClientSecret: "nope"}}}
	res := deliverTo(t, d, ep)
	if res.Delivered() || !strings.Contains(res.Error, "oauth2 token: token server answered 401") || !strings.Contains(res.Error, "invalid_client") ||
		strings.Contains(res.Error, "no such client") || len(seen) != 0 {
		t.Fatalf("wrong secret: %+v, receiver saw %q", res, seen)
	}
}

// The token URL passes the SSRF guard: a worker that may not dial loopback fetches no token.
func TestOAuth2TokenURLGuarded(t *testing.T) {
	ts := newTokenServer(t, 3600)
	d := NewHTTP(netguard.Policy{}, HTTPOptions{})
	ep := herald.Endpoint{ID: "ep", URL: "https://example.test/hook", Auth: herald.EndpointAuth{OAuth2: &herald.OAuth2Auth{TokenURL: ts.URL, ClientID: "herald", ClientSecret: "s3cret"}}}
	res := deliverTo(t, d, ep)
	if res.Outcome != herald.OutcomeRefused || !strings.HasPrefix(res.Error, "oauth2 token: ") || ts.issued.Load() != 0 {
		t.Fatalf("token URL on loopback, loopback refused: %+v, %d tokens issued", res, ts.issued.Load())
	}
}

// A receiver that requires a client certificate takes the endpoint's, and refuses an
// endpoint without one even on the same host (no connection is shared between them).
func TestClientCertificate(t *testing.T) {
	pki := testpki.NewPKI(t)
	certPEM, keyPEM := pki.Issue(t, "herald")
	var cn atomic.Value
	rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn.Store(r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	rcv.TLS = newRequireClientCert(pki.Pool)
	rcv.StartTLS()
	defer rcv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(rcv.Certificate())
	d := NewHTTP(loopback, HTTPOptions{RootCAs: roots})
	ep := herald.Endpoint{ID: "ep", URL: rcv.URL, Auth: herald.EndpointAuth{ClientCert: &herald.ClientCert{CertPEM: string(certPEM), KeyPEM: herald.Credential(keyPEM)}}}
	if res := deliverTo(t, d, ep); !res.Delivered() || cn.Load() != "herald" {
		t.Fatalf("with the client certificate: %+v, receiver saw CN %v", res, cn.Load())
	}
	if res := deliverTo(t, d, herald.Endpoint{ID: "nocert", URL: rcv.URL}); res.Delivered() {
		t.Fatalf("another endpoint on the same host without a certificate: %+v; want refused by the receiver", res)
	}
	// A new certificate for the same endpoint is used at once.
	c2, k2 := pki.Issue(t, "herald-2")
	ep.Auth.ClientCert = &herald.ClientCert{CertPEM: string(c2), KeyPEM: herald.Credential(k2)}
	if res := deliverTo(t, d, ep); !res.Delivered() || cn.Load() != "herald-2" {
		t.Fatalf("with the new certificate: %+v, receiver saw CN %v", res, cn.Load())
	}
}

// newRequireClientCert is a receiver's TLS configuration that requires a client
// certificate issued by pool.
func newRequireClientCert(pool *x509.CertPool) *tls.Config {
	return &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
}

// Whatever a token server answers, a token checkToken accepts makes a valid Authorization
// header value.
func FuzzCheckToken(f *testing.F) {
	for _, s := range [][2]string{{"bearer", "abc.def-ghi_jkl~+/="}, {"", "x"}, {"mac", "x"}, {"Bearer", "a b"}, {"bearer", "a\r\nX: y"}, {"bearer", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, typ, access string) {
		tok := &oauth2.Token{TokenType: typ, AccessToken: access}
		if checkToken(tok) != nil {
			return
		}
		v := authorization(tok)
		if !httpguts.ValidHeaderFieldValue(v) || !strings.HasPrefix(v, "Bearer ") || strings.ContainsAny(v[len("Bearer "):], " \t") {
			t.Fatalf("accepted %q, %q: header value %q", typ, access, v)
		}
	})
}

// A token that is not a bearer token, or could not go in a header, is not sent.
func TestOAuth2OddTokenRefused(t *testing.T) {
	var hits atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer rcv.Close()
	for _, answer := range []string{`{"access_token":"x","token_type":"mac"}`, `{"access_token":"a\r\nX-Evil: 1","token_type":"bearer"}`, `{"access_token":"","token_type":"bearer"}`} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, answer)
		}))
		ep := herald.Endpoint{ID: "ep", URL: rcv.URL, Auth: herald.EndpointAuth{OAuth2: &herald.OAuth2Auth{TokenURL: ts.URL, ClientID: "c", ClientSecret: "s"}}}
		res := deliverTo(t, NewHTTP(loopback, HTTPOptions{}), ep)
		ts.Close()
		if res.Delivered() || !strings.HasPrefix(res.Error, "oauth2 token: ") || hits.Load() != 0 {
			t.Fatalf("token %s: %+v, %d requests to the receiver", answer, res, hits.Load())
		}
	}
}
