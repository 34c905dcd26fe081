package tests

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// TestFanoutFindsSubscribersExactly: a send to a tenant reaches exactly the endpoints of
// that tenant subscribed to its type, found by their search attributes: not the tenant
// whose name differs only in case, nor types that differ only in case, nor endpoints that
// just left the tenant or the type; and every put that returned before the send, from
// another client too (read-your-writes), including a subscription long enough to be
// published hashed.
func TestFanoutFindsSubscribersExactly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, status(200))
	const tenant = "exact-tenant"
	const n = 300
	var puts errgroup.Group
	puts.SetLimit(16)
	want := []string{}
	for i := range n {
		id := fmt.Sprintf("exact-%03d", i)
		types := []string{"noise.*"}
		switch {
		case i%50 == 0:
			types = []string{"order.paid"}
			want = append(want, id)
		case i%50 == 1:
			types = []string{"Order.paid", "order.Paid", "order.paid.x", "order"}
		case i%50 == 2:
			types = []string{"order.*"}
			want = append(want, id)
		}
		puts.Go(func() error { return subscribe(id, tenant, rcv.URL, types, 3) })
	}
	// The same names in a tenant whose name differs only in case.
	for i := range 5 {
		puts.Go(func() error { return subscribe(fmt.Sprintf("exact-upper-%d", i), "Exact-Tenant", rcv.URL, nil, 3) })
	}
	if err := puts.Wait(); err != nil {
		t.Fatal(err)
	}
	// Put just before the send, through another client: a subscription so long that it
	// is published hashed, a move out of the tenant, and a change of type.
	other := starter.New(shared.client, starter.Options{})
	var long []string
	for i := range 60 {
		long = append(long, fmt.Sprintf("some.rather.long.event.type.name.number.%03d", i))
	}
	long = append(long, "order.paid")
	want = append(want, "exact-long")
	put := func(id, tenant string, types []string) {
		t.Helper()
		if _, err := other.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, Tenant: tenant, URL: rcv.URL, Types: types, Overrides: fast(3, time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	put("exact-long", tenant, long)
	put("exact-000", "exact-elsewhere", []string{"order.paid"}) // moved away
	put("exact-002", tenant, []string{"invoice.*"})             // unsubscribed
	want = slices.DeleteFunc(want, func(id string) bool { return id == "exact-000" || id == "exact-002" })
	slices.Sort(want)

	res, err := shared.starter.Publish(ctx, tenant, starter.Event{ID: "evt_exact", Type: "order.paid", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range res.Deliveries {
		got = append(got, d.EndpointID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the send reached %d endpoints %v\nwant %d %v", len(got), got, len(want), want)
	}
	eventually(t, "every subscribed endpoint to receive the event", func() bool { return len(rcv.requests()) >= len(want) })
	if ids, err := shared.starter.Subscribers(ctx, "exact-elsewhere", "order.paid"); err != nil || !slices.Equal(ids, []string{"exact-000"}) {
		t.Fatalf("the moved endpoint's new tenant finds %v (%v), want it", ids, err)
	}
}

// TestPublishNeedsNoWorker: a send to a tenant finds its endpoints and starts their
// deliveries while no worker polls the task queue it sends on: a worker outage does not
// stop intake.
func TestPublishNeedsNoWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, status(200))
	const tenant = "fan-no-worker"
	putSubscribed(t, "nw-1", tenant, rcv.URL, []string{"order.*"}, 3)
	putSubscribed(t, "nw-2", tenant, rcv.URL, []string{"invoice.*"}, 3)
	const queue = "herald-test-no-worker"
	s := starter.New(shared.client, starter.Options{TaskQueue: queue})
	res, err := s.Publish(ctx, tenant, starter.Event{ID: "evt_no_worker", Type: "order.paid", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deliveries) != 1 || res.Deliveries[0].EndpointID != "nw-1" {
		t.Fatalf("the send reached %+v, want nw-1", res.Deliveries)
	}
	d := res.Deliveries[0]
	desc, err := shared.client.DescribeWorkflowExecution(ctx, d.WorkflowID, d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if q := desc.GetExecutionConfig().GetTaskQueue().GetName(); q != queue {
		t.Fatalf("the delivery waits on task queue %s, want %s", q, queue)
	}
	for _, id := range []string{d.WorkflowID, herald.DeliveryID(tenant, "evt_no_worker")} {
		_ = shared.client.TerminateWorkflow(ctx, id, "", "test over: no worker polls its queue")
	}
}
