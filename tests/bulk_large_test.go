package tests

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// bulkLargeN is how many endpoints TestBulkPutLargeTenant registers: 20,000 unless
// HERALD_TEST_BULK_N says otherwise (to measure at other sizes).
func bulkLargeN(t *testing.T) int {
	n := 20_000
	if v := os.Getenv("HERALD_TEST_BULK_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			t.Fatalf("HERALD_TEST_BULK_N=%q: give a count of at least 2", v)
		}
	}
	return n
}

// TestBulkPutLargeTenant registers 20,000 endpoints in one tenant through the bulk path
// (starter.PutEndpoints, in calls of starter.MaxPutEndpoints as the CLI makes them) and
// sends to the tenant, right after, an event of a type only the last endpoint registered
// subscribes to: that endpoint receives it, and no other. It logs the registration rate.
func TestBulkPutLargeTenant(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, status(200))
	n := bulkLargeN(t)
	const tenant = "bulk-large"
	secret, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]herald.PutEndpointRequest, n)
	for i := range reqs {
		reqs[i] = herald.PutEndpointRequest{ID: fmt.Sprintf("bulk-large-%06d", i), Tenant: tenant, URL: rcv.URL, Secret: secret, Types: []string{"noise.*"}}
	}
	last := reqs[n-1].ID
	reqs[n-1].Types = []string{"bulk.last"}

	began := time.Now()
	for from := 0; from < n; from += starter.MaxPutEndpoints {
		chunk := reqs[from:min(from+starter.MaxPutEndpoints, n)]
		results, err := shared.starter.PutEndpoints(ctx, chunk, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			if r.Outcome != starter.BulkCreated {
				t.Fatalf("put %d (%s): %s, %v", from+i, chunk[i].ID, r.Outcome, r.Err)
			}
		}
		t.Logf("%d endpoints registered after %s", from+len(chunk), time.Since(began).Round(time.Millisecond))
	}
	took := time.Since(began)
	t.Logf("registered %d endpoints in %s: %.0f/s", n, took.Round(time.Millisecond), float64(n)/took.Seconds())

	res, err := shared.starter.Publish(ctx, tenant, starter.Event{Type: "bulk.last", Data: []byte(`{"last":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deliveries) != 1 || res.Deliveries[0].EndpointID != last {
		t.Fatalf("send to the tenant reached %+v, want %s alone", res.Deliveries, last)
	}
	eventually(t, "the last endpoint registered to receive the event", func() bool {
		for _, r := range rcv.requests() {
			if r.Header.Get("webhook-id") == res.EventID {
				return true
			}
		}
		return false
	})
}
