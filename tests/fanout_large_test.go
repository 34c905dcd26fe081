package tests

import (
	"context"
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// TestFanoutLargeTenant: a tenant with more endpoints than a directory publishes in its
// memo (herald.MemoSubscriptionsMax). Its memo holds only the Large marker, written once,
// so a put does not rewrite every entry; a send asks the directory for the endpoints of
// its type, and an endpoint subscribed just before the send still receives it.
func TestFanoutLargeTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, status(200))
	const tenant = "large-tenant"
	n := herald.MemoSubscriptionsMax + 20
	var puts errgroup.Group
	puts.SetLimit(8)
	for i := range n {
		puts.Go(func() error {
			types := []string{"noise.*"}
			if i%50 == 0 {
				types = []string{"order.paid"}
			}
			return subscribe(fmt.Sprintf("large-%03d", i), tenant, rcv.URL, types, 3)
		})
	}
	if err := puts.Wait(); err != nil {
		t.Fatal(err)
	}

	// The first read of a tenant's directory backfills it, and answers with every entry.
	if _, err := shared.starter.Directory(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	dir, err := shared.starter.Directory(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if !dir.Large || len(dir.Entries) != 0 {
		t.Fatalf("directory of %d endpoints read as large=%v with %d entries, want the Large marker alone", n, dir.Large, len(dir.Entries))
	}
	// Subscribed just before the send: read-your-writes through the query.
	putSubscribed(t, "large-late", tenant, rcv.URL, []string{"order.*"}, 3)

	res, err := shared.starter.Publish(ctx, tenant, starter.Event{ID: "evt_large", Type: "order.paid", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"large-late": true}
	for i := 0; i < n; i += 50 {
		want[fmt.Sprintf("large-%03d", i)] = true
	}
	got := map[string]bool{}
	for _, d := range res.Deliveries {
		got[d.EndpointID] = true
	}
	if len(got) != len(want) {
		t.Fatalf("send reached %d endpoints %v, want %d %v", len(got), got, len(want), want)
	}
	for id := range want {
		if !got[id] {
			t.Errorf("endpoint %s subscribed to order.paid got no delivery", id)
		}
	}
	eventually(t, "every subscribed endpoint to receive the event", func() bool { return len(rcv.requests()) >= len(want) })
}
