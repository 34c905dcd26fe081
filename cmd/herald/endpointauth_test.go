package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
)

// Bad authentication flags are refused before dialing, each with the flag's name.
func TestEndpointPutAuthFlagsRefused(t *testing.T) {
	offline(t)
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--auth-basic", "nocolon"}, "--auth-basic"},
		{[]string{"--auth-basic", "a:b:c\n"}, "--auth-basic"},
		{[]string{"--oauth2-token-url", "https://auth.example.com/token"}, "--oauth2-client-id and --oauth2-client-secret together"},
		{[]string{"--oauth2-token-url", "ftp://x", "--oauth2-client-id", "c", "--oauth2-client-secret", "s"}, "auth.oauth2.token_url"},
		{[]string{"--auth-basic", "a:b", "--oauth2-token-url", "https://a.example/t", "--oauth2-client-id", "c", "--oauth2-client-secret", "s"}, "not both"},
		{[]string{"--client-cert", junk}, "both --client-cert and --client-key"},
		{[]string{"--client-cert", junk, "--client-key", junk}, "auth.client_cert"},
		{[]string{"--client-cert", filepath.Join(dir, "missing"), "--client-key", junk}, "--client-cert"},
	} {
		out, err := runHerald(append([]string{"endpoint", "put", "acme", nowhere}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v %s; want an error naming %q", c.args, err, out, c.want)
		}
	}
}

// The flags make the change the API's JSON would.
func TestEndpointPutAuthFlags(t *testing.T) {
	var f authFlags
	cmd := &cobra.Command{}
	f.bind(cmd.Flags())
	if err := cmd.Flags().Parse([]string{"--oauth2-token-url", "https://auth.example.com/token", "--oauth2-client-id", "herald",
		"--oauth2-client-secret", "s3cret", "--oauth2-scopes", "a,b"}); err != nil {
		t.Fatal(err)
	}
	a, err := f.change(cmd.Flags())
	if err != nil || a == nil || a.OAuth2 == nil || a.OAuth2.ClientSecret != "s3cret" || strings.Join(a.OAuth2.Scopes, " ") != "a b" || a.Basic != nil {
		t.Fatalf("oauth2 flags: %+v, %v", a, err)
	}
	if got := authText(a.View()); got != "oauth2 client credentials (client herald at https://auth.example.com/token, secret set)" {
		t.Fatalf("authText: %q", got)
	}
	if got := authText((herald.EndpointAuth{}).View()); got != "none" {
		t.Fatalf("authText of none: %q", got)
	}
}

// herald endpoint get prints the authentication's kind, never a secret.
func TestEndpointGetShowsAuth(t *testing.T) {
	var st herald.EndpointState
	st.ID = "acme"
	st.Auth = (herald.EndpointAuth{Basic: &herald.BasicAuth{Username: "herald", Password: "get-s3cret"}}).View()
	var b strings.Builder
	if err := (&globals{}).printEndpoint(&b, st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Auth       basic (user herald, password set)") || strings.Contains(b.String(), "get-s3cret") {
		t.Fatalf("endpoint get:\n%s", b.String())
	}
}
