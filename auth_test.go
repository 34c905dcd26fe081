package herald

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/netguard"
)

// selfSigned is a PEM certificate and key for CN herald.
func selfSigned(t testing.TB) (certPEM, keyPEM string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "herald"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
}

func TestEndpointAuthValidate(t *testing.T) {
	cert, key := selfSigned(t)
	_, otherKey := selfSigned(t)
	oauth := func(f func(*OAuth2Auth)) EndpointAuth {
		o := OAuth2Auth{TokenURL: "https://auth.example.com/token", ClientID: "herald", ClientSecret: "s3cret", Scopes: []string{"hooks:write"}}
		f(&o)
		return EndpointAuth{OAuth2: &o}
	}
	for _, c := range []struct {
		name string
		a    EndpointAuth
		err  string
	}{
		{"none", EndpointAuth{}, ""},
		{"basic", EndpointAuth{Basic: &BasicAuth{Username: "u", Password: "p w:ö"}}, ""},
		{"basic colon in user", EndpointAuth{Basic: &BasicAuth{Username: "u:x", Password: "p"}}, "auth.basic.username"},
		{"basic empty password", EndpointAuth{Basic: &BasicAuth{Username: "u"}}, "auth.basic.password"},
		{"basic control", EndpointAuth{Basic: &BasicAuth{Username: "u", Password: "a\r\nX-Evil: 1"}}, "auth.basic.password"},
		{"oauth2", oauth(func(*OAuth2Auth) {}), ""},
		{"oauth2 ftp", oauth(func(o *OAuth2Auth) { o.TokenURL = "ftp://auth.example.com" }), "auth.oauth2.token_url"},
		{"oauth2 user in URL", oauth(func(o *OAuth2Auth) { o.TokenURL = "https://a:b@auth.example.com" }), "auth.oauth2.token_url"},
		{"oauth2 relative", oauth(func(o *OAuth2Auth) { o.TokenURL = "/token" }), "auth.oauth2.token_url"},
		{"oauth2 no secret", oauth(func(o *OAuth2Auth) { o.ClientSecret = "" }), "auth.oauth2.client_secret"},
		{"oauth2 id non-ASCII", oauth(func(o *OAuth2Auth) { o.ClientID = "hérald" }), "auth.oauth2.client_id"},
		{"oauth2 scope space", oauth(func(o *OAuth2Auth) { o.Scopes = []string{"a b"} }), "auth.oauth2.scopes"},
		{"oauth2 scope quote", oauth(func(o *OAuth2Auth) { o.Scopes = []string{`a"`} }), "auth.oauth2.scopes"},
		{"oauth2 too many scopes", oauth(func(o *OAuth2Auth) { o.Scopes = make([]string, MaxScopes+1) }), "auth.oauth2.scopes"},
		{"both header kinds", EndpointAuth{Basic: &BasicAuth{Username: "u", Password: "p"}, OAuth2: oauth(func(*OAuth2Auth) {}).OAuth2}, "not both"},
		{"client cert", EndpointAuth{ClientCert: &ClientCert{CertPEM: cert, KeyPEM: Credential(key)}}, ""},
		{"client cert + basic", EndpointAuth{Basic: &BasicAuth{Username: "u", Password: "p"}, ClientCert: &ClientCert{CertPEM: cert, KeyPEM: Credential(key)}}, ""},
		{"client cert, other key", EndpointAuth{ClientCert: &ClientCert{CertPEM: cert, KeyPEM: Credential(otherKey)}}, "auth.client_cert"},
		{"client cert not PEM", EndpointAuth{ClientCert: &ClientCert{CertPEM: "x", KeyPEM: "y"}}, "auth.client_cert"},
		{"client cert too large", EndpointAuth{ClientCert: &ClientCert{CertPEM: strings.Repeat("x", MaxCertPEM+1), KeyPEM: Credential(key)}}, "at most"},
	} {
		err := c.a.Validate()
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v; want error containing %q", c.name, err, c.err)
		}
	}
}

