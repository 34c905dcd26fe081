package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// answer handles one request to an endpoint's receiver. n is the request's number for its
// webhook-id (1 for the first attempt of an event, 2 for the second, ...). It writes the
// status itself.
type answer func(w http.ResponseWriter, r *http.Request, n int)

// arrival is one request a receiver saw.
type arrival struct {
	At       time.Time
	Endpoint string
	ID       string
	N        int
}

// receivers is one HTTP server on loopback standing in for every endpoint of the bench:
// endpoint id is the path. It records when each webhook-id first arrived, every arrival,
// and how many requests each endpoint had in progress at most.
type receivers struct {
	srv  *http.Server
	base string

	mu       sync.Mutex
	answers  map[string]answer
	first    map[string]time.Time
	firstAt  map[delivery]time.Time // per endpoint and webhook-id
	count    map[string]int
	arrivals []arrival
	inFlight map[string]int
	maxIn    map[string]int
}

func startReceivers() (*receivers, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receivers{
		base:    "http://" + ln.Addr().String(),
		answers: map[string]answer{}, first: map[string]time.Time{}, firstAt: map[delivery]time.Time{}, count: map[string]int{},
		inFlight: map[string]int{}, maxIn: map[string]int{},
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return r, nil
}

func (r *receivers) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	_ = r.srv.Close()
}

// url registers endpoint's answer and returns its URL.
func (r *receivers) url(endpoint string, a answer) string {
	r.mu.Lock()
	r.answers[endpoint] = a
	r.mu.Unlock()
	return r.base + "/" + endpoint
}

func (r *receivers) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	endpoint := strings.TrimPrefix(req.URL.Path, "/")
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	a := r.answers[endpoint]
	r.count[id]++
	n := r.count[id]
	if n == 1 {
		r.first[id] = now
	}
	if d := (delivery{endpoint, id}); r.firstAt[d].IsZero() {
		r.firstAt[d] = now
	}
	r.arrivals = append(r.arrivals, arrival{At: now, Endpoint: endpoint, ID: id, N: n})
	r.inFlight[endpoint]++
	r.maxIn[endpoint] = max(r.maxIn[endpoint], r.inFlight[endpoint])
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight[endpoint]--
		r.mu.Unlock()
	}()
	if a == nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	a(w, req, n)
}

// firstSeen returns when each of ids first arrived (zero when not yet).
func (r *receivers) firstSeen(ids []string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return timesOf(r.first, ids)
}

// delivery names one event's delivery to one endpoint.
type delivery struct{ endpoint, id string }

// firstSeenAt returns when each of ds first arrived at its endpoint (zero when not yet).
func (r *receivers) firstSeenAt(ds []delivery) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Time, len(ds))
	for i, d := range ds {
		out[i] = r.firstAt[d]
	}
	return out
}

// timesOf returns at[id] for each of ids, zero where at has none.
func timesOf(at map[string]time.Time, ids []string) []time.Time {
	out := make([]time.Time, len(ids))
	for i, id := range ids {
		out[i] = at[id]
	}
	return out
}

// requests returns how many requests each of ids had.
func (r *receivers) requests(ids []string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = r.count[id]
	}
	return out
}

// arrivalsOf returns the arrivals at endpoint, in order.
func (r *receivers) arrivalsOf(endpoint string) []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []arrival
	for _, a := range r.arrivals {
		if a.Endpoint == endpoint {
			out = append(out, a)
		}
	}
	return out
}

// maxInFlight is the most requests endpoint had in progress at once.
func (r *receivers) maxInFlight(endpoint string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxIn[endpoint]
}

// waitUntil polls cond every 20ms until it holds, ctx ends or timeout passes; it reports
// whether cond held.
func waitUntil(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// allSeen reports whether every id has at least n requests.
func (r *receivers) allSeen(ids []string, n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if r.count[id] < n {
			return false
		}
	}
	return true
}
