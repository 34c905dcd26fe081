package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// clickLoads clicks sel and waits until the click has loaded a new page.
// Waiting for an element alone races: the old page may show it too.
func clickLoads(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Evaluate[chromedp.Void](`window.heraldOldPage = true`)(ctx, tg); err != nil {
			return chromedp.Void{}, err
		}
		if _, err := chromedp.Click(chromedp.CSS(sel))(ctx, tg); err != nil {
			return chromedp.Void{}, err
		}
		loaded := chromedp.Evaluate[bool](`window.heraldOldPage === undefined && document.readyState === "complete"`)
		for {
			// While the page changes, evaluating may fail: try again.
			if ok, err := loaded(ctx, tg); err == nil && ok {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("clicked %s, no new page: %w", sel, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// browserSignIn signs the browser in with token through the form.
func browserSignIn(t *testing.T, ctx context.Context, token string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(shared.http.URL+"/signin"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		clickLoads("#signin"),
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
		clickLoads(row+" button.replay"),
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
	visit(t, ctx, "/endpoints/"+ep, "#circuit")
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

	screenshot(t, ctx, "endpoint-circuit-open.png")
}

// visit opens path on the test server and waits until sel is visible.
func visit(t *testing.T, ctx context.Context, path, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(shared.http.URL+path), chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("open %s and wait for %s: %v", path, sel, err)
	}
}

// screenshot saves the page as name (e.g. portal-events.png) in the directory
// HERALD_SCREENSHOTS names (relative to the repository root), when it is set: the
// screenshots in docs/ come from `HERALD_SCREENSHOTS=docs go test ./server -run TestBrowserPortal`.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("HERALD_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot written to %s", filepath.Join(dir, name))
}

// texts returns the text of every element sel matches.
func texts(t *testing.T, ctx context.Context, sel string) []string {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(`+strconv.Quote(sel)+`)).map(e => e.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBrowserPortal(t *testing.T) {
	ctx := browser(t)
	okRcv := headerReceiver(t, http.StatusOK)
	// Deliveries to the failing endpoint fail, but "evt_retry" ones succeed on their second attempt.
	badRcv := flakyReceiver(t, func(id string, n int) int {
		if strings.HasPrefix(id, "evt_retry") && n > 1 {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	ep, failing := uniq("shop-orders"), uniq("shop-billing")
	putEndpoint(t, ep, "acme", okRcv.URL, 1, nil)
	putEndpoint(t, failing, "acme", badRcv.URL, 2, map[string]any{
		"headers": map[string]string{"Authorization": "Bearer never-shown"},
		// The circuit stays closed, so that every delivery runs its ladder out.
		"breaker": map[string]any{"consecutive_failures": 50, "consecutive_window": "1m", "volume_failures": 50, "probe_delay": "1h"},
	})
	var sent, refunds []string
	for i := 0; i < 12; i++ {
		typ := "order.paid"
		if i%4 == 3 {
			typ = "order.refunded"
		}
		id := sendTyped(t, shared.acme, ep, uniq("evt_order"), typ)
		sent = append(sent, id)
		if typ == "order.refunded" {
			refunds = append(refunds, id)
		}
	}
	var dead []string
	for i := 0; i < 3; i++ {
		dead = append(dead, sendTyped(t, shared.acme, failing, uniq("evt_invoice"), "invoice.created"))
	}
	var retried []string
	for i := 0; i < 3; i++ {
		retried = append(retried, sendTyped(t, shared.acme, failing, uniq("evt_retry"), "invoice.paid"))
	}
	for _, id := range append(slices.Clone(sent), retried...) {
		waitState(t, id, "delivered")
	}
	for _, id := range dead {
		waitState(t, id, "dead_letter")
	}
	eventually(t, "the deliveries to be listed", func() bool {
		ids, _ := listEvents(t, shared.acme, "endpoint="+ep, 50)
		dl, _ := listEvents(t, shared.acme, "endpoint="+failing+"&state=dead_letter", 50)
		ok, _ := listEvents(t, shared.acme, "endpoint="+failing+"&state=delivered", 50)
		return len(ids) == len(sent) && len(dl) == len(dead) && len(ok) == len(retried)
	})

	browserSignIn(t, ctx, shared.acme)
	visit(t, ctx, "/endpoints", `#endpoints tr[data-endpoint="`+ep+`"]`)
	if rate := texts(t, ctx, `#endpoints tr[data-endpoint="`+ep+`"] .success-rate`); rate[0] != "100.0%" {
		t.Fatalf("the list's success rate of an endpoint whose 12 deliveries all arrived: %q", rate[0])
	}
	screenshot(t, ctx, "portal-endpoints.png")

	// Pagination: 12 deliveries in pages of 5, Next until the last page.
	visit(t, ctx, "/events?limit=5&endpoint="+ep, "#events")
	screenshot(t, ctx, "portal-events.png")
	var seen []string
	var pages [][]string
	for page := 1; ; page++ {
		rows := texts(t, ctx, "#events tbody tr td:first-child a")
		if len(rows) == 0 || len(rows) > 5 {
			t.Fatalf("page %d shows %d rows, want 1 to 5", page, len(rows))
		}
		seen = append(seen, rows...)
		pages = append(pages, rows)
		if len(texts(t, ctx, "#next-page")) == 0 {
			break
		}
		if page > 5 {
			t.Fatal("more than 5 pages for 12 deliveries in pages of 5")
		}
		if err := chromedp.Do(ctx, clickLoads("#next-page"), chromedp.WaitVisible(chromedp.CSS("#first-page"))); err != nil {
			t.Fatal(err)
		}
	}
	if !sameSet(seen, sent) {
		t.Fatalf("the pages showed %v, want each of %v once", seen, sent)
	}
	// Previous goes back through the same pages, to the first (which has no Previous).
	for page := len(pages) - 1; page >= 1; page-- {
		if err := chromedp.Do(ctx, clickLoads("#prev-page"), chromedp.WaitVisible(chromedp.CSS("#events"))); err != nil {
			t.Fatal(err)
		}
		if rows := texts(t, ctx, "#events tbody tr td:first-child a"); !slices.Equal(rows, pages[page-1]) {
			t.Fatalf("Previous to page %d shows %v, want %v as before", page, rows, pages[page-1])
		}
	}
	if len(texts(t, ctx, "#prev-page")) != 0 || len(texts(t, ctx, "#first-page")) != 0 {
		t.Fatal("the first page, reached with Previous, links to a previous or first page")
	}

	// Search with the form: the type filter keeps only the refunds.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(shared.http.URL+"/events"),
		chromedp.WaitVisible(chromedp.CSS("#event-search")),
		chromedp.SendKeys(chromedp.CSS("#f-type"), "order.refunded"),
		chromedp.SetValue(chromedp.CSS("#f-endpoint"), ep),
		clickLoads("#search"),
		chromedp.WaitVisible(chromedp.CSS("#events")),
	); err != nil {
		t.Fatal(err)
	}
	if got := texts(t, ctx, "#events tbody tr td:first-child a"); !sameSet(got, refunds) {
		t.Fatalf("type filter shows %v, want %v", got, refunds)
	}
	// The state filter keeps the dead letters.
	visit(t, ctx, "/events?state=dead_letter&endpoint="+failing, "#events")
	if got := texts(t, ctx, "#events tbody tr td:first-child a"); !sameSet(got, dead) {
		t.Fatalf("state filter shows %v, want %v", got, dead)
	}

	// The event page: each attempt's request headers (secrets redacted), response status,
	// headers and body.
	if err := chromedp.Do(ctx,
		clickLoads(`#events tr[data-event="`+dead[0]+`"] a`),
		chromedp.WaitVisible(chromedp.CSS("article.attempt .request-headers")),
		chromedp.WaitVisible(chromedp.CSS("#payload")),
	); err != nil {
		t.Fatal(err)
	}
	if n := len(texts(t, ctx, "article.attempt")); n != 2 {
		t.Fatalf("%d attempts shown, want 2", n)
	}
	reqRows := strings.Join(texts(t, ctx, "article.attempt .request-headers tr"), "\n")
	for _, want := range []string{"Webhook-Id" + dead[0], "Webhook-Signature[redacted]", "Authorization[redacted]", "Content-Typeapplication/json"} {
		if !strings.Contains(reqRows, want) {
			t.Fatalf("request headers\n%s\nlack %q", reqRows, want)
		}
	}
	if got := texts(t, ctx, ".response-status"); got[0] != "503 Service Unavailable" {
		t.Fatalf("response status %q", got[0])
	}
	if h := strings.Join(texts(t, ctx, "article.attempt .response-headers tr"), "\n"); !strings.Contains(h, "X-Request-Seen"+dead[0]) {
		t.Fatalf("response headers\n%s\nlack X-Request-Seen", h)
	}
	if b := texts(t, ctx, ".response-body"); len(b) == 0 || b[0] != "receiver says Service Unavailable" {
		t.Fatalf("response body %v", b)
	}
	if p := texts(t, ctx, "#payload"); !strings.Contains(p[0], `"n": 1`) {
		t.Fatalf("payload %q", p[0])
	}
	if tl := strings.Join(texts(t, ctx, "#timeline li"), "\n"); !strings.Contains(tl, "Round 1 · attempt 2 → 503 Service Unavailable") || !strings.Contains(tl, "Dead letter") {
		t.Fatalf("timeline\n%s", tl)
	}
	if page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerHTML`)); strings.Contains(page, "never-shown") {
		t.Fatal("the event page shows a custom header's value")
	}
	screenshot(t, ctx, "portal-event.png")

	// The endpoint page: the chart of attempts by outcome, its text alternative, and the
	// success rate by delivery.
	visit(t, ctx, "/endpoints/"+failing, "svg.chart rect.http")
	if title := texts(t, ctx, "svg.chart > title"); len(title) != 1 || !strings.HasPrefix(title[0], "Attempts per minute by outcome") {
		t.Fatalf("chart title %v", title)
	}
	if rows := texts(t, ctx, "#chart-table tbody tr"); len(rows) == 0 {
		t.Fatal("the chart's table is empty")
	}
	if rate := texts(t, ctx, "#success-rate"); rate[0] != "50.0%" {
		t.Fatalf("success rate of an endpoint with 3 deliveries delivered (after a retry) and 3 dead letters: %q, want 50.0%%", rate[0])
	}
	screenshot(t, ctx, "portal-endpoint.png")
	visit(t, ctx, "/endpoints/"+ep, "#success-rate")
	if rate, counts := texts(t, ctx, "#success-rate"), texts(t, ctx, "#success-counts"); rate[0] != "100.0%" || !strings.HasPrefix(counts[0], "12 of 12") {
		t.Fatalf("success rate of an endpoint whose 12 deliveries all arrived: %q (%q)", rate[0], counts[0])
	}

	// At phone width the event list fits the screen: no sideways scrolling.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(shared.http.URL+"/events?limit=5&endpoint="+failing),
		chromedp.WaitVisible(chromedp.CSS("#events")),
	); err != nil {
		t.Fatal(err)
	}
	if w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || w > 390 {
		t.Fatalf("the event list is %d px wide at a 390 px screen (%v)", w, err)
	}
	screenshot(t, ctx, "portal-phone.png")
	for _, path := range []string{"/events/" + dead[0], "/endpoints/" + failing, "/endpoints"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(shared.http.URL+path), chromedp.WaitVisible(chromedp.CSS("main h1"))); err != nil {
			t.Fatal(err)
		}
		if w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || w > 390 {
			t.Fatalf("%s is %d px wide at a 390 px screen (%v)", path, w, err)
		}
	}
	// The favicon is served.
	resp, err := http.Get(shared.http.URL + "/static/favicon.svg")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("favicon: %d", resp.StatusCode)
	}
}
