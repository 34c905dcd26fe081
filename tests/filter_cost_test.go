package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// TestFanoutFilterCost measures what filters add to a send to a tenant of
// HERALD_TEST_FILTER_N endpoints, each with a filter (half of them true on the event): the
// time to find the subscribers alone, to find them with their filters (from the records'
// memos) and evaluate those, and the whole send. It logs the figures and runs only when
// HERALD_TEST_FILTER_N is set (e.g. 1000): it registers that many endpoints.
func TestFanoutFilterCost(t *testing.T) {
	v := os.Getenv("HERALD_TEST_FILTER_N")
	if v == "" {
		t.Skip("set HERALD_TEST_FILTER_N (e.g. 1000) to measure")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 {
		t.Fatalf("HERALD_TEST_FILTER_N=%q: give a count of at least 2", v)
	}
	ctx := context.Background()
	rcv := newReceiver(t, status(200))
	const tenant = "filter-cost"
	secret, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]herald.PutEndpointRequest, n)
	for i := range reqs {
		f := fmt.Sprintf(`data.amount > %d && data.customer.country in ["FR", "DE"]`, 100*(i%2))
		reqs[i] = herald.PutEndpointRequest{ID: fmt.Sprintf("filter-cost-%05d", i), Tenant: tenant, URL: rcv.URL, Secret: secret, Types: []string{"order.*"}, Filter: &f}
	}
	for from := 0; from < n; from += starter.MaxPutEndpoints {
		if _, err := shared.starter.PutEndpoints(ctx, reqs[from:min(from+starter.MaxPutEndpoints, n)], nil); err != nil {
			t.Fatal(err)
		}
	}
	var reads int
	st := starter.New(shared.client, starter.Options{EagerStart: true, OnFilterRead: func(string) { reads++ }})
	ev := starter.Event{ID: "evt_filter_cost", Type: "order.paid", Data: json.RawMessage(`{"order_id": 42, "amount": 50, "customer": {"country": "FR"}}`)}
	// Each lookup five times, alternating; the medians.
	var finds, filters []time.Duration
	for range 5 {
		began := time.Now()
		subs, err := st.Subscribers(ctx, tenant, ev.Type)
		finds = append(finds, time.Since(began))
		if err != nil || len(subs) != n {
			t.Fatalf("subscribers: %d, %v", len(subs), err)
		}
		began = time.Now()
		to, filtered, err := st.Receivers(ctx, tenant, ev)
		filters = append(filters, time.Since(began))
		if err != nil || len(to) != n/2 || len(filtered) != n-n/2 {
			t.Fatalf("receivers: %d, filtered %d, %v", len(to), len(filtered), err)
		}
	}
	slices.Sort(finds)
	slices.Sort(filters)
	find, withFilters := finds[2], filters[2]
	began := time.Now()
	res, err := st.Publish(ctx, tenant, ev)
	send := time.Since(began)
	if err != nil || len(res.Deliveries) != n/2 {
		t.Fatalf("publish: %d deliveries, %v", len(res.Deliveries), err)
	}
	t.Logf("%d subscribers: find %s; find with filters and evaluate %s (filters add %s, %.1f%% of the send); send %s to %d; %d filters read from endpoints",
		n, find.Round(time.Microsecond), withFilters.Round(time.Microsecond), (withFilters - find).Round(time.Microsecond),
		100*(withFilters-find).Seconds()/send.Seconds(), send.Round(time.Millisecond), len(res.Deliveries), reads)
}
