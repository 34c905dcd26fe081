package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/signature"
)

// signedRequest is one request a signingReceiver got.
type signedRequest struct {
	header http.Header
	body   []byte
}

// signingReceiver is a loopback receiver that keeps every request, to check signatures.
type signingReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []signedRequest
}

func newSigningReceiver(t *testing.T) *signingReceiver {
	t.Helper()
	r := &signingReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, signedRequest{req.Header.Clone(), b})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// request returns the request with webhook-id id, if it came.
func (r *signingReceiver) request(id string) (signedRequest, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.reqs {
		if q.header.Get("webhook-id") == id {
			return q, true
		}
	}
	return signedRequest{}, false
}

// run runs browser steps, failing the test with what was being done.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text is the text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func value(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("value of %s: %v", sel, err)
	}
	return s
}

func TestBrowserTenantSelfService(t *testing.T) {
	ctx := browser(t)
	rcv := newSigningReceiver(t)
	ep := uniq("self")
	browserSignIn(t, ctx, shared.acme)

	// Register: the secret is shown once.
	run(t, ctx, "register an endpoint",
		chromedp.Navigate(shared.http.URL+"/endpoints"),
		clickLoads("#register-link"),
		chromedp.WaitVisible(chromedp.CSS("#register-form")),
		chromedp.SendKeys(chromedp.CSS("#endpoint-id"), ep),
		chromedp.SendKeys(chromedp.CSS("#endpoint-url"), rcv.URL),
		chromedp.SetValue(chromedp.CSS("#endpoint-types"), "order.*"),
		clickLoads("#register"),
		chromedp.WaitVisible(chromedp.CSS("#secret")),
	)
	first := value(t, ctx, "#secret")
	if _, err := signature.ParseSecret(first); err != nil {
		t.Fatalf("registered: shown secret %q: %v", first, err)
	}
	_, st := call(t, "GET", "/v1/endpoints/"+ep, shared.operator, nil)
	if st["tenant"] != "acme" || st["url"] != rcv.URL {
		t.Fatalf("registered endpoint: %v, want acme's with URL %s", st, rcv.URL)
	}
	screenshot(t, ctx, "portal-secret.png")

	// Rotate with the default grace: a new secret, shown once; the old one still signs.
	run(t, ctx, "rotate the secret",
		clickLoads("#to-settings"),
		chromedp.WaitVisible(chromedp.CSS("#rotate-form")),
		clickLoads("#rotate"),
		chromedp.WaitVisible(chromedp.CSS("#secret")),
	)
	second := value(t, ctx, "#secret")
	if _, err := signature.ParseSecret(second); err != nil || second == first {
		t.Fatalf("rotated: shown secret %q (%v), want a new valid secret", second, err)
	}
	if note := text(t, ctx, "#secret-note"); !strings.Contains(note, "The old secret also signs until") {
		t.Fatalf("rotation note %q, want it to say until when the old secret signs", note)
	}
	run(t, ctx, "back to the settings",
		clickLoads("#to-settings"),
		chromedp.WaitVisible(chromedp.CSS("#rotating")),
	)
	if page, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main"))); strings.Contains(page, first) || strings.Contains(page, second) {
		t.Fatal("the settings page shows a secret")
	}

	// Choose the event types.
	run(t, ctx, "choose event types",
		chromedp.SetValue(chromedp.CSS("#types"), "herald.*, order.paid"),
		clickLoads("#save-types"),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
		chromedp.WaitVisible(chromedp.CSS("#rotate-form")),
	)
	if got := text(t, ctx, "#subscribed-types"); got != "herald.*, order.paid" {
		t.Fatalf("subscribed types %q after saving, want herald.*, order.paid", got)
	}

	// Disable, then enable.
	run(t, ctx, "disable",
		chromedp.SendKeys(chromedp.CSS("#reason"), "maintenance"),
		clickLoads("#disable"),
		chromedp.WaitVisible(chromedp.CSS("#disabled")),
	)
	if _, st := call(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil); st["disabled"] == nil {
		t.Fatalf("the API does not show %s disabled: %v", ep, st)
	}
	run(t, ctx, "enable",
		clickLoads("#enable"),
		chromedp.WaitVisible(chromedp.CSS("#disable")),
	)
	if _, st := call(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil); st["disabled"] != nil {
		t.Fatalf("the API shows %s still disabled: %v", ep, st)
	}

	// Send a test event; it arrives signed with both secrets, and links to its page.
	run(t, ctx, "send a test event",
		clickLoads("#send-test"),
		chromedp.WaitVisible(chromedp.CSS("#test-event-link")),
	)
	screenshot(t, ctx, "portal-selfservice.png")
	run(t, ctx, "open the test event's page",
		clickLoads("#test-event-link"),
		chromedp.WaitVisible(chromedp.CSS("h1")),
	)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(loc, "/events/")
	if !ok {
		t.Fatalf("the test event's link went to %s, not an event page", loc)
	}
	ev, _, _ := strings.Cut(after, "?")
	var got signedRequest
	eventually(t, "the test event at the receiver", func() bool {
		got, ok = rcv.request(ev)
		return ok
	})
	for name, sec := range map[string]string{"new": second, "old (in its grace period)": first} {
		s, _ := signature.ParseSecret(sec)
		if err := signature.NewVerifier(s).Verify(got.header, got.body); err != nil {
			t.Errorf("the test event's signature with the %s secret: %v", name, err)
		}
	}
	var body struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(got.body, &body); err != nil || body.Type != TestEventType || body.Data["test"] != true {
		t.Fatalf("test event body %s (%v), want type %s with data.test true", got.body, err, TestEventType)
	}
	if h1 := text(t, ctx, "h1"); !strings.Contains(h1, ev) {
		t.Fatalf("event page heading %q does not name %s", h1, ev)
	}
}

