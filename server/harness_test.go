package server

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/internal/testkit/check"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

// stack is the shared test stack: a real Temporal server (in memory, free ports), a Herald
// worker that may dial loopback, and the HTTP server under test.
type stack struct {
	*testkit.Stack
	temporal *devserver.Server
	client   client.Client
	worker   *worker.Worker
	starter  *starter.Client
	server   *Server
	http     *httptest.Server
	tokens   *TokenStore

	operator, acme, globex string // bearer tokens
}

var shared *stack

var quiet = testkit.Quiet

func TestMain(m *testing.M) {
	if os.Getenv(tokenWriterEnv) != "" {
		os.Exit(runTokenWriter()) // a child of TestTokenStoreConcurrentProcesses
	}
	flag.Parse()
	if fw := flag.Lookup("test.fuzzworker"); fw != nil && fw.Value.String() == "true" {
		os.Exit(m.Run()) // a fuzz worker (go test -fuzz): its targets need no stack
	}
	if testing.Short() {
		// The edit-test loop (go test -short): the tests here run against a Temporal
		// server and a worker started for them.
		fmt.Fprintln(os.Stderr, "-short: ./server skipped (its tests start a Temporal server)")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "herald-server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s, err := startStack(filepath.Join(dir, "tokens.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "start test stack:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	shared = s
	code := m.Run()
	if code == 0 && len(seen) == 0 && flag.Lookup("test.run").Value.String() == "" {
		fmt.Fprintln(os.Stderr, "no API answer was recorded: the check against openapi.json checked nothing")
		code = 1
	}
	if code == 0 {
		if bad := undocumentedStatuses(); len(bad) > 0 {
			fmt.Fprintln(os.Stderr, "responses whose status openapi.json does not document:\n  "+strings.Join(bad, "\n  "))
			code = 1
		}
	}
	s.stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

func startStack(tokensPath string) (*stack, error) {
	stk, err := testkit.Start(context.Background(), testkit.Options{})
	if err != nil {
		return nil, err
	}
	s := &stack{Stack: stk, temporal: stk.Server, client: stk.Client, worker: stk.Worker, starter: stk.Starter}
	if s.tokens, err = OpenTokenStore(tokensPath); err != nil {
		s.stop()
		return nil, err
	}
	for _, tk := range []struct {
		dst    *string
		tenant string
	}{{&s.operator, ""}, {&s.acme, "acme"}, {&s.globex, "globex"}} {
		if *tk.dst, _, err = s.tokens.Create(tk.tenant == "", tk.tenant, "test"); err != nil {
			s.stop()
			return nil, err
		}
	}
	s.server, err = New(Options{
		Starter: s.starter, Client: s.client, Tokens: s.tokens, Namespace: s.temporal.Namespace(),
		TemporalUI: "http://127.0.0.1:8233", Logger: quiet, RefreshInterval: 500 * time.Millisecond,
	})
	if err != nil {
		s.stop()
		return nil, err
	}
	s.http = httptest.NewServer(s.server)
	return s, nil
}

func (s *stack) stop() {
	if s.http != nil {
		s.http.Close()
	}
	s.Stack.Stop()
}

// seen records every API answer of the tests: "METHOD /pattern status".
var (
	seenMu sync.Mutex
	seen   = map[string]bool{}
)

// record notes the status an API route answered with, for the check against openapi.json.
func record(method, path string, status int) {
	req := httptest.NewRequest(method, path, nil)
	_, pattern := shared.server.mux.Handler(req)
	if !strings.Contains(pattern, "/v1/") || strings.HasSuffix(pattern, " /v1/") || pattern == "/v1/" {
		return
	}
	seenMu.Lock()
	seen[fmt.Sprintf("%s %d", pattern, status)] = true
	seenMu.Unlock()
}

// undocumentedStatuses lists the recorded answers whose status openapi.json does not list.
func undocumentedStatuses() []string {
	doc := loadOpenAPI()
	var bad []string
	seenMu.Lock()
	defer seenMu.Unlock()
	for k := range seen {
		f := strings.Fields(k) // METHOD /path status
		op, ok := doc.Paths[f[1]][strings.ToLower(f[0])]
		if !ok {
			bad = append(bad, k+" (route not documented)")
			continue
		}
		if _, ok := op.Responses[f[2]]; !ok {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	return bad
}

type openAPIDoc struct {
	OpenAPI string                                 `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
}

type openAPIOperation struct {
	Responses map[string]json.RawMessage `json:"responses"`
}

func loadOpenAPI() openAPIDoc {
	var d openAPIDoc
	if err := json.Unmarshal(openAPI, &d); err != nil {
		panic("openapi.json: " + err.Error())
	}
	return d
}

// call makes an API request with token (none when empty) and a JSON body (raw bytes,
// a string, or a value to encode), and returns the status and the decoded body.
func call(t *testing.T, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	code, raw := callRaw(t, method, path, token, body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: answer is not a JSON object: %v\n%s", method, path, err, raw)
		}
	}
	return code, out
}

func callRaw(t *testing.T, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, shared.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, raw := check.Do(t, nil, req)
	record(method, path, resp.StatusCode)
	return resp.StatusCode, raw
}

// want fails the test unless code is the expected status.
func want(t *testing.T, what string, code, expected int, body map[string]any) {
	t.Helper()
	if code != expected {
		t.Fatalf("%s: status %d, want %d; body %v", what, code, expected, body)
	}
}

// receiver is an HTTP receiver on loopback answering with a settable status and recording
// the webhook-id of every request.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	ids    []string
}

func newReceiver(t *testing.T, status int) *receiver {
	t.Helper()
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.ids = append(r.ids, req.Header.Get("webhook-id"))
		code := r.status
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) set(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// count is how many requests carried webhook-id id.
func (r *receiver) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.ids {
		if x == id {
			n++
		}
	}
	return n
}

var seq struct {
	sync.Mutex
	n int
}

// uniq returns a name unique in this test run.
func uniq(prefix string) string {
	seq.Lock()
	defer seq.Unlock()
	seq.n++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, seq.n)
}

// putEndpoint registers an endpoint through the API with a short ladder of attempts.
func putEndpoint(t *testing.T, id, tenant, url string, attempts int, extra map[string]any) {
	t.Helper()
	body := map[string]any{"url": url, "tenant": tenant, "schedule": []string{"1s"}, "attempts": attempts, "jitter": 0, "timeout": "5s", "retention": "1h"}
	for k, v := range extra {
		body[k] = v
	}
	code, out := call(t, "PUT", "/v1/endpoints/"+id, shared.operator, body)
	want(t, "put endpoint "+id, code, http.StatusCreated, out)
}

// send sends an event through the API as token and returns its id.
func send(t *testing.T, token, endpoint, id string) string {
	t.Helper()
	code, out := call(t, "POST", "/v1/events", token, map[string]any{"endpoint_id": endpoint, "id": id, "type": "test.event", "data": map[string]any{"n": 1}})
	want(t, "send to "+endpoint, code, http.StatusAccepted, out)
	return out["id"].(string)
}

// eventually polls cond until it holds or a minute passes.
var eventually = check.Eventually

// waitState waits until the API shows acme's event id in state (the tests' endpoints are
// acme's: event ids are scoped to the tenant).
func waitState(t *testing.T, id, state string) {
	t.Helper()
	var last map[string]any
	eventually(t, "event "+id+" to be "+state, func() bool {
		_, last = call(t, "GET", "/v1/events/"+id+"?tenant=acme", shared.operator, nil)
		return last["state"] == state
	})
}

// deadLetter registers an acme endpoint (named from prefix) whose receiver answers 500, with
// a ladder of attempts, and sends it an event (named from evtPrefix) as acme; it returns
// the receiver, the endpoint and the event once the event is a dead letter.
func deadLetter(t *testing.T, prefix, evtPrefix string, attempts int) (*receiver, string, string) {
	t.Helper()
	rcv := newReceiver(t, http.StatusInternalServerError)
	ep := uniq(prefix)
	putEndpoint(t, ep, "acme", rcv.URL, attempts, nil)
	ev := send(t, shared.acme, ep, uniq(evtPrefix))
	waitState(t, ev, "dead_letter")
	return rcv, ep, ev
}

// waitListed waits until acme's dead-letter list at path (with its query) shows ev.
func waitListed(t *testing.T, path, ev string) {
	t.Helper()
	eventually(t, "the dead letter to be listed", func() bool {
		_, dl := call(t, "GET", path, shared.acme, nil)
		return slices.Contains(deadLetterIDs(dl), ev)
	})
}

// endpointSession registers an endpoint of tenant, named from prefix, whose receiver
// answers 200, and signs a browser in with token: the endpoint's id, its receiver, and the
// browser.
func endpointSession(t *testing.T, prefix, tenant, token string) (string, *receiver, *http.Client) {
	t.Helper()
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq(prefix)
	putEndpoint(t, ep, tenant, rcv.URL, 1, nil)
	c := browserClient(t)
	signIn(t, c, token)
	return ep, rcv, c
}

// browserClient is an HTTP client with a cookie jar that does not follow redirects.
func browserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn signs c in with token through the sign-in form.
func signIn(t *testing.T, c *http.Client, token string) {
	t.Helper()
	resp, err := c.Get(shared.http.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	if m == nil {
		t.Fatalf("sign-in form has no csrf field:\n%s", page)
	}
	resp, err = c.PostForm(shared.http.URL+"/signin", url.Values{"token": {token}, "csrf": {string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: status %d, want 303", resp.StatusCode)
	}
}

// get fetches a dashboard page with c.
func get(t *testing.T, c *http.Client, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, shared.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, b := check.Do(t, c, req)
	return resp.StatusCode, string(b)
}
