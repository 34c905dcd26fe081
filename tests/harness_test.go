// Package tests holds Herald's integration tests: a real Temporal server (the embedded dev
// server, in memory, on free ports), a real Herald worker and real HTTP receivers on loopback.
package tests

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
	"github.com/heraldhq/herald/workflows"
)

// stack is the shared test stack: one server, one worker, one starter.
type stack struct {
	srv     *devserver.Server
	client  client.Client
	starter *starter.Client
	worker  *worker.Worker
}

var shared *stack

func TestMain(m *testing.M) {
	s, err := startStack(context.Background(), "")
	if err != nil {
		slog.Error("start test stack", "error", err)
		os.Exit(1)
	}
	shared = s
	code := m.Run()
	s.stop()
	os.Exit(code)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// searchAttributes are Herald's search attributes, as the dev command registers them.
func searchAttributes() map[string]enums.IndexedValueType {
	m := map[string]enums.IndexedValueType{}
	for _, n := range workflows.SearchAttributeNames {
		m[n] = enums.INDEXED_VALUE_TYPE_KEYWORD
	}
	return m
}

// loopback is the SSRF policy of the tests' worker: receivers are on loopback.
var loopback = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

func startStack(ctx context.Context, dbFile string) (*stack, error) {
	srv, err := devserver.Start(ctx, devserver.Options{UIPort: -1, DBFile: dbFile, SearchAttributes: searchAttributes(), Logger: quiet})
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendAddress(), Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		srv.Stop()
		return nil, err
	}
	w, err := worker.New(c, worker.Options{
		Net:           loopback,
		RenewInterval: 200 * time.Millisecond,
		Logger:        quiet,
	})
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		c.Close()
		srv.Stop()
		return nil, err
	}
	return &stack{srv: srv, client: c, worker: w, starter: starter.New(c, starter.Options{EagerStart: true})}, nil
}

func (s *stack) stop() {
	s.worker.Stop()
	s.client.Close()
	s.srv.Stop()
}

// request is one request a receiver saw.
type request struct {
	At     time.Time
	Header http.Header
	Body   []byte
}

// receiver is an HTTP receiver on loopback that answers with a scripted handler and
// records every request.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []request
	answer func(n int, w http.ResponseWriter) // n is the 1-based request number
	got    chan struct{}
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *receiver {
	t.Helper()
	r := &receiver{answer: answer, got: make(chan struct{}, 1000)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.seen = append(r.seen, request{At: time.Now(), Header: req.Header.Clone(), Body: body})
		n := len(r.seen)
		answer := r.answer
		r.mu.Unlock()
		answer(n, w)
		r.got <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) setAnswer(a func(n int, w http.ResponseWriter)) {
	r.mu.Lock()
	r.answer = a
	r.mu.Unlock()
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.seen...)
}

// status answers every request with code.
func status(code int) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) { w.WriteHeader(code) }
}

// putEndpoint registers endpoint id at url with a fast ladder, returning its secret.
func putEndpoint(t *testing.T, id, url string, o *activities.Overrides) signature.Secret {
	t.Helper()
	sec, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	_, err = shared.starter.PutEndpoint(context.Background(), workflows.PutEndpointRequest{ID: id, URL: url, Secret: sec, Overrides: o})
	if err != nil {
		t.Fatalf("put endpoint %s: %v", id, err)
	}
	return sec
}

// fast is a scaled-down policy: the ladder's shape with millisecond-to-second waits.
func fast(attempts int, delays ...time.Duration) *activities.Overrides {
	zero := 0.0
	return &activities.Overrides{
		Ladder:    &policy.LadderOverride{Delays: delays, Attempts: attempts, Jitter: &zero},
		Retention: time.Hour,
		Timeout:   5 * time.Second,
	}
}

// waitState polls the status query until the delivery reaches state.
func waitState(t *testing.T, eventID, state string) workflows.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var st workflows.Status
	var err error
	for time.Now().Before(deadline) {
		st, err = shared.starter.Status(context.Background(), eventID)
		if err == nil && st.State == state {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	t.Fatalf("event %s never reached %s (last error %v); status:\n%s", eventID, state, err, b)
	return st
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
