package gate

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// fakeEndpoints stands in for the endpoint workflows and the stats shards: it answers
// admission reads with view, grants what a lease asks for (up to grant, if set; the
// view's free permits are then what the cap leaves) and records every call. A test that must see a lease in flight sets hold: each lease then
// waits for a reply (or its context) on it.
type fakeEndpoints struct {
	mu      sync.Mutex
	view    herald.AdmissionView
	viewErr error
	reads   int
	grant   int // the most permits a lease gets; 0: what it asks for
	// shares are the rate shares every lease reply carries (a rate-leased endpoint).
	shares   []policy.RateShare
	leases   []herald.LeaseRequest
	waits    [][]string
	renews   []string
	keys     []uint32
	dones    [][]herald.Done
	reports  []herald.OutcomeReport
	counts   map[string][]herald.EndpointCounts
	countErr error
	// batches are the sizes of the counts signals sent, in order.
	batches []int

	// hold, when set, makes each lease wait for its answer here; once it is closed, leases
	// are granted as above.
	hold chan *leaseAnswer
	// leased receives each lease request as it is sent, when set; reported each report.
	leased   chan herald.LeaseRequest
	reported chan herald.OutcomeReport
}

// leaseAnswer is a test's answer to a lease that waits on fakeEndpoints.hold.
type leaseAnswer struct {
	permits int
	err     error
}

func (f *fakeEndpoints) Admission(ctx context.Context, id string) (herald.AdmissionView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.viewErr != nil {
		return herald.AdmissionView{}, f.viewErr
	}
	v := f.view
	v.Endpoint.ID = id
	return v, nil
}

func (f *fakeEndpoints) Lease(ctx context.Context, id string, req herald.LeaseRequest) (herald.LeaseReply, error) {
	f.mu.Lock()
	f.leases = append(f.leases, req)
	hold, leased := f.hold, f.leased
	f.mu.Unlock()
	if leased != nil {
		leased <- req
	}
	permits := req.Want
	if hold != nil {
		select {
		case a := <-hold:
			switch {
			case a == nil: // hold closed: grant as asked
			case a.err != nil:
				return herald.LeaseReply{}, a.err
			default:
				permits = a.permits
			}
		case <-ctx.Done():
			return herald.LeaseReply{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.grant > 0 {
		permits = min(permits, f.grant)
	}
	f.view.Snapshot.Free = max(0, f.view.Snapshot.Cap-permits)
	snap := f.view.Snapshot
	ep := f.view.Endpoint
	ep.ID = id
	return herald.LeaseReply{LeaseReply: policy.LeaseReply{Permits: permits, Rate: f.shares}, Endpoint: ep, Snapshot: snap}, nil
}

func (f *fakeEndpoints) Wait(ctx context.Context, id string, r herald.WaitRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, append([]string(nil), r.Waiters...))
	f.renews = append(f.renews, r.Renew...)
	f.keys = append(f.keys, r.Keys...)
	return nil
}

func (f *fakeEndpoints) Dones(ctx context.Context, id string, dones []herald.Done) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dones = append(f.dones, append([]herald.Done(nil), dones...))
	return nil
}

func (f *fakeEndpoints) Outcomes(ctx context.Context, id string, r herald.OutcomeReport) error {
	f.mu.Lock()
	f.reports = append(f.reports, r)
	reported := f.reported
	f.mu.Unlock()
	if reported != nil {
		reported <- r
	}
	return nil
}

func (f *fakeEndpoints) Counts(ctx context.Context, shard string, counts []herald.EndpointCounts) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.countErr != nil {
		return f.countErr
	}
	if f.counts == nil {
		f.counts = map[string][]herald.EndpointCounts{}
	}
	f.counts[shard] = append(f.counts[shard], counts...)
	f.batches = append(f.batches, len(counts))
	return nil
}

// leaseCount is how many leases were asked for.
func (f *fakeEndpoints) leaseCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.leases)
}

// closedView is an endpoint whose circuit is closed, with cap and free permits, that trips
// after threshold consecutive failures.
func closedView(capNow, free, threshold int) herald.AdmissionView {
	return herald.AdmissionView{
		Endpoint: herald.Endpoint{URL: "https://example.test/hook", Tenant: herald.DefaultTenant},
		Snapshot: policy.Snapshot{Circuit: policy.CircuitClosed, Cap: capNow, Free: free, Threshold: threshold, Ticket: policy.Ticket{Epoch: 1}},
	}
}

// attemptTimeout is every endpoint's attempt timeout in these tests.
const attemptTimeout = 30 * time.Second

// newGate returns a gate over f that renews every hour: the tests run its passes themselves.
func newGate(f *fakeEndpoints) *Gate {
	return New(f, time.Hour, func(herald.Endpoint) time.Duration { return attemptTimeout },
		slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// entryOf returns the gate's entry for endpoint id, or nil.
func entryOf(g *Gate, id string) *gateEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.entries[id]
}

// lease returns endpoint id's local lease, read under its lock.
func lease(g *Gate, id string) policy.LocalLease {
	e := entryOf(g, id)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.h
}

// settle waits for the renewal or report in flight at endpoint id, if any, to be applied.
func settle(t *testing.T, g *Gate, id string) {
	t.Helper()
	e := entryOf(g, id)
	e.mu.Lock()
	c := e.call
	e.mu.Unlock()
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.wait(ctx); err == context.DeadlineExceeded {
		t.Fatal("the call in flight did not end")
	}
}

// admit acquires an attempt at endpoint id and fails the test unless it is admitted.
func admit(t *testing.T, g *Gate, id string) *Admission {
	t.Helper()
	a, h, err := g.Acquire(context.Background(), id, "", nil)
	if err != nil || a == nil {
		t.Fatalf("Acquire(%s) = %v, %+v, %v; want admitted", id, a, h, err)
	}
	return a
}

// delivered is a result of a delivered attempt.
func delivered(at time.Time) herald.Result {
	return herald.Result{Outcome: herald.OutcomeDelivered, StartedAt: at, Duration: herald.Duration(10 * time.Millisecond)}
}

// failed is a result of a failed attempt (a 503).
func failed(at time.Time) herald.Result {
	r := herald.Result{Outcome: herald.OutcomeHTTPStatus, StartedAt: at, Duration: herald.Duration(10 * time.Millisecond)}
	r.StatusCode = 503
	return r
}
