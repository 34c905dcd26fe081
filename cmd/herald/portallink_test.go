package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPortalLinkCommand: herald portal-link mints a link on the tokens file it is given,
// and refuses a missing tenant and a TTL over 24h, saying what to give.
func TestPortalLinkCommand(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	run := func(args ...string) (string, error) {
		return runHerald(append([]string{"portal-link", "--tokens-file", tokens}, args...)...)
	}
	out, err := run("--tenant", "acme", "--ttl", "30m", "--url", "https://herald.example.com/", "-o", "json")
	if err != nil {
		t.Fatalf("portal-link: %v\n%s", err, out)
	}
	var link struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
		Tenant    string    `json:"tenant"`
	}
	if err := json.Unmarshal([]byte(out), &link); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if !strings.HasPrefix(link.URL, "https://herald.example.com/portal?link=") || link.Tenant != "acme" {
		t.Fatalf("link %+v, want https://herald.example.com/portal?link=... for acme", link)
	}
	if d := time.Until(link.ExpiresAt); d <= 29*time.Minute || d > 30*time.Minute {
		t.Fatalf("link expires in %s, want 30m", d)
	}
	out, err = run("--tenant", "acme")
	if err != nil || !strings.Contains(out, "Portal link for tenant acme (opens once, until ") || !strings.Contains(out, "http://127.0.0.1:8080/portal?link=") {
		t.Fatalf("text output %q (%v)", out, err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--ttl", "1h"}, "--tenant is missing"},
		{[]string{"--tenant", "acme", "--ttl", "25h"}, "--ttl 25h is longer than a portal link may live (24h): give 24h or less"},
		{[]string{"--tenant", "acme", "--url", "127.0.0.1:8080"}, "give the base URL people open the dashboard at"},
	} {
		if _, err := run(tc.args...); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("portal-link %v: %v, want an error saying %q", tc.args, err, tc.says)
		}
	}
}
