package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// receiver is an HTTP receiver on loopback that answers with a scripted handler, counts
// requests per webhook-id and records the peak of concurrent requests.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	answer   func(n int, w http.ResponseWriter)
	n        int
	byID     map[string]int
	at       []time.Time
	now      atomic.Int64
	peak     atomic.Int64
	holdTime time.Duration
}

func newReceiver(t *testing.T, hold time.Duration, answer func(n int, w http.ResponseWriter)) *receiver {
	t.Helper()
	r := &receiver{answer: answer, byID: map[string]int{}, holdTime: hold}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		now := r.now.Add(1)
		for p := r.peak.Load(); now > p && !r.peak.CompareAndSwap(p, now); p = r.peak.Load() {
		}
		r.mu.Lock()
		r.n++
		n, answer := r.n, r.answer
		r.byID[req.Header.Get("webhook-id")]++
		r.at = append(r.at, time.Now())
		r.mu.Unlock()
		time.Sleep(r.holdTime)
		r.now.Add(-1)
		answer(n, w)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) setAnswer(a func(int, http.ResponseWriter)) {
	r.mu.Lock()
	r.answer = a
	r.mu.Unlock()
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *receiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

func status(code int) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) { w.WriteHeader(code) }
}

// put registers endpoint id at url with the CLI, with a scaled-down ladder and extra flags.
func put(t *testing.T, c *cluster, id, url string, extra ...string) {
	t.Helper()
	args := append([]string{"endpoint", "put", id, "--url", url, "--jitter", "0", "--timeout", "10s"}, extra...)
	if _, err := c.herald(args...); err != nil {
		t.Fatal(err)
	}
}

// send sends one event through the API and returns its id.
func send(t *testing.T, c *cluster, endpoint string, data any) string {
	t.Helper()
	var res struct {
		ID string `json:"id"`
	}
	if _, err := c.call("POST", "/v1/events", map[string]any{"endpoint_id": endpoint, "type": "test.event", "data": data}, &res); err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// eventStatus is what the API and `herald status -o json` show of a delivery.
type eventStatus struct {
	State    string `json:"state"`
	Attempts []struct {
		Number int `json:"number"`
		Result struct {
			Status int `json:"status_code"`
		} `json:"result"`
	} `json:"attempts"`
}

// cliStatus reads an event's status with `herald status -o json`.
func cliStatus(c *cluster, id string) (eventStatus, error) {
	var st eventStatus
	out, err := c.herald("status", id, "-o", "json")
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal([]byte(out), &st)
}

// waitState polls the event's status through the CLI until it is state, for up to limit.
func waitState(t *testing.T, c *cluster, id, state string, limit time.Duration) eventStatus {
	t.Helper()
	var last eventStatus
	err := waitFor("event "+id+" "+state, limit, func() error {
		st, err := cliStatus(c, id)
		if err != nil {
			return err
		}
		last = st
		if st.State != state {
			return fmt.Errorf("state %s", st.State)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// endpointState reads an endpoint through the API.
type endpointState struct {
	InFlight int `json:"in_flight"`
	Queue    int `json:"queue"`
	Circuit  struct {
		State string `json:"state"`
	} `json:"circuit"`
}

func getEndpoint(t *testing.T, c *cluster, id string) endpointState {
	t.Helper()
	var e endpointState
	if _, err := c.call("GET", "/v1/endpoints/"+id, nil, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDelivery: an event sent through the API reaches the receiver and shows as delivered
// in `herald status`, on the cluster.
func TestDelivery(t *testing.T) {
	c := need(t)
	rcv := newReceiver(t, 0, status(http.StatusOK))
	put(t, c, "delivery", rcv.URL)
	id := send(t, c, "delivery", map[string]int{"order": 1})
	st := waitState(t, c, id, "delivered", 2*time.Minute)
	if len(st.Attempts) != 1 || rcv.count() != 1 {
		t.Fatalf("%d attempts on record, %d requests at the receiver; want 1 and 1", len(st.Attempts), rcv.count())
	}
}

// TestRetryAfter: a 503 with Retry-After is retried after the wait it asks for, then
// delivered; the record shows both attempts.
func TestRetryAfter(t *testing.T) {
	c := need(t)
	rcv := newReceiver(t, 0, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	// The ladder's own wait (1m) is far longer than the receiver's 2 s: a delivery within
	// the test's limit shows the Retry-After was used.
	put(t, c, "retry-after", rcv.URL, "--schedule", "1m", "--attempts", "3")
	id := send(t, c, "retry-after", "hello")
	st := waitState(t, c, id, "delivered", 45*time.Second)
	if len(st.Attempts) != 2 || st.Attempts[0].Result.Status != 503 || st.Attempts[1].Result.Status != 200 {
		t.Fatalf("attempts %+v: want a 503 then a 200", st.Attempts)
	}
	rcv.mu.Lock()
	gap := rcv.at[1].Sub(rcv.at[0])
	rcv.mu.Unlock()
	if gap < 2*time.Second {
		t.Fatalf("second attempt %s after the first: Retry-After asked for 2s", gap)
	}
}

// TestDeadLetterReplay: an event whose attempts all fail is a dead letter, listed by
// `herald dlq list`; replayed through the API once the receiver is back, it is delivered.
func TestDeadLetterReplay(t *testing.T) {
	c := need(t)
	rcv := newReceiver(t, 0, status(http.StatusInternalServerError))
	put(t, c, "dead", rcv.URL, "--schedule", "1s", "--attempts", "2", "--breaker-consecutive", "50")
	id := send(t, c, "dead", "lost")
	waitState(t, c, id, "dead_letter", 2*time.Minute)
	if err := waitFor("dlq list shows "+id, time.Minute, func() error {
		out, err := c.herald("dlq", "list", "--endpoint", "dead", "-o", "json")
		if err != nil {
			return err
		}
		if !strings.Contains(out, id) {
			return fmt.Errorf("not listed: %s", out)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rcv.setAnswer(status(http.StatusOK))
	if _, err := c.call("POST", "/v1/events/"+id+"/replay", nil, nil); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, id, "delivered", 2*time.Minute)
	if n := rcv.count(); n != 3 {
		t.Fatalf("receiver saw %d requests: want 2 failed attempts and the replay's one", n)
	}
}

// TestSetupNamespaceAgain: the namespace script, run again on a set-up namespace (as
// compose does on every `up`), keeps what exists and succeeds.
func TestSetupNamespaceAgain(t *testing.T) {
	c := need(t)
	err := c.script("setup-namespace-again", "setup-namespace.sh", []string{
		"TEMPORAL_ADDRESS=" + c.address, "TEMPORAL_NAMESPACE=" + c.namespace, "HERALD=" + c.bin + "/herald",
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.herald("namespace", "setup")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "namespace "+c.namespace+" exists") {
		t.Fatalf("herald namespace setup on a set-up namespace said %q; want that it exists", out)
	}
}
