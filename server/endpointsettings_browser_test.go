package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/testpki"
)

// TestBrowserSettingsFilterAndAuth: in a browser, a tenant sets its endpoint's filter from
// the settings page, sees a broken one refused with its position and its text kept, sets a
// client certificate from files and basic auth, sees their kind but never the secrets, and
// removes the authentication.
func TestBrowserSettingsFilterAndAuth(t *testing.T) {
	ctx := browser(t)
	rcv := newReceiver(t, 200)
	ep := uniq("browser-settings")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	browserSignIn(t, ctx, shared.acme)
	certPEM, keyPEM := testpki.SelfSignedClientCert(t, "herald")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "herald.crt"), filepath.Join(dir, "herald.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	password := uniq("browser-pw")

	run(t, ctx, "save a filter",
		chromedp.Navigate(shared.http.URL+"/endpoints/"+ep+"/settings"),
		chromedp.WaitVisible(chromedp.CSS("#filter-form")),
		chromedp.SetValue(chromedp.CSS("#filter"), "data.amount > 100"),
		clickLoads("#save-filter"),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if st := endpointJSON(t, ep); st["filter"] != "data.amount > 100" {
		t.Fatalf("after saving, the API shows filter %v", st["filter"])
	}
	run(t, ctx, "save a broken filter",
		chromedp.SetValue(chromedp.CSS("#filter"), "data.amount >"),
		clickLoads("#save-filter"),
		chromedp.WaitVisible(chromedp.CSS("#filter-error")),
	)
	if msg := text(t, ctx, "#filter-error"); !strings.Contains(msg, "line 1, column 14") {
		t.Fatalf("the broken filter's error %q does not name its position", msg)
	}
	if got := value(t, ctx, "#filter"); got != "data.amount >" {
		t.Fatalf("the broken filter's box holds %q, want the text typed", got)
	}

	run(t, ctx, "save a client certificate from files",
		chromedp.Navigate(shared.http.URL+"/endpoints/"+ep+"/settings"),
		chromedp.WaitVisible(chromedp.CSS("#auth")),
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#auth details").forEach(d => d.open = true)`),
		chromedp.SetUploadFiles(chromedp.CSS("#auth-cert-file"), []string{certFile}),
		chromedp.SetUploadFiles(chromedp.CSS("#auth-key-file"), []string{keyFile}),
		clickLoads("#save-cert"),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if got := text(t, ctx, "#auth-now"); got != "client certificate" {
		t.Fatalf("after the certificate the page shows authentication %q", got)
	}
	run(t, ctx, "save basic auth",
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#auth details").forEach(d => d.open = true)`),
		chromedp.SendKeys(chromedp.CSS("#auth-username"), "herald"),
		chromedp.SendKeys(chromedp.CSS("#auth-password"), password),
		clickLoads("#save-basic"),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if got := text(t, ctx, "#auth-now"); got != "basic + client certificate" {
		t.Fatalf("after basic auth the page shows authentication %q", got)
	}
	run(t, ctx, "show the forms", chromedp.Evaluate[chromedp.Void](`document.querySelector("#auth details").open = true`))
	screenshot(t, ctx, "portal-settings.png")
	page, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, password) || strings.Contains(page, strings.Split(string(keyPEM), "\n")[1]) {
		t.Fatal("the settings page shows the password or the private key")
	}
	run(t, ctx, "remove the authentication",
		clickLoads("#remove-auth"),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if got := text(t, ctx, "#auth-now"); got != "none" {
		t.Fatalf("after removing, the page shows authentication %q", got)
	}
}
