package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// TestBodyCarriesDataAsSent checks that the producer's data reaches the receiver byte for
// byte (compacted at most, never escaped), up to the size limit, which applies to those bytes.
func TestBodyCarriesDataAsSent(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, status(http.StatusOK))
	putEndpoint(t, "wire", rcv.URL, fast(1, time.Second))
	huge := `"` + strings.Repeat("<", herald.MaxDataBytes-2) + `"`
	for _, tc := range []struct {
		name, data, want string
	}{
		{"html characters", `{"x":"<&>"}`, `{"x":"<&>"}`},
		{"escapes the producer wrote", `{"x":"\u003c","y":"\"é\u2028"}`, `{"x":"\u003c","y":"\"é\u2028"}`},
		{"line separators", "{\"x\":\"\u2028\u2029\"}", "{\"x\":\"\u2028\u2029\"}"},
		{"whitespace compacted", "{ \"x\" : [1, 2],\n \"y\": \"a b\" }", `{"x":[1,2],"y":"a b"}`},
		{"256 KiB of <", huge, huge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := shared.starter.Send(context.Background(), starter.Event{Type: "test.event", EndpointID: "wire", Data: json.RawMessage(tc.data)})
			if err != nil {
				t.Fatal(err)
			}
			waitState(t, res.EventID, herald.StateDelivered)
			var body []byte
			for _, r := range rcv.requests() {
				if r.Header.Get("webhook-id") == res.EventID {
					body = r.Body
				}
			}
			suffix := `,"data":` + tc.want + `}`
			if !bytes.HasSuffix(body, []byte(suffix)) {
				show := string(body)
				if len(show) > 300 {
					show = show[:150] + "..." + show[len(show)-150:]
				}
				t.Fatalf("body (%d bytes) does not end with the data as sent (%d bytes):\n%s", len(body), len(tc.want), show)
			}
			if len(body) > len(tc.want)+200 {
				t.Errorf("body is %d bytes for %d bytes of data", len(body), len(tc.want))
			}
		})
	}
	over := `"` + strings.Repeat("<", herald.MaxDataBytes-1) + `"`
	if _, err := shared.starter.Send(context.Background(), starter.Event{Type: "test.event", EndpointID: "wire", Data: json.RawMessage(over)}); err == nil {
		t.Error("data one byte over the limit was accepted")
	}
}
