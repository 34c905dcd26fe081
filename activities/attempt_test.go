package activities

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
)

func TestSentHeadersRedactSecrets(t *testing.T) {
	h := http.Header{}
	h.Set("Webhook-Signature", "v1,c2VjcmV0")
	h.Set("Webhook-Id", "evt_1")
	h.Set("Authorization", "Bearer token")
	got := sentHeaders(h, []herald.Header{{Name: "authorization", Value: "Bearer token"}})
	want := []herald.Header{{Name: "Authorization", Value: herald.RedactedValue}, {Name: "Webhook-Id", Value: "evt_1"}, {Name: "Webhook-Signature", Value: herald.RedactedValue}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sentHeaders = %v, want %v", got, want)
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
