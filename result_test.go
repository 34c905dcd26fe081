package herald

import (
	"encoding/json"
	"strings"
	"testing"
)

// A Result's HTTP detail is on the wire at the Result's top level, as recorded histories
// have it: an old result reads into HTTPExchange, and a result writes the same names.
func TestResultHTTPDetailStaysAtTheTopLevel(t *testing.T) {
	old := `{"number":1,"url":"https://example.test/hook","duration":"12ms","outcome":"http_status","status_code":410,` +
		`"retry_after_header":"5","date_header":"Tue, 01 Dec 2026 06:00:00 GMT","request_headers":[{"name":"Webhook-Id","value":"evt_1"}],` +
		`"response_headers":[{"name":"Date","value":"x"}],"response_headers_cut":true}`
	var r Result
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		t.Fatal(err)
	}
	x := r.HTTPExchange
	if x.StatusCode != 410 || x.RetryAfterHeader != "5" || x.DateHeader == "" || len(x.RequestHeaders) != 1 || len(x.ResponseHeaders) != 1 || !x.ResponseHeadersCut {
		t.Fatalf("read %+v from a recorded result", x)
	}
	if !r.Gone() || !strings.HasPrefix(r.Summary(), "410 Gone, Retry-After 5") {
		t.Fatalf("gone %v, summary %q", r.Gone(), r.Summary())
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]json.RawMessage
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"status_code", "retry_after_header", "date_header", "request_headers", "response_headers", "response_headers_cut"} {
		if _, ok := back[k]; !ok {
			t.Errorf("%s is not at the top level of %s", k, b)
		}
	}
	if _, ok := back["HTTPExchange"]; ok {
		t.Errorf("the HTTP detail is nested: %s", b)
	}
}

func TestHoldMayPermit(t *testing.T) {
	for _, c := range []struct {
		name string
		h    Hold
		want bool
	}{
		{"queued at the endpoint workflow", Hold{Queued: true, Brief: true}, true},
		{"not brief (an unreachable endpoint workflow)", Hold{}, true},
		{"booked for a later second", Hold{Brief: true, Recheck: Duration(2e9)}, false},
	} {
		if got := c.h.MayPermit(); got != c.want {
			t.Errorf("%s: MayPermit = %v, want %v", c.name, got, c.want)
		}
	}
}
