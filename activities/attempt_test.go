package activities

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

func TestRecordedHeadersRedactSecrets(t *testing.T) {
	ep := herald.Endpoint{ID: "ep", URL: "https://example.test/hook", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		Headers: []herald.Header{{Name: "authorization", Value: "Bearer token"}}}
	req, err := newRequest(herald.Event{ID: "evt_1", Type: "t", Data: []byte(`{}`)}, ep, nil, time.Unix(1700000000, 0), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, h := range req.Recorded() {
		got[h.Name] = h.Value
	}
	if got["Authorization"] != herald.RedactedValue || got["Webhook-Signature"] != herald.RedactedValue || got["Webhook-Id"] != "evt_1" ||
		got["Content-Type"] != "application/json" || got["User-Agent"] != UserAgent {
		t.Fatalf("recorded headers %v: want the custom header and the signature redacted, the others as sent", got)
	}
	if req.Header.Get("Authorization") != "Bearer token" {
		t.Fatal("the custom header is not sent")
	}
}

func TestCappedHeaders(t *testing.T) {
	h := http.Header{}
	for i := 0; i < 40; i++ {
		h.Set(fmt.Sprintf("X-H%02d", i), "v")
	}
	got, cut := cappedHeaders(h)
	if len(got) != herald.MaxResponseHeaders || !cut || got[0].Name != "X-H00" {
		t.Fatalf("40 headers: kept %d (first %v), cut %v; want the first %d by name, cut", len(got), got[0], cut, herald.MaxResponseHeaders)
	}
	h = http.Header{"Big": {strings.Repeat("x", 10_000)}, "Small": {"s"}}
	got, cut = cappedHeaders(h)
	size := 0
	for _, kv := range got {
		size += len(kv.Name) + len(kv.Value)
	}
	if size > herald.MaxResponseHeaderBytes || !cut {
		t.Fatalf("a 10 KB header: kept %d bytes, cut %v; want at most %d, cut", size, cut, herald.MaxResponseHeaderBytes)
	}
	got, cut = cappedHeaders(http.Header{"Date": {"Tue, 01 Dec 2026 06:00:00 GMT"}})
	if len(got) != 1 || cut {
		t.Fatalf("one header: %v, cut %v", got, cut)
	}
}
