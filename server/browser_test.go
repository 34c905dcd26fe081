package server

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts a headless Chromium for one test, or skips the test when none is installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium installed: install it (apt-get install -y chromium) to run the browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, cancelCtx := chromedp.NewContext(alloc)
	// The first call starts the browser, which lives as long as its context: no timeout on it.
	if err := chromedp.Do(browserCtx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	ctx, cancelTimeout := context.WithTimeout(browserCtx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// browserSignIn signs the browser in with token through the form.
func browserSignIn(t *testing.T, ctx context.Context, token string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(shared.http.URL+"/signin"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("header .who")),
	)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
}

func TestBrowserSignInAndReplayDeadLetter(t *testing.T) {
	ctx := browser(t)
	rcv, ep, ev := deadLetter(t, "browser-replay", "evt_browser", 1)
	waitListed(t, "/v1/dead-letters?endpoint="+ep, ev)

	browserSignIn(t, ctx, shared.acme)
	who, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("header .who")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(who, "tenant acme") {
		t.Fatalf("signed in as %q, want tenant acme", who)
	}

	rcv.set(http.StatusOK)
	row := `#dead-letters tr[data-event="` + ev + `"]`
	delivered := `#deliveries tr[data-event="` + ev + `"][data-state="delivered"]`
	err = chromedp.Do(ctx,
		chromedp.Navigate(shared.http.URL+"/endpoints/"+ep),
		chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.Click(chromedp.CSS(row+" button.replay")),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
		chromedp.WaitVisible(chromedp.CSS(delivered)), // the page refreshes itself until it shows
	)
	if err != nil {
		t.Fatalf("replay from the dashboard: %v", err)
	}
	if n := rcv.count(ev); n != 2 {
		t.Fatalf("receiver saw webhook-id %s %d times, want 2 (the failed attempt and the replay)", ev, n)
	}
	deadLetters, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#dead-letters tr[data-event="`+ev+`"]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if deadLetters != 0 {
		t.Fatal("the replayed event is still listed as a dead letter")
	}
}

func TestBrowserCircuitOpenBanner(t *testing.T) {
	ctx := browser(t)
	rcv := newReceiver(t, http.StatusServiceUnavailable)
	ep := uniq("acme-prod")
	putEndpoint(t, ep, "acme", rcv.URL, 1, map[string]any{
		"breaker": map[string]any{"consecutive_failures": 2, "consecutive_window": "1m", "volume_failures": 50, "probe_delay": "1h"},
	})

	// Open the page while the circuit is closed: the banner must appear without a reload.
	browserSignIn(t, ctx, shared.acme)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(shared.http.URL+"/endpoints/"+ep),
		chromedp.WaitVisible(chromedp.CSS("#circuit")),
	); err != nil {
		t.Fatal(err)
	}
	banners, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.banner').length`))
	if err != nil {
		t.Fatal(err)
	}
	if banners != 0 {
		t.Fatal("a banner shows while the circuit is closed")
	}

	for i := 0; i < 3; i++ {
		send(t, shared.acme, ep, uniq("evt_trip"))
	}
	deadline := time.Now().Add(30 * time.Second)
	open := false
	for time.Now().Before(deadline) && !open {
		_, st := call(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil)
		c, _ := st["circuit"].(map[string]any)
		open = c["state"] == "open"
		time.Sleep(100 * time.Millisecond)
	}
	if !open {
		t.Skip("needs the circuit breaker: the circuit never opened after 3 failures with consecutive_failures 2")
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(".banner"))); err != nil {
		t.Fatalf("the circuit-open banner never showed: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".banner")))
	if err != nil {
		t.Fatal(err)
	}
	wantPrefix := "Deliveries to your endpoint " + ep + " are paused since "
	if !strings.HasPrefix(text, wantPrefix) || !strings.Contains(text, "The next probe is at ") {
		t.Fatalf("banner %q, want %q… The next probe is at …", text, wantPrefix)
	}
	badge, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#circuit")))
	if err != nil {
		t.Fatal(err)
	}
	if badge != "Circuit open" {
		t.Fatalf("circuit line %q, want Circuit open", badge)
	}
	// The circuit line dates the pause as the banner does.
	note, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#circuit-note")))
	if err != nil {
		t.Fatal(err)
	}
	since := strings.Fields(note)[1]
	if !strings.HasPrefix(text, wantPrefix+since) {
		t.Fatalf("the banner %q and the circuit line %q give different times", text, note)
	}

	if out := os.Getenv("HERALD_SCREENSHOT"); out != "" {
		if !filepath.IsAbs(out) {
			out = filepath.Join("..", out) // relative to the repository root
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s", out)
	}
}
