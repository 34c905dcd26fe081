package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
)

// temporalTLS is how Herald's commands connect to a Temporal frontend that wants TLS, a client
// certificate (mTLS) or an API key, as a self-hosted cluster behind TLS or Temporal Cloud
// does. The flags and environment variables have the names the temporal CLI gives them.
type temporalTLS struct {
	enabled    bool
	certFile   string
	keyFile    string
	caFile     string
	serverName string
	apiKey     string
}

// maxAPIKey is the longest API key accepted: Temporal Cloud's keys are JWTs of about 1 KB.
const maxAPIKey = 8192

func (t *temporalTLS) flags(pf *pflag.FlagSet) {
	pf.BoolVar(&t.enabled, "tls", envOr("TEMPORAL_TLS", "") == "true",
		"connect to Temporal over TLS, trusting the system's roots (env TEMPORAL_TLS=true; implied by the other --tls-* flags and by --api-key)")
	pf.StringVar(&t.certFile, "tls-cert-path", os.Getenv("TEMPORAL_TLS_CERT"),
		"client certificate (PEM) for Temporal's mTLS, with --tls-key-path (env TEMPORAL_TLS_CERT)")
	pf.StringVar(&t.keyFile, "tls-key-path", os.Getenv("TEMPORAL_TLS_KEY"),
		"private key (PEM) of --tls-cert-path (env TEMPORAL_TLS_KEY)")
	pf.StringVar(&t.caFile, "tls-ca-path", os.Getenv("TEMPORAL_TLS_CA"),
		"certificate authorities (PEM) to trust for Temporal's server certificate instead of the system's (env TEMPORAL_TLS_CA)")
	pf.StringVar(&t.serverName, "tls-server-name", os.Getenv("TEMPORAL_TLS_SERVER_NAME"),
		"name to check Temporal's server certificate against, when it is not --address's host (env TEMPORAL_TLS_SERVER_NAME)")
	// The key's default is not the environment's: --help would print it.
	pf.StringVar(&t.apiKey, "api-key", "",
		"API key sent to Temporal with every call, as for Temporal Cloud; implies --tls (env TEMPORAL_API_KEY; prefer the environment to the command line, which other users can read)")
}

// on says whether any TLS or API key setting was given.
func (t *temporalTLS) on() bool {
	return t.enabled || t.certFile != "" || t.keyFile != "" || t.caFile != "" || t.serverName != "" || t.apiKey != ""
}

// connection builds the client's TLS configuration and credentials from the flags, with
// an error that names the flag at fault. With no TLS flag it returns nil, nil: plain gRPC,
// as `herald dev` serves.
func (t *temporalTLS) connection() (*tls.Config, client.Credentials, error) {
	if t.apiKey == "" {
		t.apiKey = os.Getenv("TEMPORAL_API_KEY")
	}
	if !t.on() {
		return nil, nil, nil
	}
	if err := validateServerName(t.serverName); err != nil {
		return nil, nil, err
	}
	if err := validateAPIKey(t.apiKey); err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.serverName}
	switch {
	case t.certFile != "" && t.keyFile != "":
		pair, err := tls.LoadX509KeyPair(t.certFile, t.keyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --tls-cert-path %s with --tls-key-path %s: %v (both must be PEM, the key the certificate's)", errUsage, t.certFile, t.keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case t.certFile != "" || t.keyFile != "":
		return nil, nil, fmt.Errorf("%w: --tls-cert-path and --tls-key-path go together: give both, or neither", errUsage)
	}
	if t.caFile != "" {
		pem, err := os.ReadFile(t.caFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --tls-ca-path: %v", errUsage, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("%w: --tls-ca-path %s holds no PEM certificate", errUsage, t.caFile)
		}
		cfg.RootCAs = pool
	}
	var creds client.Credentials
	if t.apiKey != "" {
		creds = client.NewAPIKeyStaticCredentials(t.apiKey)
	}
	return cfg, creds, nil
}

// validateServerName checks --tls-server-name: empty, or a DNS name of dot-separated labels
// of letters, digits and hyphens (1–63 each, not starting or ending with a hyphen), at most
// 253 characters in all.
func validateServerName(name string) error {
	if name == "" {
		return nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: --tls-server-name %q %s: give the DNS name in Temporal's server certificate, like temporal.example.com", errUsage, name, why)
	}
	if len(name) > 253 {
		return bad("is longer than 253 characters")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return bad("has an empty label or one over 63 characters")
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return bad("has a label that starts or ends with a hyphen")
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return bad("holds a character other than letters, digits, hyphens and dots")
			}
		}
	}
	return nil
}

// validateAPIKey checks --api-key: empty, or 1..maxAPIKey visible ASCII characters (0x21–0x7E),
// which is what a gRPC header value carries unchanged.
func validateAPIKey(key string) error {
	if len(key) > maxAPIKey {
		return fmt.Errorf("%w: --api-key is %d characters long, over %d: is it the key, or a file of them?", errUsage, len(key), maxAPIKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return fmt.Errorf("%w: --api-key holds a space, a control or a non-ASCII character at byte %d: copy the key alone, without quotes or a line break", errUsage, i)
		}
	}
	return nil
}
