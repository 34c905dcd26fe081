package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/proto"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

// TestNothingReadableInHistory runs Herald with the payload codec and reads the history
// back raw, as anyone with access to Temporal's store would: neither the payload, nor the
// signing secret, nor the receiver's error body may appear.
func TestNothingReadableInHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keyFile := t.TempDir() + "/codec.key"
	keys, err := codec.GenerateKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	stk, err := testkit.Start(ctx, testkit.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer stk.Stop()
	srv, s := stk.Server, stk.Starter

	const payloadMarker = "PAYLOAD-MARKER-5f1d2c"
	const bodyMarker = "RECEIVER-BODY-MARKER-88a1"
	rcv := newReceiver(t, firstThenOK(func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(bodyMarker))
	}))
	secret, _ := signature.GenerateSecret()
	zero := 0.0
	const passwordMarker = "AUTH-PASSWORD-MARKER-3c9e"
	if _, err := s.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "sealed", URL: rcv.URL, Secret: secret,
		Auth:      &herald.EndpointAuth{Basic: &herald.BasicAuth{Username: "herald", Password: passwordMarker}},
		Overrides: &herald.Overrides{Ladder: &policy.LadderOverride{Delays: duration.Of(time.Second), Attempts: 2, Jitter: &zero}}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Send(ctx, starter.Event{Type: "test.event", EndpointID: "sealed", Data: json.RawMessage(`{"card":"` + payloadMarker + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := s.Status(ctx, starter.Ref{EventID: res.EventID})
		if err == nil && st.State == herald.StateDelivered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %+v %v", st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := rcv.requests()[1].Body; !bytes.Contains(got, []byte(payloadMarker)) {
		t.Fatalf("the receiver did not get the plaintext payload: %s", got)
	}

	raw, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendAddress(), Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	keyBytes := strings.TrimPrefix(string(secret), "whsec_")
	forbidden := map[string]string{
		"payload":           payloadMarker,
		"secret":            keyBytes,
		"password":          passwordMarker,
		"basic auth":        base64.StdEncoding.EncodeToString([]byte("herald:" + passwordMarker))[:16],
		"receiver body":     bodyMarker,
		"payload (base64)":  base64.StdEncoding.EncodeToString([]byte(payloadMarker))[:16],
		"receiver (base64)": base64.StdEncoding.EncodeToString([]byte(bodyMarker))[:16],
	}
	for _, id := range []string{herald.DeliveryID(herald.DefaultTenant, res.EventID), herald.EndpointWorkflowID("sealed")} {
		it := raw.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var all []byte
		n := 0
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := proto.Marshal(ev)
			all = append(all, b...)
			n++
		}
		if n < 4 {
			t.Fatalf("%s: only %d events read", id, n)
		}
		for what, s := range forbidden {
			if bytes.Contains(all, []byte(s)) {
				t.Errorf("%s history contains the %s in plain text", id, what)
			}
		}
	}
	// The raw client cannot read the status either: it needs the key.
	if _, err := starter.New(raw, starter.Options{}).Status(ctx, starter.Ref{EventID: res.EventID}); err == nil || !strings.Contains(err.Error(), codec.Encoding) {
		t.Errorf("status without the key: err = %v, want an encrypted-payload error", err)
	}
	// The client with the key (the dashboard's) reads the payload in plain text, and the
	// attempts' recorded request headers hold no signature.
	ev, err := s.EventOf(ctx, herald.DefaultTenant, "", res.EventID)
	if err != nil || !bytes.Contains(ev.Data, []byte(payloadMarker)) {
		t.Errorf("the event query through the codec = %s, %v; want the plaintext payload", ev.Data, err)
	}
	st, err := s.Status(ctx, starter.Ref{EventID: res.EventID})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Attempts {
		for _, h := range a.Result.RequestHeaders {
			if h.Name == "Webhook-Signature" && h.Value != herald.RedactedValue {
				t.Errorf("attempt %d recorded the signature %q", a.Number, h.Value)
			}
		}
		if len(a.Result.RequestHeaders) == 0 || len(a.Result.ResponseHeaders) == 0 {
			t.Errorf("attempt %d recorded no request or response headers", a.Number)
		}
	}
}

// loopbackName returns a host name (not an IP literal, not "localhost") that resolves to a
// loopback address on this machine, or "" if there is none.
func loopbackName() string {
	host, _ := os.Hostname()
	for _, name := range []string{host, "runsc", "vm", "ip6-localhost", "ip6-loopback"} {
		if name == "" || strings.Contains(name, "localhost") && !strings.HasPrefix(name, "ip6-") {
			continue
		}
		addrs, err := net.LookupHost(name)
		if err != nil || len(addrs) == 0 {
			continue
		}
		ok := true
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
				ok = false
			}
		}
		if ok {
			return name
		}
	}
	return ""
}

