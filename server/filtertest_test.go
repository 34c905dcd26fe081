package server

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testkit/check"
)

// TestFilterTestForm: the endpoint page shows the endpoint's filter and transformation, and
// its test form answers true, false or the error for a sample event, and what the
// transformation makes of it; a sample that is not an event is refused with why; a post
// without the page's CSRF token is refused; the event page shows the body the
// transformation sent. The filter is put through the API, whose
// errors name the expression's line and column.
func TestFilterTestForm(t *testing.T) {
	t.Parallel()
	ep, _, c := endpointSession(t, "filter-page", "acme", shared.acme)
	code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"filter": "data.amount >"})
	want(t, "put a broken filter", code, http.StatusBadRequest, out)
	if msg, _ := out["error"].(string); !strings.Contains(msg, "line 1, column 14") {
		t.Fatalf("broken filter refused with %q, want its position", msg)
	}
	code, out = call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{
		"filter":    `data.amount > 100`,
		"transform": `{"body": {"text": "Order " + string(data.order_id) + " paid"}}`,
	})
	want(t, "put filter and transformation", code, http.StatusOK, out)
	if out["filter"] != "data.amount > 100" {
		t.Fatalf("put answer %v does not show the filter", out)
	}

	_, page := get(t, c, "/endpoints/"+ep)
	if !strings.Contains(page, `id="endpoint-filter">data.amount &gt; 100<`) {
		t.Fatalf("endpoint page does not show the filter:\n%s", page)
	}
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("endpoint page has no csrf field")
	}
	post := func(csrf, sample string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, shared.http.URL+"/endpoints/"+url.PathEscape(ep)+"/filter-test",
			strings.NewReader(url.Values{"csrf": {csrf}, "event": {sample}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, b := check.Do(t, c, req)
		return resp.StatusCode, html.UnescapeString(string(b))
	}
	for _, tc := range []struct{ sample, want string }{
		{`{"type": "order.paid", "data": {"order_id": 42, "amount": 150}}`, `id="filter-answer">true<`},
		{`{"type": "order.paid", "data": {"order_id": 42, "amount": 150}}`, `{"text":"Order 42 paid"}`},
		{`{"type": "order.paid", "data": {"order_id": 7, "amount": 5}}`, `id="filter-answer">false<`},
		{`{"type": "order.paid", "data": {"order_id": 7}}`, "no such key: amount"},
		{`{"type": "order.paid"}`, `id="filter-answer">error<`},
		{`{"type": "order paid", "data": {}}`, "Not a sample event: type:"},
		{`{"type": "order.paid", "data": {}, "extra": 1}`, `unknown field "extra"`},
		{`{"type": "order.paid", "id": "a b", "data": {}}`, "Not a sample event: id:"},
		{`<script>`, "Not a sample event"},
	} {
		code, body := post(m[1], tc.sample)
		if code != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("test with %s: status %d, want 200 with %q; result: %s", tc.sample, code, tc.want, resultOf(body))
		}
	}
	// The event page shows the body the transformation sent.
	ev := uniq("evt_transformed")
	code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "id": ev, "type": "order.paid", "data": map[string]any{"order_id": 42}})
	want(t, "send to "+ep, code, http.StatusAccepted, out)
	waitState(t, ev, "delivered")
	_, page = get(t, c, "/events/"+ev)
	if !strings.Contains(html.UnescapeString(page), `<pre class="code transformed-body" tabindex="0">{"text":"Order 42 paid"}</pre>`) {
		t.Errorf("event page does not show the transformed body:\n%s", page)
	}

	if code, _ := post("forged", `{"type": "order.paid", "data": {}}`); code != http.StatusForbidden {
		t.Errorf("post with a forged CSRF token: status %d, want 403", code)
	}
	req, _ := http.NewRequest(http.MethodPost, shared.http.URL+"/endpoints/"+url.PathEscape(ep)+"/filter-test",
		strings.NewReader(url.Values{"csrf": {m[1]}, "event": {strings.Repeat(" ", herald.MaxSampleEvent+1)}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "the limit is") && resp.StatusCode == http.StatusOK {
		t.Errorf("a sample past %d bytes was taken: %s", herald.MaxSampleEvent, resultOf(string(b)))
	}
}

// resultOf is the test form's answer in a page, for failure messages.
func resultOf(page string) string {
	if i := strings.Index(page, `id="filter-test-result"`); i >= 0 {
		return page[i:min(len(page), i+600)]
	}
	return "(no result)"
}