func TestBrowserPortalLink(t *testing.T) {
	ctx := browser(t)
	rcv := newReceiver(t, http.StatusOK)
	one, other := uniq("portal-one"), uniq("portal-other")
	putEndpoint(t, one, "acme", rcv.URL, 1, nil)
	putEndpoint(t, other, "acme", rcv.URL, 1, nil)
	link := mintLink(t, map[string]any{"tenant": "acme", "endpoint": one, "ttl": "10m"})

	run(t, ctx, "open the portal link",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS("header .who")),
	)
	if who := text(t, ctx, "header .who"); !strings.Contains(who, "tenant acme, endpoint "+one+" (portal link)") {
		t.Fatalf("signed in as %q, want tenant acme, endpoint %s (portal link)", who, one)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasSuffix(loc, "/endpoints/"+one) {
		t.Fatalf("the link went to %s, want the endpoint's page", loc)
	}
	screenshot(t, ctx, "portal-link-signin.png")

	// Scope: the endpoint only.
	run(t, ctx, "list endpoints",
		chromedp.Navigate(shared.http.URL+"/endpoints"),
		chromedp.WaitVisible(chromedp.CSS(`#endpoints tr[data-endpoint="`+one+`"]`)),
	)
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#endpoints tbody tr').length`)); n != 1 {
		t.Fatalf("the portal session lists %d endpoints, want 1 (%s)", n, one)
	}
	run(t, ctx, "open another endpoint of the tenant",
		chromedp.Navigate(shared.http.URL+"/endpoints/"+other),
		chromedp.WaitVisible(chromedp.CSS("#error")),
	)

	// Once: opening it again fails with a page that says why.
	run(t, ctx, "open the link again",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS("#error")),
		chromedp.WaitVisible(chromedp.CSS("#continue")), // the session it opened still holds
	)
	if msg := text(t, ctx, "#error"); !strings.Contains(msg, "was used already") {
		t.Fatalf("second open says %q, want that the link was used already", msg)
	}
	screenshot(t, ctx, "portal-link-used.png")

	// Expired: a link opened after its ttl.
	later := newServer(t, func(o *Options) { o.Now = func() time.Time { return time.Now().Add(2 * time.Minute) } })
	expired := mintLink(t, map[string]any{"tenant": "acme", "ttl": "1m"})
	run(t, ctx, "open an expired link",
		chromedp.Navigate(later.URL+PortalPath+"?link="+linkToken(t, expired)),
		chromedp.WaitVisible(chromedp.CSS("#error")),
	)
	if msg := text(t, ctx, "#error"); !strings.Contains(msg, "has expired") {
		t.Fatalf("expired link says %q, want that it has expired", msg)
	}
}

// TestBrowserPortalEmbedded embeds the portal in a page of another site (localhost vs
// 127.0.0.1 are different sites), as a producer would in its product: with the page's
// origin in FrameAncestors, the link signs the frame in and its next page is served.
func TestBrowserPortalEmbedded(t *testing.T) {
	ctx := browser(t)
	var mu sync.Mutex
	endpointsStatus := 0
	host := httptest.NewUnstartedServer(nil)
	host.Start()
	t.Cleanup(host.Close)
	_, port, _ := net.SplitHostPort(host.Listener.Addr().String())
	hostOrigin := "http://localhost:" + port

	tokens, err := OpenTokenStore(shared.tokens.Path())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Starter: shared.starter, Client: shared.client, Tokens: tokens, Namespace: shared.temporal.Namespace(), Logger: quiet,
		FrameAncestors: []string{hostOrigin}})
	if err != nil {
		t.Fatal(err)
	}
	portal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		srv.ServeHTTP(rec, r)
		if r.URL.Path == "/endpoints" {
			mu.Lock()
			endpointsStatus = rec.status
			mu.Unlock()
		}
	}))
	t.Cleanup(portal.Close)

	link := mintLink(t, map[string]any{"tenant": "acme"})
	src := portal.URL + PortalPath + "?link=" + linkToken(t, link)
	host.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Acme app</title><h1>Acme app</h1><iframe id="portal" src="%s" width="1000" height="700"></iframe>`, src)
	})
	run(t, ctx, "open the host page", chromedp.Navigate(hostOrigin+"/"), chromedp.WaitVisible(chromedp.CSS("#portal")))
	eventually(t, "the framed portal's endpoints page", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return endpointsStatus != 0
	})
	mu.Lock()
	defer mu.Unlock()
	if endpointsStatus != http.StatusOK {
		t.Fatalf("the framed portal's /endpoints answered %d, want 200: the session cookie did not reach the frame", endpointsStatus)
	}
}

// statusRecorder records the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}
