package herald

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// Credential is a secret an endpoint authenticates to its receiver with: a password, an
// OAuth2 client secret, a private key. Like the signing secret it travels only inside
// Temporal payloads, which the codec encrypts, and it is never shown: String, GoString and
// LogValue give a placeholder, and the views of an endpoint (EndpointState) only say
// that it is set.
type Credential string

// String returns a placeholder, never the credential.
func (c Credential) String() string {
	if c == "" {
		return ""
	}
	return RedactedValue
}

// GoString returns the same placeholder, so %#v does not reveal the credential either.
func (c Credential) GoString() string { return fmt.Sprintf("herald.Credential(%q)", c.String()) }

// LogValue implements slog.LogValuer with the placeholder.
func (c Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }

// EndpointAuth is how Herald authenticates to an endpoint's receiver, besides the
// signature every attempt carries: HTTP basic auth or an OAuth2 client-credentials token
// in the Authorization header (one or the other), and a TLS client certificate (with
// either, or alone). The zero value authenticates with nothing.
type EndpointAuth struct {
	Basic      *BasicAuth  `json:"basic,omitempty"`
	OAuth2     *OAuth2Auth `json:"oauth2,omitempty"`
	ClientCert *ClientCert `json:"client_cert,omitempty"`
}

// BasicAuth is HTTP basic authentication (RFC 7617).
type BasicAuth struct {
	Username string     `json:"username"`
	Password Credential `json:"password"`
}

// OAuth2Auth is the OAuth2 client credentials grant (RFC 6749 §4.4): each worker fetches
// a token from TokenURL, keeps it until it expires and sends it as a bearer token; a 401
// from the receiver fetches a new one and sends the attempt once more.
type OAuth2Auth struct {
	// TokenURL is the authorization server's token endpoint; the worker's SSRF policy
	// applies to it as to endpoint URLs.
	TokenURL     string     `json:"token_url"`
	ClientID     string     `json:"client_id"`
	ClientSecret Credential `json:"client_secret"`
	// Scopes are asked for with the token, if any.
	Scopes []string `json:"scopes,omitempty"`
}

// ClientCert is a TLS client certificate (mutual TLS): a PEM certificate chain, leaf
// first, and its PEM private key.
type ClientCert struct {
	CertPEM string     `json:"cert_pem"`
	KeyPEM  Credential `json:"key_pem"`
}

// Bounds of an endpoint's authentication settings.
const (
	// MaxAuthField bounds a username, a client id and a scope.
	MaxAuthField = 256
	// MaxAuthSecret bounds a password and a client secret.
	MaxAuthSecret = 1024
	// MaxScopes is how many OAuth2 scopes an endpoint may ask for.
	MaxScopes = 20
	// MaxCertPEM bounds a client certificate chain, and its key, in PEM.
	MaxCertPEM = 16 << 10
)

// IsZero reports whether a authenticates with nothing.
func (a EndpointAuth) IsZero() bool { return a.Basic == nil && a.OAuth2 == nil && a.ClientCert == nil }

// Merge returns a with the parts n gives replaced: basic auth and OAuth2 share the
// Authorization header, so giving one removes the other.
func (a EndpointAuth) Merge(n EndpointAuth) EndpointAuth {
	if n.Basic != nil {
		a.Basic, a.OAuth2 = n.Basic, nil
	}
	if n.OAuth2 != nil {
		a.OAuth2, a.Basic = n.OAuth2, nil
	}
	if n.ClientCert != nil {
		a.ClientCert = n.ClientCert
	}
	return a
}

