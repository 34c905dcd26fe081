package activities

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
)

// recordingDestination is a destination of another kind: it keeps the request and
// answers with what it was told to.
type recordingDestination struct {
	got    *Request
	answer herald.Result
}

func (d *recordingDestination) Deliver(ctx context.Context, req *Request) herald.Result {
	d.got = req
	return d.answer
}

// An attempt hands its destination the request built and signed, and completes the
// destination's result with what only the attempt knows.
func TestSendGoesThroughTheDestination(t *testing.T) {
	secret, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	d := &recordingDestination{answer: herald.Result{Outcome: herald.OutcomeDelivered, Snippet: "ok"}}
	a := &Activities{Destination: d, Defaults: herald.DefaultSettings()}
	ep := herald.Endpoint{ID: "ep", URL: "https://user:pw@example.test/hook?token=x", Secret: secret}
	ev := herald.Event{ID: "evt_1", Type: "order.paid", EndpointID: "ep", Data: json.RawMessage(`{"n":1}`)}
	now := time.Now()
	res := a.send(context.Background(), AttemptInput{Event: ev, Number: 3}, ep, now)

	if d.got == nil {
		t.Fatal("the destination got no request")
	}
	if err := signature.NewVerifier(secret).Verify(d.got.Header, d.got.Body); err != nil {
		t.Fatalf("the request's signature does not verify: %v", err)
	}
	if d.got.URL != ep.URL || d.got.Timeout != a.Defaults.Timeout.Std() {
		t.Fatalf("request to %s within %s, want %s within %s", d.got.URL, d.got.Timeout, ep.URL, a.Defaults.Timeout.Std())
	}
	if !res.Delivered() || res.Snippet != "ok" || res.Number != 3 || !res.StartedAt.Equal(now) ||
		res.URL != "https://example.test/hook" || res.Policy.Ladder.Attempts == 0 || res.HTTPExchange.StatusCode != 0 {
		t.Fatalf("result %+v: want the destination's outcome, the attempt's number, start, policy and display URL", res)
	}
	if res.Summary() != "delivered" {
		t.Fatalf("summary of a delivery with no HTTP exchange: %q", res.Summary())
	}
}

// The HTTP destination records the exchange: the status, the Retry-After and Date
// headers, the headers both ways, and the start of the body; it follows no redirect.
func TestHTTPDestination(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("later"))
		case "/moved":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	d := &HTTP{Client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	ep := herald.Endpoint{ID: "ep", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	send := func(path string) herald.Result {
		ep.URL = srv.URL + path
		req, err := newRequest(herald.Event{ID: "evt_1", Type: "t", Data: json.RawMessage(`{}`)}, ep, nil, time.Now(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return d.Deliver(context.Background(), req)
	}
	res := send("/busy")
	x := res.HTTPExchange
	if res.Outcome != herald.OutcomeHTTPStatus || x.StatusCode != 503 || x.RetryAfterHeader != "7" || x.DateHeader == "" ||
		res.Snippet != "later" || len(x.RequestHeaders) == 0 || len(x.ResponseHeaders) == 0 {
		t.Fatalf("503: %+v", res)
	}
	if res := send("/moved"); res.Outcome != herald.OutcomeHTTPStatus || res.HTTPExchange.StatusCode != http.StatusFound || res.Error == "" {
		t.Fatalf("redirect: %+v; want not followed, said so", res)
	}
	if res := send("/ok"); !res.Delivered() || res.Summary() != "204 No Content" {
		t.Fatalf("204: %+v, summary %q", res, res.Summary())
	}
}
