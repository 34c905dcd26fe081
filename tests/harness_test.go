// Package tests holds Herald's integration tests: a real Temporal server (the embedded dev
// server, in memory, on free ports), a real Herald worker and real HTTP receivers on loopback.
package tests

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/internal/testkit/check"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

// shared is the package's stack: one server, one worker, one starter.
var shared *stack

// stack wraps testkit.Stack with the names the tests use.
type stack struct {
	*testkit.Stack
	srv     *devserver.Server
	client  client.Client
	starter *starter.Client
}

// workerProcessEnv, when set to a Temporal address and namespace ("addr|namespace"), makes the test binary run only a
// Herald worker against it, until killed (see startWorkerProcess).
const workerProcessEnv = "HERALD_TEST_WORKER_PROCESS"

func TestMain(m *testing.M) {
	if target := os.Getenv(workerProcessEnv); target != "" {
		addr, ns, _ := strings.Cut(target, "|")
		runWorkerProcess(addr, ns)
		return
	}
	if target := os.Getenv(fanoutProcessEnv); target != "" {
		runFanoutProcess(target)
		return
	}
	flag.Parse()
	if testing.Short() {
		// The edit-test loop (go test -short): every test here but the replay of the
		// recorded histories starts deliveries on a real server; only the replay runs.
		fmt.Fprintln(os.Stderr, "-short: only TestReplayHistories runs in ./tests (the integration tests start a Temporal server)")
		_ = flag.Set("test.run", "^TestReplayHistories$")
		os.Exit(m.Run())
	}
	s, err := testkit.Start(context.Background(), testkit.Options{Worker: worker.Options{Recovery: testRecovery}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start test stack:", err)
		os.Exit(1)
	}
	shared = &stack{Stack: s, srv: s.Server, client: s.Client, starter: s.Starter}
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

var (
	quiet    = testkit.Quiet
	loopback = testkit.Loopback
)

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
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *receiver {
	t.Helper()
	r := &receiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.seen = append(r.seen, request{At: time.Now(), Header: req.Header.Clone(), Body: body})
		n := len(r.seen)
		answer := r.answer
		r.mu.Unlock()
		answer(n, w)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) setAnswer(a func(n int, w http.ResponseWriter)) {
	r.mu.Lock()
	r.answer = a
	r.mu.Unlock()
}

// checkSignedPerSecond fails t if more than limit of reqs were signed (webhook-timestamp) in
// any one second, and returns the most signed in one and over how many seconds they were.
func checkSignedPerSecond(t *testing.T, reqs []request, limit int) (worst, seconds int) {
	t.Helper()
	perSecond := map[int64]int{}
	for _, r := range reqs {
		ts, err := strconv.ParseInt(r.Header.Get(signature.HeaderTimestamp), 10, 64)
		if err != nil {
			t.Fatalf("request without a webhook-timestamp: %v", err)
		}
		perSecond[ts]++
		worst = max(worst, perSecond[ts])
	}
	if worst > limit {
		t.Errorf("%d requests signed in one second, limit %d", worst, limit)
	}
	return worst, len(perSecond)
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

// firstThenOK answers the first request with first, and every later one with 200.
func firstThenOK(first func(w http.ResponseWriter)) func(int, http.ResponseWriter) {
	return func(n int, w http.ResponseWriter) {
		if n == 1 {
			first(w)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

// retryAfter answers with code and the Retry-After header value.
func retryAfter(code int, value string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", value)
		w.WriteHeader(code)
	}
}

// putEndpoint registers endpoint id at url with a fast ladder, returning its secret.
func putEndpoint(t *testing.T, id, url string, o *herald.Overrides) signature.Secret {
	t.Helper()
	sec, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	_, err = shared.starter.PutEndpoint(context.Background(), herald.PutEndpointRequest{ID: id, URL: url, Secret: sec, Overrides: o})
	if err != nil {
		t.Fatalf("put endpoint %s: %v", id, err)
	}
	return sec
}

// countWhere counts the elements of s for which keep is true.
func countWhere[T any](s []T, keep func(T) bool) int {
	n := 0
	for _, e := range s {
		if keep(e) {
			n++
		}
	}
	return n
}

// fast is a scaled-down policy: the ladder's shape with millisecond-to-second waits.
func fast(attempts int, delays ...time.Duration) *herald.Overrides {
	zero := 0.0
	return &herald.Overrides{
		Ladder:    &policy.LadderOverride{Delays: duration.Of(delays...), Attempts: attempts, Jitter: &zero},
		Retention: herald.Duration(time.Hour),
		Timeout:   herald.Duration(5 * time.Second),
	}
}

// waitState polls the status query until the delivery reaches state.
func waitState(t *testing.T, eventID string, state herald.State) herald.Status {
	t.Helper()
	return waitFor(t, shared.starter, eventID, state)
}

// eventually polls cond until it holds or a minute passes.
var eventually = check.Eventually

// secondWorker starts another Herald worker, with its own Temporal connection and gate,
// renewing its leases every renew, until the test ends.
func secondWorker(t *testing.T, renew time.Duration) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: shared.srv.FrontendAddress(), Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w, err := worker.New(c, worker.Options{Net: loopback, RenewInterval: renew, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

// runWorkerProcess runs a Herald worker against the Temporal server at addr until the
// process is killed.
func runWorkerProcess(addr, namespace string) {
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: namespace, Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker process:", err)
		os.Exit(1)
	}
	w, err := worker.New(c, worker.Options{Net: loopback, RenewInterval: 200 * time.Millisecond, Logger: quiet})
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker process:", err)
		os.Exit(1)
	}
	fmt.Println("worker running")
	select {}
}

// startWorkerProcess starts a Herald worker in a process of its own (this test binary,
// re-run), connected to the shared server; kill it with the returned command's Process.
func startWorkerProcess(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerProcessEnv+"="+shared.srv.FrontendAddress()+"|"+shared.srv.Namespace())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "worker running") {
		t.Fatalf("worker process did not start: %q, %v", line, err)
	}
	return cmd
}