// The token URL passes the worker's address policy, as the endpoint's URL does.
func TestValidatePutChecksTokenURL(t *testing.T) {
	req := PutEndpointRequest{ID: "ep", URL: "https://example.com/hook", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		Auth: &EndpointAuth{OAuth2: &OAuth2Auth{TokenURL: "http://127.0.0.1:8080/token", ClientID: "herald", ClientSecret: "s"}}}
	if err := ValidatePut(req, false, netguard.Policy{}); err == nil || !strings.Contains(err.Error(), "auth.oauth2.token_url") {
		t.Fatalf("token URL on loopback: %v; want refused", err)
	}
	allow := netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	if err := ValidatePut(req, false, allow); err != nil {
		t.Fatalf("token URL on loopback, loopback allowed: %v", err)
	}
}

func TestEndpointAuthMerge(t *testing.T) {
	cert, key := selfSigned(t)
	a := EndpointAuth{Basic: &BasicAuth{Username: "u", Password: "p"}}
	a = a.Merge(EndpointAuth{ClientCert: &ClientCert{CertPEM: cert, KeyPEM: Credential(key)}})
	if a.Basic == nil || a.ClientCert == nil {
		t.Fatalf("a client certificate added: %+v; want basic kept", a)
	}
	a = a.Merge(EndpointAuth{OAuth2: &OAuth2Auth{TokenURL: "https://a.example/t", ClientID: "c", ClientSecret: "s"}})
	if a.Basic != nil || a.OAuth2 == nil || a.ClientCert == nil {
		t.Fatalf("oauth2 given: %+v; want basic replaced, certificate kept", a)
	}
}

// No view, log line or %v of an endpoint shows a secret of its authentication.
func TestAuthSecretsNeverShown(t *testing.T) {
	cert, key := selfSigned(t)
	ep := Endpoint{ID: "ep", Auth: EndpointAuth{
		OAuth2:     &OAuth2Auth{TokenURL: "https://auth.example.com/token?tenant=x", ClientID: "herald", ClientSecret: "client-s3cret"},
		ClientCert: &ClientCert{CertPEM: cert, KeyPEM: Credential(key)},
	}}
	v := ep.Auth.View()
	b, _ := json.Marshal(EndpointState{ID: ep.ID, Auth: v})
	var sb strings.Builder
	slog.New(slog.NewTextHandler(&sb, nil)).Info("x", "auth", ep.Auth.OAuth2.ClientSecret, "key", ep.Auth.ClientCert.KeyPEM)
	for _, shown := range []string{string(b), fmt.Sprintf("%v %+v %#v", ep, *ep.Auth.OAuth2, *ep.Auth.ClientCert), sb.String()} {
		if strings.Contains(shown, "client-s3cret") || strings.Contains(shown, "PRIVATE KEY") {
			t.Fatalf("a secret is shown: %s", shown)
		}
	}
	if v.Scheme != "oauth2" || !v.SecretSet || !v.ClientCert || v.TokenURL != "https://auth.example.com/token" || v.Kind() != "oauth2 client credentials + client certificate" {
		t.Fatalf("view %+v, kind %q", v, v.Kind())
	}
	if (*AuthView)(nil).Kind() != "none" || (EndpointAuth{}).View() != nil {
		t.Fatal("no authentication: want no view, kind none")
	}
}

// ParseBasicAuth reads what --auth-basic gives: whatever the input, a result it accepts
// joins back to the input, has no ':' in its username and is valid.
func FuzzParseBasicAuth(f *testing.F) {
	for _, s := range []string{"u:p", "u:p:q", ":p", "u:", "nocolon", "ü:\x00", "a\r\n:b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBasicAuth(s)
		if err != nil {
			return
		}
		if b.Username+":"+string(b.Password) != s || strings.Contains(b.Username, ":") {
			t.Fatalf("%q read as %q / %q", s, b.Username, b.Password)
		}
		if err := (EndpointAuth{Basic: &b}).Validate(); err != nil {
			t.Fatalf("%q accepted but invalid: %v", s, err)
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("%q accepted with a control character", s)
			}
		}
	})
}
