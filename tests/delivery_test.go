package tests

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

func TestDeliveredFirstTry(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, status(http.StatusNoContent))
	sec := putEndpoint(t, "first-try", rcv.URL+"/hook", fast(3, time.Second))
	res, err := shared.starter.Send(context.Background(), starter.Event{
		EndpointID: "first-try", Type: "order.paid", Data: json.RawMessage(`{"order":42}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	st := waitState(t, res.EventID, herald.StateDelivered)
	if len(st.Attempts) != 1 || st.Attempts[0].Result.StatusCode != 204 {
		t.Fatalf("want one 204 attempt, got %+v", st.Attempts)
	}
	reqs := rcv.requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if got := r.Header.Get("webhook-id"); got != res.EventID {
		t.Errorf("webhook-id = %q, want %q", got, res.EventID)
	}
	if err := signature.NewVerifier(sec).Verify(r.Header, r.Body); err != nil {
		t.Errorf("signature does not verify: %v", err)
	}
	var env struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		CreatedAt time.Time       `json:"created_at"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatal(err)
	}
	if env.ID != res.EventID || env.Type != "order.paid" || string(env.Data) != `{"order":42}` || env.CreatedAt.IsZero() {
		t.Errorf("envelope = %+v", env)
	}

	// The fast path: eager start and a local activity keep a first-try delivery small.
	n := historyLength(t, herald.DeliveryID(herald.DefaultTenant, res.EventID))
	t.Logf("first-try delivery: %d history events", n)
	if n > 8 {
		t.Errorf("first-try delivery costs %d history events, want at most 8", n)
	}
}

func TestRetryAfterThenSuccess(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, firstThenOK(retryAfter(http.StatusServiceUnavailable, "2")))
	// The ladder alone would wait 30 s; the receiver asks for 2 s.
	putEndpoint(t, "retry-after", rcv.URL, fast(3, 30*time.Second))
	res, err := shared.starter.Send(context.Background(), starter.Event{Type: "test.event", EndpointID: "retry-after", Data: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	st := waitState(t, res.EventID, herald.StateDelivered)
	if len(st.Attempts) != 2 {
		t.Fatalf("want 2 attempts, got %d", len(st.Attempts))
	}
	first := st.Attempts[0]
	if first.Result.StatusCode != 503 || first.Result.RetryAfterHeader != "2" {
		t.Errorf("first attempt = %+v", first.Result)
	}
	if first.Next == nil || first.Next.Source != policy.SourceRetryAfter || first.Next.Delay.Std() < 2*time.Second {
		t.Errorf("next step after Retry-After 2 = %+v, want retry_after ≥ 2s", first.Next)
	}
	reqs := rcv.requests()
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 2*time.Second {
		t.Errorf("second attempt came %s after the first, earlier than Retry-After: 2", gap)
	}
	if reqs[0].Header.Get("webhook-id") != reqs[1].Header.Get("webhook-id") {
		t.Error("retry changed webhook-id")
	}
	eventually(t, "the endpoint to count the honoured Retry-After", func() bool {
		ep, err := shared.starter.GetEndpoint(context.Background(), "retry-after")
		return err == nil && ep.Counters.RetryAfterHonoured == 1 && ep.Counters.Attempts == 2
	})
}

func TestDeadLetterThenReplay(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, status(http.StatusInternalServerError))
	putEndpoint(t, "dlq", rcv.URL, fast(3, time.Second, time.Second))
	res, err := shared.starter.Send(context.Background(), starter.Event{Type: "test.event", EndpointID: "dlq", Data: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	st := waitState(t, res.EventID, herald.StateDeadLetter)
	if len(st.Attempts) != 3 || st.ExpiresAt.IsZero() {
		t.Fatalf("dead letter after %d attempts, expires %v", len(st.Attempts), st.ExpiresAt)
	}
	eventually(t, "the dead letter to be listed", func() bool {
		dls, err := shared.starter.ListDeadLetters(context.Background(), herald.DeadLetterFilter{EndpointID: "dlq"})
		return err == nil && len(dls) == 1 && dls[0].EventID == res.EventID
	})
	// A dead letter never retries on its own.
	before := len(rcv.requests())
	time.Sleep(time.Second)
	if after := len(rcv.requests()); after != before {
		t.Fatalf("dead letter retried on its own: %d → %d requests", before, after)
	}

	rcv.setAnswer(status(http.StatusNoContent))
	if err := shared.starter.Replay(context.Background(), res.EventID); err != nil {
		t.Fatal(err)
	}
	st = waitState(t, res.EventID, herald.StateDelivered)
	if st.Round != 1 || len(st.Attempts) != 4 {
		t.Errorf("after replay: round %d, %d attempts; want round 1, 4 attempts", st.Round, len(st.Attempts))
	}
	for i, r := range rcv.requests() {
		if got := r.Header.Get("webhook-id"); got != res.EventID {
			t.Errorf("request %d webhook-id = %q, want the original %q", i+1, got, res.EventID)
		}
	}
}

func TestIdempotentSend(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, status(http.StatusOK))
	putEndpoint(t, "idem", rcv.URL, fast(2, time.Second))
	ev := starter.Event{Type: "test.event", ID: "evt_idempotent_1", EndpointID: "idem", Data: json.RawMessage(`{}`)}
	a, err := shared.starter.Send(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, ev.ID, herald.StateDelivered)
	b, err := shared.starter.Send(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if a.RunID != b.RunID {
		t.Errorf("second send started run %s, want the first run %s", b.RunID, a.RunID)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("receiver saw %d requests for one event sent twice, want 1", n)
	}
}

func TestURLChangeReachesPendingRetry(t *testing.T) {
	t.Parallel()
	old := newReceiver(t, status(http.StatusBadGateway))
	fresh := newReceiver(t, status(http.StatusOK))
	putEndpoint(t, "moving", old.URL, fast(3, 3*time.Second))
	res, err := shared.starter.Send(context.Background(), starter.Event{Type: "test.event", EndpointID: "moving", Data: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, res.EventID, herald.StateWaitingRetry)
	if _, err := shared.starter.PutEndpoint(context.Background(), herald.PutEndpointRequest{ID: "moving", URL: fresh.URL + "/v2"}); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, res.EventID, herald.StateDelivered)
	if len(old.requests()) != 1 || len(fresh.requests()) != 1 {
		t.Errorf("old URL saw %d, new URL saw %d; want 1 and 1", len(old.requests()), len(fresh.requests()))
	}
	if got := st.Attempts[1].Result.URL; !strings.HasSuffix(got, "/v2") {
		t.Errorf("second attempt went to %q, want the new URL", got)
	}
}

func TestBulkReplay(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, status(http.StatusInternalServerError))
	putEndpoint(t, "bulk", rcv.URL, fast(1))
	var ids []string
	for range 3 {
		res, err := shared.starter.Send(context.Background(), starter.Event{Type: "test.event", EndpointID: "bulk", Data: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.EventID)
	}
	for _, id := range ids {
		waitState(t, id, herald.StateDeadLetter)
	}
	eventually(t, "three dead letters listed", func() bool {
		dls, err := shared.starter.ListDeadLetters(context.Background(), herald.DeadLetterFilter{EndpointID: "bulk"})
		return err == nil && len(dls) == 3
	})
	rcv.setAnswer(status(http.StatusOK))
	wfID, err := shared.starter.BulkReplay(context.Background(), herald.BulkReplayInput{
		Filter: herald.DeadLetterFilter{EndpointID: "bulk", Since: time.Now().Add(-time.Hour)},
		At:     time.Now().Add(500 * time.Millisecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out herald.BulkReplayResult
	if err := shared.client.GetWorkflow(context.Background(), wfID, "").Get(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Replayed != 3 {
		t.Errorf("bulk replay replayed %d, want 3", out.Replayed)
	}
	for _, id := range ids {
		waitState(t, id, herald.StateDelivered)
	}
}

func TestBadInputStartsNothing(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, status(http.StatusOK))
	putEndpoint(t, "strict", rcv.URL, nil)
	big := make([]byte, herald.MaxDataBytes+10)
	for i := range big {
		big[i] = ' '
	}
	big[0], big[len(big)-1] = '"', '"'
	cases := []struct {
		name string
		ev   starter.Event
		want error
		text string
	}{
		{"too large", starter.Event{Type: "test.event", ID: "evt_big", EndpointID: "strict", Data: big}, starter.ErrInvalid, "256 KiB"},
		{"not JSON", starter.Event{Type: "test.event", ID: "evt_notjson", EndpointID: "strict", Data: json.RawMessage(`{nope`)}, starter.ErrInvalid, "not valid JSON"},
		{"dot in id", starter.Event{Type: "test.event", ID: "evt.bad", EndpointID: "strict", Data: json.RawMessage(`{}`)}, starter.ErrInvalid, "event id"},
		{"space in id", starter.Event{Type: "test.event", ID: "evt bad", EndpointID: "strict", Data: json.RawMessage(`{}`)}, starter.ErrInvalid, "event id"},
		{"no data", starter.Event{Type: "test.event", ID: "evt_nodata", EndpointID: "strict"}, starter.ErrInvalid, "no data"},
		{"unknown endpoint", starter.Event{Type: "test.event", ID: "evt_orphan", EndpointID: "nobody-home", Data: json.RawMessage(`{}`)}, starter.ErrNotFound, "is not registered: register it first"},
		{"bad endpoint id", starter.Event{Type: "test.event", ID: "evt_badep", EndpointID: "a/b", Data: json.RawMessage(`{}`)}, starter.ErrInvalid, "endpoint id"},
	}
	for _, tc := range cases {
		_, err := shared.starter.Send(context.Background(), tc.ev)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: err = %v, want %v mentioning %q", tc.name, err, tc.want, tc.text)
			continue
		}
		if _, err := shared.client.DescribeWorkflowExecution(context.Background(), herald.DeliveryID(herald.DefaultTenant, tc.ev.ID), ""); err == nil {
			t.Errorf("%s: a delivery workflow was started", tc.name)
		}
	}

	bad := []struct {
		name string
		req  herald.PutEndpointRequest
		text string
	}{
		{"ftp", herald.PutEndpointRequest{ID: "bad-ftp", URL: "ftp://example.com/x"}, "scheme"},
		{"no host", herald.PutEndpointRequest{ID: "bad-nohost", URL: "http:///x"}, "host"},
		{"userinfo", herald.PutEndpointRequest{ID: "bad-user", URL: "https://user:pw@example.com/"}, "password"},
		{"private literal", herald.PutEndpointRequest{ID: "bad-private", URL: "http://10.1.2.3/hook"}, "private"},
		{"metadata", herald.PutEndpointRequest{ID: "bad-meta", URL: "http://169.254.169.254/latest"}, "link-local"},
		{"bad id", herald.PutEndpointRequest{ID: "a b", URL: "https://example.com/"}, "endpoint id"},
		{"bad secret", herald.PutEndpointRequest{ID: "bad-secret", URL: "https://example.com/", Secret: "hunter2"}, "whsec_"},
	}
	for _, tc := range bad {
		_, err := shared.starter.PutEndpoint(context.Background(), tc.req)
		if !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: err = %v, want invalid input mentioning %q", tc.name, err, tc.text)
		}
		if _, err := shared.starter.GetEndpoint(context.Background(), tc.req.ID); !errors.Is(err, starter.ErrNotFound) && !errors.Is(err, starter.ErrInvalid) {
			t.Errorf("%s: endpoint exists after a refused put (err %v)", tc.name, err)
		}
	}
}

// historyLength counts the events of a workflow's current run.
func historyLength(t *testing.T, workflowID string) int {
	t.Helper()
	it := shared.client.GetWorkflowHistory(context.Background(), workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestStatusDuringLongAttempt: a delivery answers its status query only between attempts;
// while one is in flight, the status comes from its search attributes, marked busy, at
// once rather than after the attempt.
func TestStatusDuringLongAttempt(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	inFlight := make(chan struct{}, 1)
	rcv := newReceiver(t, func(_ int, w http.ResponseWriter) {
		inFlight <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	})
	o := fast(3, time.Second)
	o.Timeout = herald.Duration(time.Minute)
	putEndpoint(t, "long-attempt", rcv.URL, o)
	res, err := shared.starter.Send(context.Background(), starter.Event{EndpointID: "long-attempt", Type: "report.ready", Data: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-inFlight:
	case <-time.After(time.Minute):
		t.Fatal("the attempt never reached the receiver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	st, err := shared.starter.Status(ctx, res.EventID)
	cancel()
	close(release)
	if err != nil {
		t.Fatalf("status during a long attempt: %v", err)
	}
	if st.Busy == nil || st.Busy.Since.IsZero() || st.State != herald.StateAttempting || st.Event.EndpointID != "long-attempt" ||
		st.Event.Type != "report.ready" || len(st.Attempts) != 0 {
		t.Fatalf("status during a long attempt: %+v (busy %+v), want attempting, busy since the attempt began, its endpoint and type", st, st.Busy)
	}
	done := waitState(t, res.EventID, herald.StateDelivered)
	if done.Busy != nil || len(done.Attempts) != 1 {
		t.Fatalf("status once delivered: busy %+v, %d attempts; want the delivery's own answer with its attempt", done.Busy, len(done.Attempts))
	}
}
