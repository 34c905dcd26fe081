package server

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// headerReceiver answers every request with status, a few headers and a body.
func headerReceiver(t *testing.T, status int) *httptest.Server {
	return flakyReceiver(t, func(string, int) int { return status })
}

// flakyReceiver answers the n-th request (from 1) carrying webhook-id id with status(id, n),
// a few headers and a body.
func flakyReceiver(t *testing.T, status func(id string, n int) int) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		mu.Lock()
		seen[id]++
		n := seen[id]
		mu.Unlock()
		code := status(id, n)
		w.Header().Set("X-Request-Seen", id)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = w.Write([]byte("receiver says " + http.StatusText(code)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// listEvents pages through GET /v1/events?query as token with a page size of limit and
// returns the event ids in order and how many pages it took.
func listEvents(t *testing.T, token, query string, limit int) ([]string, int) {
	t.Helper()
	var ids []string
	cursor, pages := "", 0
	for {
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		q.Set("limit", strconv.Itoa(limit))
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		code, out := call(t, "GET", "/v1/events?"+q.Encode(), token, nil)
		want(t, "list events "+query, code, http.StatusOK, out)
		pages++
		evs, _ := out["events"].([]any)
		if len(evs) > limit {
			t.Fatalf("a page of limit %d holds %d events", limit, len(evs))
		}
		for _, e := range evs {
			ids = append(ids, e.(map[string]any)["event_id"].(string))
		}
		next, _ := out["next_cursor"].(string)
		if next == "" {
			return ids, pages
		}
		if pages > 50 {
			t.Fatal("more than 50 pages: the cursor does not advance")
		}
		cursor = next
	}
}

func TestEventSearchAPI(t *testing.T) {
	rcv := headerReceiver(t, http.StatusOK)
	ep := uniq("portal-api")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	var paid, refunded []string
	for i := 0; i < 5; i++ {
		paid = append(paid, sendTyped(t, shared.acme, ep, uniq("evt_paid"), "order.paid"))
	}
	for i := 0; i < 2; i++ {
		refunded = append(refunded, sendTyped(t, shared.acme, ep, uniq("evt_refund"), "order.refunded"))
	}
	all := append(slices.Clone(paid), refunded...)
	for _, id := range all {
		waitState(t, id, "delivered")
	}

	// Every page holds at most 3; the pages together hold each event once.
	var ids []string
	var pages int
	eventually(t, "the 7 deliveries to be listed", func() bool {
		ids, pages = listEvents(t, shared.acme, "endpoint="+ep, 3)
		return len(ids) == len(all)
	})
	if pages < 3 {
		t.Fatalf("7 events in pages of 3 took %d pages", pages)
	}
	for _, id := range all {
		if !slices.Contains(ids, id) {
			t.Fatalf("event %s is missing from the pages %v", id, ids)
		}
	}
	if got, _ := listEvents(t, shared.acme, "endpoint="+ep+"&type=order.refunded", 10); !sameSet(got, refunded) {
		t.Fatalf("type filter: got %v, want %v", got, refunded)
	}
	if got, _ := listEvents(t, shared.acme, "endpoint="+ep+"&type=order.*", 10); !sameSet(got, all) {
		t.Fatalf("type prefix order.*: got %v, want %v", got, all)
	}
	if got, _ := listEvents(t, shared.acme, "endpoint="+ep+"&type=order.ref*", 10); !sameSet(got, refunded) {
		t.Fatalf("type prefix order.ref*: got %v, want %v", got, refunded)
	}
	// A delivery's state is found from its visibility record's close, which the server
	// writes a moment after the run completes (the listing above needs only the start).
	var delivered []string
	eventually(t, "the 7 deliveries to be listed as delivered", func() bool {
		delivered, _ = listEvents(t, shared.acme, "endpoint="+ep+"&state=delivered", 10)
		return len(delivered) >= len(all)
	})
	if !sameSet(delivered, all) {
		t.Fatalf("state delivered: got %v, want %v", delivered, all)
	}
	if got, _ := listEvents(t, shared.acme, "endpoint="+ep+"&state=dead_letter", 10); len(got) != 0 {
		t.Fatalf("state dead_letter: got %v, want none", got)
	}
	if got, _ := listEvents(t, shared.acme, "event="+paid[2], 10); !sameSet(got, paid[2:3]) {
		t.Fatalf("event id filter: got %v, want %v", got, paid[2:3])
	}
	if got, _ := listEvents(t, shared.operator, "tenant=acme&event="+paid[2], 10); !sameSet(got, paid[2:3]) {
		t.Fatalf("operator, tenant and event id: got %v, want %v", got, paid[2:3])
	}
	if got, _ := listEvents(t, shared.acme, "endpoint="+ep+"&until=2000-01-01T00:00:00Z", 10); len(got) != 0 {
		t.Fatalf("until 2000: got %v, want none", got)
	}

	// Another tenant sees none of them.
	code, out := call(t, "GET", "/v1/events?endpoint="+ep, shared.globex, nil)
	want(t, "globex lists acme's endpoint", code, http.StatusNotFound, out)
	if got, _ := listEvents(t, shared.globex, "event="+paid[0], 10); len(got) != 0 {
		t.Fatalf("globex found acme's event: %v", got)
	}
	code, out = call(t, "GET", "/v1/events?tenant=acme", shared.globex, nil)
	want(t, "globex asks for tenant acme", code, http.StatusForbidden, out)

	for _, bad := range []string{"state=gone", "cursor=!!", "limit=0", "limit=500", "since=yesterday", "since=2026-05-02T00:00:00Z&until=2026-05-01T00:00:00Z"} {
		code, out := call(t, "GET", "/v1/events?"+bad, shared.acme, nil)
		want(t, "GET /v1/events?"+bad, code, http.StatusBadRequest, out)
		if msg, _ := out["error"].(string); msg == "" {
			t.Fatalf("%s: no error message", bad)
		}
	}
}

func TestEventPageHeaders(t *testing.T) {
	rcv := headerReceiver(t, http.StatusServiceUnavailable)
	ep := uniq("portal-headers")
	putEndpoint(t, ep, "acme", rcv.URL, 1, map[string]any{"headers": map[string]string{"Authorization": "Bearer s3cret-value"}})
	ev := sendTyped(t, shared.acme, ep, uniq("evt_hdr"), "order.paid")
	waitState(t, ev, "dead_letter")

	_, st := call(t, "GET", "/v1/events/"+ev, shared.acme, nil)
	atts := st["attempts"].([]any)
	res := atts[0].(map[string]any)["result"].(map[string]any)
	reqH := headerMap(res["request_headers"])
	if reqH["Authorization"] != "[redacted]" || reqH["Webhook-Signature"] != "[redacted]" {
		t.Fatalf("secret request headers recorded: %v", reqH)
	}
	if reqH["Webhook-Id"] != ev || reqH["Content-Type"] != "application/json" {
		t.Fatalf("request headers %v lack webhook-id %s or the content type", reqH, ev)
	}
	if respH := headerMap(res["response_headers"]); respH["X-Request-Seen"] != ev {
		t.Fatalf("response headers %v, want X-Request-Seen: %s", respH, ev)
	}

	c := browserClient(t)
	signIn(t, c, shared.acme)
	code, page := get(t, c, "/events/"+ev)
	if code != http.StatusOK {
		t.Fatalf("event page: %d", code)
	}
	for _, want := range []string{"503 Service Unavailable", "X-Request-Seen", "receiver says Service Unavailable", "[redacted]", `&#34;n&#34;: 1`, "Timeline", "Dead letter"} {
		if !strings.Contains(page, want) {
			t.Errorf("the event page lacks %q", want)
		}
	}
	if strings.Contains(page, "s3cret-value") {
		t.Fatal("the event page shows a custom header's value")
	}
}

func sendTyped(t *testing.T, token, endpoint, id, typ string) string {
	t.Helper()
	code, out := call(t, "POST", "/v1/events", token, map[string]any{"endpoint_id": endpoint, "id": id, "type": typ, "data": map[string]any{"n": 1}})
	want(t, "send to "+endpoint, code, http.StatusAccepted, out)
	return out["id"].(string)
}

func headerMap(v any) map[string]string {
	m := map[string]string{}
	list, _ := v.([]any)
	for _, h := range list {
		hm := h.(map[string]any)
		m[hm["name"].(string)] = hm["value"].(string)
	}
	return m
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// An attempt recorded before Herald kept headers still shows, saying they were not recorded.
func TestEventPageAttemptWithoutHeaders(t *testing.T) {
	v := view{Title: "Event e", Event: eventView{ID: "e", State: "delivered", Attempts: []attemptView{
		{Round: 1, Number: 1, OK: true, Result: "200 OK", Status: "200 OK", Snippet: "ok"},
	}}}
	var b strings.Builder
	if err := pages["event.html"].ExecuteTemplate(&b, "layout", v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Not recorded (this attempt was made before Herald recorded headers)", "Headers not recorded.", "200 OK"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestEventsPreviousLink: a page reached with a trail of cursors links back to the page
// before it; a trail that is not one this server gave, or was dropped, gives no Previous
// link (First still works), and is no error.
func TestEventsPreviousLink(t *testing.T) {
	c := browserClient(t)
	signIn(t, c, shared.operator)
	// Cursors of the shape visibility gives (JSON); these start from the beginning.
	c1, c2 := base64.RawURLEncoding.EncodeToString([]byte("{}")), base64.RawURLEncoding.EncodeToString([]byte("{ }"))
	for _, tc := range []struct {
		back, want string
	}{
		{"", `href="/events?limit=5"`},
		{c1, `href="/events?cursor=` + c1 + `&amp;limit=5"`},
		{c1 + "." + c2, `href="/events?back=` + c1 + `&amp;cursor=` + c2 + `&amp;limit=5"`},
		{"-", ""},
		{"not base64!", ""},
	} {
		path := "/events?limit=5&cursor=" + c2
		if tc.back != "" {
			path += "&back=" + url.QueryEscape(tc.back)
		}
		code, body := get(t, c, path)
		if code != http.StatusOK || !strings.Contains(body, `id="first-page"`) {
			t.Fatalf("GET %s: status %d, First link %v: %s", path, code, strings.Contains(body, `id="first-page"`), body[max(0, strings.Index(body, "<main")):])
		}
		i := strings.Index(body, `id="prev-page"`)
		switch {
		case tc.want == "" && i >= 0:
			t.Errorf("back %q: a Previous link, want none", tc.back)
		case tc.want != "" && (i < 0 || !strings.Contains(body[max(0, i-200):i], tc.want)):
			t.Errorf("back %q: Previous link %q, want %s", tc.back, body[max(0, i-200):max(0, i)], tc.want)
		}
	}
}

// TestEventsForeignCursor: a cursor no page gave is refused at once, with what to do.
func TestEventsForeignCursor(t *testing.T) {
	c := base64.RawURLEncoding.EncodeToString([]byte("two"))
	code, body := call(t, "GET", "/v1/events?cursor="+c, shared.operator, nil)
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), "start from the first page") {
		t.Fatalf("GET /v1/events with a foreign cursor: %d %v, want 400 saying to start from the first page", code, body)
	}
}