// TestSSRFGuard runs a worker with the default address policy on its own task queue.
func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const queue = "herald-strict"
	w, err := worker.New(shared.client, worker.Options{TaskQueue: queue, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s := starter.New(shared.client, starter.Options{TaskQueue: queue})
	rcv := newReceiver(t, status(http.StatusOK))
	secret, _ := signature.GenerateSecret()

	// A literal loopback address is refused at registration, and nothing is registered.
	_, err = s.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "ssrf-literal", URL: rcv.URL, Secret: secret})
	if !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), netguard.AllowFlag) {
		t.Errorf("put of %s: err = %v, want a loopback refusal naming %s", rcv.URL, err, netguard.AllowFlag)
	}

	// A name that resolves to loopback passes registration but is refused when dialled.
	name := loopbackName()
	if name == "" {
		t.Skip("no host name resolves to loopback here")
	}
	u, _ := url.Parse(rcv.URL)
	byName := "http://" + net.JoinHostPort(name, u.Port()) + "/hook"
	zero := 0.0
	if _, err := s.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "ssrf-name", URL: byName, Secret: secret,
		Overrides: &herald.Overrides{Ladder: &policy.LadderOverride{Attempts: 1, Jitter: &zero}, Retention: herald.Duration(time.Hour)}}); err != nil {
		t.Fatalf("put %s: %v", byName, err)
	}
	res, err := s.Send(ctx, starter.Event{Type: "test.event", EndpointID: "ssrf-name", Data: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var st starter.Report
	for time.Now().Before(deadline) {
		if st, err = s.Status(ctx, starter.Ref{EventID: res.EventID}); err == nil && st.State == herald.StateDeadLetter {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.State != herald.StateDeadLetter || len(st.Attempts) != 1 {
		t.Fatalf("status = %+v, %v", st, err)
	}
	r := st.Attempts[0].Result
	if r.Outcome != herald.OutcomeRefused || !strings.Contains(r.Error, "loopback") {
		t.Errorf("attempt to %s = %s %q, want refused as loopback", byName, r.Outcome, r.Error)
	}
	if n := len(rcv.requests()); n != 0 {
		t.Errorf("the receiver behind %s got %d requests; the guard must refuse before connecting", byName, n)
	}
}

// TestSecretRotation: a request signed before the rotation's grace ends carries both
// signatures and each secret alone verifies it (Herald's verifier; the reference library is
// checked in package signature); one signed after it carries only the new one.
//
// The grace counts from when the endpoint workflow applied the rotation, more than a second
// before the put returns (read-your-writes), and a loaded machine may take seconds more to
// sign the first request: each request is judged by when it was signed against the grace's
// end the put reports, and the rotation is made again with a longer grace until one request
// is signed within it.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusOK))
	old := putEndpoint(t, "rotating", rcv.URL, fast(1))
	send := func() request {
		t.Helper()
		res, err := shared.starter.Send(ctx, starter.Event{Type: "test.event", EndpointID: "rotating", Data: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, res.EventID, herald.StateDelivered)
		for _, r := range rcv.requests() {
			if r.Header.Get("webhook-id") == res.EventID {
				return r
			}
		}
		t.Fatalf("event %s delivered, but the receiver has no request for it", res.EventID)
		return request{}
	}
	// signed is the earliest and the latest instant r can have been signed at: within its
	// webhook-timestamp's second, and before the receiver had it.
	signed := func(r request) (earliest, latest time.Time) {
		ts, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		if err != nil {
			t.Fatalf("webhook-timestamp %q: %v", r.Header.Get("webhook-timestamp"), err)
		}
		earliest, latest = time.Unix(ts, 0), time.Unix(ts+1, 0)
		if r.At.Before(latest) {
			latest = r.At
		}
		return earliest, latest
	}
	verifies := func(r request, secret signature.Secret) bool {
		return signature.NewVerifier(secret).Verify(r.Header, r.Body) == nil
	}

	var fresh signature.Secret
	var until time.Time
	within := false
	for grace := 3 * time.Second; !within && grace <= 24*time.Second; grace *= 2 {
		if fresh != "" {
			old = fresh // the previous try's rotation is over: its new secret is the old one now
		}
		fresh, _ = signature.GenerateSecret()
		res, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "rotating", RotateTo: fresh, RotateGrace: herald.Duration(grace)})
		if err != nil {
			t.Fatal(err)
		}
		until = res.Endpoint.PreviousUntil
		if until.IsZero() {
			t.Fatalf("rotation with a grace of %s: the put reports no end of the grace", grace)
		}
		during := send()
		n := len(strings.Fields(during.Header.Get("webhook-signature")))
		switch earliest, latest := signed(during); {
		case latest.Before(until):
			within = true
			if n != 2 {
				t.Errorf("signed %s before the grace ended: %d signatures, want 2", until.Sub(latest), n)
			}
			for name, sec := range map[string]signature.Secret{"old": old, "new": fresh} {
				if !verifies(during, sec) {
					t.Errorf("during grace, the %s secret alone does not verify", name)
				}
			}
		case !earliest.Before(until):
			t.Logf("grace of %s: the request was signed %s after it ended (a loaded machine); again with a longer grace", grace, earliest.Sub(until))
			if n != 1 {
				t.Errorf("signed after the grace: %d signatures, want 1", n)
			}
		default:
			t.Logf("grace of %s: the request was signed in the second the grace ended; again with a longer grace", grace)
		}
	}
	if !within {
		t.Fatal("no request was signed within a grace of up to 24 s")
	}

	time.Sleep(time.Until(until)) // the grace is a deadline on the clock: wait it out
	after := send()
	if n := len(strings.Fields(after.Header.Get("webhook-signature"))); n != 1 {
		t.Errorf("after grace: %d signatures, want 1", n)
	}
	if !verifies(after, fresh) {
		t.Errorf("after grace, the new secret does not verify")
	}
	if verifies(after, old) {
		t.Error("after grace, the old secret still verifies")
	}
}
