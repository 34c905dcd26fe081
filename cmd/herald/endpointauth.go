package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// authHelp explains herald endpoint put's authentication flags.
const authHelp = `Authentication to the receiver, besides the signature: --auth-basic USER:PASS sends HTTP
basic auth; --oauth2-token-url, --oauth2-client-id and --oauth2-client-secret (with
--oauth2-scopes if the server wants some) make each worker fetch an OAuth2 client
credentials token, keep it until it expires and send it as a bearer token (a 401 fetches a
new one, once); --client-cert FILE --client-key FILE present a TLS client certificate (PEM),
alone or with either. Each given replaces that part; basic and OAuth2 replace each other.
--clear-auth removes it all. The password, client secret and key are encrypted like the
signing secret and never shown again: herald endpoint get shows only the kind.`

// authFlags are herald endpoint put's authentication flags.
type authFlags struct {
	basic                            string
	tokenURL, clientID, clientSecret string
	scopes                           []string
	certFile, keyFile                string
	clear                            bool
}

func (f *authFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.basic, "auth-basic", "", "HTTP basic auth to the receiver, as USER:PASS")
	fs.StringVar(&f.tokenURL, "oauth2-token-url", "", "OAuth2 client credentials: the token endpoint (http or https; the SSRF policy applies)")
	fs.StringVar(&f.clientID, "oauth2-client-id", "", "OAuth2 client credentials: the client id")
	fs.StringVar(&f.clientSecret, "oauth2-client-secret", "", "OAuth2 client credentials: the client secret")
	fs.StringSliceVar(&f.scopes, "oauth2-scopes", nil, "OAuth2 client credentials: scopes to ask for (comma-separated)")
	fs.StringVar(&f.certFile, "client-cert", "", "TLS client certificate to present to the receiver (PEM file, leaf first)")
	fs.StringVar(&f.keyFile, "client-key", "", "the client certificate's private key (PEM file)")
	fs.BoolVar(&f.clear, "clear-auth", false, "remove the endpoint's authentication (basic, OAuth2, client certificate) first")
}

// change is the authentication change the flags given on fs ask for: nil when none.
func (f *authFlags) change(fs *pflag.FlagSet) (*herald.EndpointAuth, error) {
	var a herald.EndpointAuth
	if fs.Changed("auth-basic") {
		b, err := herald.ParseBasicAuth(f.basic)
		if err != nil {
			return nil, fmt.Errorf("%w: --auth-basic: %v", starter.ErrInvalid, err)
		}
		a.Basic = &b
	}
	oauth := []string{"oauth2-token-url", "oauth2-client-id", "oauth2-client-secret", "oauth2-scopes"}
	for _, n := range oauth {
		if fs.Changed(n) {
			a.OAuth2 = &herald.OAuth2Auth{TokenURL: f.tokenURL, ClientID: f.clientID, ClientSecret: herald.Credential(f.clientSecret), Scopes: f.scopes}
			break
		}
	}
	if a.OAuth2 != nil && (f.tokenURL == "" || f.clientID == "" || f.clientSecret == "") {
		return nil, fmt.Errorf("%w: OAuth2 needs --oauth2-token-url, --oauth2-client-id and --oauth2-client-secret together", errUsage)
	}
	if a.Basic != nil && a.OAuth2 != nil {
		return nil, fmt.Errorf("%w: give --auth-basic or the --oauth2-* flags, not both", errUsage)
	}
	if (f.certFile == "") != (f.keyFile == "") {
		return nil, fmt.Errorf("%w: give both --client-cert and --client-key, or neither", errUsage)
	}
	if f.certFile != "" {
		cert, err := os.ReadFile(f.certFile)
		if err != nil {
			return nil, fmt.Errorf("%w: --client-cert: %v", errUsage, err)
		}
		key, err := os.ReadFile(f.keyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: --client-key: %v", errUsage, err)
		}
		a.ClientCert = &herald.ClientCert{CertPEM: string(cert), KeyPEM: herald.Credential(key)}
	}
	if a.IsZero() {
		return nil, nil
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", starter.ErrInvalid, err)
	}
	return &a, nil
}

// authText describes an endpoint's authentication for herald endpoint get: its kind and
// what is not secret.
func authText(v *herald.AuthView) string {
	if v == nil {
		return "none"
	}
	s := v.Kind()
	switch v.Scheme {
	case "basic":
		s += fmt.Sprintf(" (user %s, password set)", v.Username)
	case "oauth2":
		s += fmt.Sprintf(" (client %s at %s, secret set)", v.ClientID, v.TokenURL)
	}
	return s
}