// Validate checks each part a gives: basic auth's username and password, OAuth2's token
// URL (its form; the worker's SSRF policy checks its address, ValidatePut), client id,
// secret and scopes, and that the client certificate and key are PEM that go together.
// Errors name JSON fields.
func (a EndpointAuth) Validate() error {
	if a.Basic != nil && a.OAuth2 != nil {
		return errors.New("auth: give basic or oauth2, not both (they share the Authorization header)")
	}
	if b := a.Basic; b != nil {
		if b.Username == "" || len(b.Username) > MaxAuthField || strings.Contains(b.Username, ":") || !printable(b.Username) {
			return fmt.Errorf("auth.basic.username: give 1 to %d printable characters without ':'", MaxAuthField)
		}
		if b.Password == "" || len(b.Password) > MaxAuthSecret || !printable(string(b.Password)) {
			return fmt.Errorf("auth.basic.password: give 1 to %d printable characters", MaxAuthSecret)
		}
	}
	if o := a.OAuth2; o != nil {
		if err := checkTokenURL(o.TokenURL); err != nil {
			return err
		}
		if o.ClientID == "" || len(o.ClientID) > MaxAuthField || !vschar(o.ClientID) {
			return fmt.Errorf("auth.oauth2.client_id: give 1 to %d printable ASCII characters", MaxAuthField)
		}
		if o.ClientSecret == "" || len(o.ClientSecret) > MaxAuthSecret || !vschar(string(o.ClientSecret)) {
			return fmt.Errorf("auth.oauth2.client_secret: give 1 to %d printable ASCII characters", MaxAuthSecret)
		}
		if len(o.Scopes) > MaxScopes {
			return fmt.Errorf("auth.oauth2.scopes: %d scopes; the limit is %d", len(o.Scopes), MaxScopes)
		}
		for _, s := range o.Scopes {
			if !scopeToken(s) {
				return fmt.Errorf("auth.oauth2.scopes: %q is not a scope (1 to %d printable ASCII characters, no space, '\"' or '\\')", s, MaxAuthField)
			}
		}
	}
	if c := a.ClientCert; c != nil {
		if len(c.CertPEM) > MaxCertPEM || len(c.KeyPEM) > MaxCertPEM {
			return fmt.Errorf("auth.client_cert: the certificate and the key are at most %d bytes each", MaxCertPEM)
		}
		if _, err := tls.X509KeyPair([]byte(c.CertPEM), []byte(c.KeyPEM)); err != nil {
			return fmt.Errorf("auth.client_cert: give a PEM certificate and its PEM private key: %v", err)
		}
	}
	return nil
}

// checkTokenURL checks the form of an OAuth2 token URL: an absolute http or https URL
// without user information or fragment.
func checkTokenURL(raw string) error {
	u, err := url.Parse(raw)
	if raw == "" || len(raw) > MaxURLBytes || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || u.Fragment != "" || !vschar(raw) {
		return fmt.Errorf("auth.oauth2.token_url: give an absolute http(s) URL of at most %d bytes, without user or fragment", MaxURLBytes)
	}
	return nil
}

// printable reports whether s is UTF-8 without control characters.
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// vschar reports whether s is printable ASCII, space included (RFC 6749 VSCHAR).
func vschar(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// scopeToken reports whether s is an RFC 6749 scope-token: %x21 / %x23-5B / %x5D-7E.
func scopeToken(s string) bool {
	if s == "" || len(s) > MaxAuthField {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// ParseBasicAuth reads basic auth given as "USER:PASS" (the first ':' ends the username)
// and checks it (EndpointAuth.Validate).
func ParseBasicAuth(s string) (BasicAuth, error) {
	user, pass, ok := strings.Cut(s, ":")
	if !ok {
		return BasicAuth{}, errors.New(`basic auth: write it as USER:PASS, e.g. "herald:s3cret"`)
	}
	b := BasicAuth{Username: user, Password: Credential(pass)}
	if err := (EndpointAuth{Basic: &b}).Validate(); err != nil {
		return BasicAuth{}, err
	}
	return b, nil
}

// AuthView is what an endpoint's state shows of its authentication: its kind and the
// names that are not secret; of each secret, only that it is set.
type AuthView struct {
	// Scheme is "basic", "oauth2", or empty (no Authorization header).
	Scheme   string `json:"scheme,omitempty"`
	Username string `json:"username,omitempty"`
	// TokenURL is the OAuth2 token URL, without its query.
	TokenURL string   `json:"token_url,omitempty"`
	ClientID string   `json:"client_id,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	// SecretSet says the password or the client secret is set (it is never shown).
	SecretSet bool `json:"secret_set,omitempty"`
	// ClientCert says a TLS client certificate is set (its key is never shown).
	ClientCert bool `json:"client_cert,omitempty"`
}

// View is what a shows; nil when it authenticates with nothing.
func (a EndpointAuth) View() *AuthView {
	if a.IsZero() {
		return nil
	}
	v := &AuthView{ClientCert: a.ClientCert != nil}
	if b := a.Basic; b != nil {
		v.Scheme, v.Username, v.SecretSet = "basic", b.Username, b.Password != ""
	}
	if o := a.OAuth2; o != nil {
		v.Scheme, v.ClientID, v.Scopes, v.SecretSet = "oauth2", o.ClientID, o.Scopes, o.ClientSecret != ""
		if u, err := url.Parse(o.TokenURL); err == nil {
			u.RawQuery, u.Fragment, u.User = "", "", nil
			v.TokenURL = u.String()
		}
	}
	return v
}

// Kind names the authentication in a few words, for the dashboard and the CLI: "basic",
// "oauth2 client credentials", "client certificate", or both kinds joined by " + ";
// "none" when there is none.
func (v *AuthView) Kind() string {
	if v == nil {
		return "none"
	}
	var parts []string
	switch v.Scheme {
	case "basic":
		parts = append(parts, "basic")
	case "oauth2":
		parts = append(parts, "oauth2 client credentials")
	}
	if v.ClientCert {
		parts = append(parts, "client certificate")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " + ")
}
