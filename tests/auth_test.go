package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// clientCertPEM makes a CA and a client certificate for CN herald it signed.
func clientCertPEM(t *testing.T) (ca *x509.CertPool, certPEM, keyPEM string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, key := newKey(), newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "herald"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	ca = x509.NewCertPool()
	ca.AddCert(caCert)
	return ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
}

// Endpoints that authenticate their callers get Herald's events through the API, the
// workflows and a worker: basic auth, an OAuth2 token from a token server on loopback, a
// TLS client certificate. The API shows the kind of each, never a secret, and the
// attempt's record shows the Authorization header redacted.
func TestEndpointAuthEndToEnd(t *testing.T) {
	ca, certPEM, keyPEM := clientCertPEM(t)
	tlsRcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "herald" {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	tlsRcv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca}
	tlsRcv.StartTLS()
	defer tlsRcv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(tlsRcv.Certificate())
	s := startTracedStack(t, roots)

	var issued atomic.Int64
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if r.FormValue("grant_type") != "client_credentials" || id != "herald" || secret != "client-s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":3600}`, issued.Add(1))
	}))
	defer tokens.Close()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/basic":
			if u, p, ok := r.BasicAuth(); !ok || u != "herald" || p != "basic-s3cret" {
				w.WriteHeader(http.StatusUnauthorized)
			}
		case "/oauth2":
			if r.Header.Get("Authorization") != "Bearer tok-1" {
				w.WriteHeader(http.StatusUnauthorized)
			}
		}
	}))
	defer rcv.Close()

	for _, c := range []struct {
		id, url string
		auth    map[string]any
		kind    string
	}{
		{"auth-basic", rcv.URL + "/basic", map[string]any{"basic": map[string]any{"username": "herald", "password": "basic-s3cret"}}, "basic"},
		{"auth-oauth2", rcv.URL + "/oauth2", map[string]any{"oauth2": map[string]any{"token_url": tokens.URL + "/token", "client_id": "herald", "client_secret": "client-s3cret"}}, "oauth2 client credentials"},
		{"auth-mtls", tlsRcv.URL, map[string]any{"client_cert": map[string]any{"cert_pem": certPEM, "key_pem": keyPEM}}, "client certificate"},
	} {
		body := map[string]any{"url": c.url, "auth": c.auth, "attempts": 1}
		if code, out := s.call(t, "PUT", "/v1/endpoints/"+c.id, body, nil); code != http.StatusCreated {
			t.Fatalf("%s: put: %d %v", c.id, code, out)
		}
		ev := "evt_" + c.id
		if code, out := s.call(t, "POST", "/v1/events", map[string]any{"endpoint_id": c.id, "id": ev, "type": "t", "data": map[string]any{}}, nil); code != http.StatusAccepted {
			t.Fatalf("%s: send: %d %v", c.id, code, out)
		}
		st := waitFor(t, s.Starter, ev, herald.StateDelivered)
		if c.kind != "client certificate" {
			var auth string
			for _, h := range st.Attempts[0].Result.HTTPExchange.RequestHeaders {
				if h.Name == "Authorization" {
					auth = h.Value
				}
			}
			if auth != herald.RedactedValue {
				t.Errorf("%s: the attempt recorded Authorization %q, want %s", c.id, auth, herald.RedactedValue)
			}
		}
		code, out := s.call(t, "GET", "/v1/endpoints/"+c.id, nil, nil)
		raw, _ := json.Marshal(out)
		for _, secret := range []string{"basic-s3cret", "client-s3cret", "PRIVATE KEY"} {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("%s: GET shows a secret: %s", c.id, raw)
			}
		}
		auth, _ := out["auth"].(map[string]any)
		var view herald.AuthView
		b, _ := json.Marshal(auth)
		_ = json.Unmarshal(b, &view)
		if code != http.StatusOK || view.Kind() != c.kind {
			t.Fatalf("%s: GET: %d, auth %v; want kind %q", c.id, code, auth, c.kind)
		}
		_, page := s.call(t, "GET", "/v1/events/"+ev, nil, nil)
		if raw, _ := json.Marshal(page); strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), "tok-1") {
			t.Fatalf("%s: the event's page shows a secret: %s", c.id, raw)
		}
	}
	if n := issued.Load(); n != 1 {
		t.Fatalf("%d tokens issued; want 1", n)
	}
	// A put without the password is refused; clear_auth removes it all.
	if code, out := s.call(t, "PUT", "/v1/endpoints/auth-basic", map[string]any{"auth": map[string]any{"basic": map[string]any{"username": "x"}}}, nil); code != http.StatusBadRequest {
		t.Fatalf("basic auth without password: %d %v; want 400", code, out)
	}
	if code, out := s.call(t, "PUT", "/v1/endpoints/auth-basic", map[string]any{"clear_auth": true}, nil); code != http.StatusOK || out["auth"] != nil {
		t.Fatalf("clear_auth: %d %v", code, out)
	}
	if _, out := s.call(t, "GET", "/v1/endpoints/auth-basic", nil, nil); out["auth"] != nil {
		t.Fatalf("after clear_auth, auth is %v", out["auth"])
	}
}
