package tests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// listAll pages through the endpoints f selects, limit at a time, and returns them in
// order with the number of pages; after calls it after the first page.
func listAll(t *testing.T, s *starter.Client, f herald.EndpointFilter, limit int, after func()) ([]herald.EndpointState, int) {
	t.Helper()
	var all []herald.EndpointState
	var cursor []byte
	for pages := 1; ; pages++ {
		page, err := s.ListEndpoints(context.Background(), f, cursor, limit)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(page.Endpoints) > limit {
			t.Fatalf("page %d holds %d endpoints, limit %d", pages, len(page.Endpoints), limit)
		}
		all = append(all, page.Endpoints...)
		if pages == 1 && after != nil {
			after()
		}
		if len(page.Next) == 0 {
			return all, pages
		}
		if pages > 1000 {
			t.Fatal("the listing does not end")
		}
		cursor = page.Next
	}
}

// putMany registers n endpoints named prefix-0 ... in tenant, 8 at once, and waits until
// visibility shows them registered (HeraldCircuit set).
func putMany(t *testing.T, tenant, prefix, url string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%03d", prefix, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := shared.starter.PutEndpoint(context.Background(), herald.PutEndpointRequest{ID: ids[i], URL: url, Tenant: tenant}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids
}

// countEndpoints counts the endpoints f selects in visibility.
func countEndpoints(t *testing.T, f herald.EndpointFilter) int {
	t.Helper()
	resp, err := shared.client.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: f.Query().String()})
	if err != nil {
		t.Fatal(err)
	}
	return int(resp.GetCount())
}

func TestListEndpointsPagesThroughOneTenant(t *testing.T) {
	rcv := newReceiver(t, status(200))
	stamp := time.Now().UnixNano() % 1e9
	tenant, other := fmt.Sprintf("list-a-%d", stamp), fmt.Sprintf("list-b-%d", stamp)
	const n, late, limit = 230, 6, 23
	want := putMany(t, tenant, tenant, rcv.URL, n)
	putMany(t, other, other, rcv.URL, 20)
	f := herald.EndpointFilter{Tenant: tenant}
	eventually(t, "visibility shows the tenant's endpoints registered", func() bool { return countEndpoints(t, f) == n })

	// A clock a minute ahead of the server's: the listing splits at the real time of its
	// first page, so the endpoints put after it are walked in the listing's second part.
	s := starter.New(shared.client, starter.Options{Now: func() time.Time { return time.Now().Add(time.Minute) }})
	got, pages := listAll(t, s, f, limit, func() {
		want = append(want, putMany(t, tenant, tenant+"-late", rcv.URL, late)...)
		eventually(t, "visibility shows the late endpoints", func() bool { return countEndpoints(t, f) == n+late })
	})
	if pages < n/limit {
		t.Errorf("%d endpoints came in %d pages of %d", len(got), pages, limit)
	}
	seen := map[string]int{}
	for _, e := range got {
		seen[e.ID]++
		if e.Tenant != tenant {
			t.Errorf("endpoint %s of tenant %q in the listing of %s", e.ID, e.Tenant, tenant)
		}
		if e.URL != rcv.URL || e.Error != "" {
			t.Errorf("endpoint %s listed without its state: %+v", e.ID, e)
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("endpoint %s listed %d times, want once", id, seen[id])
		}
	}
	if len(got) != len(want) {
		t.Errorf("listed %d endpoints, want %d", len(got), len(want))
	}

	// The state filter selects in visibility too; a single page when it holds them all.
	closed, pages := listAll(t, shared.starter, herald.EndpointFilter{Tenant: other, State: "closed"}, starter.MaxEndpointPage, nil)
	if len(closed) != 20 || pages != 1 {
		t.Errorf("tenant %s, closed: %d endpoints in %d pages, want 20 in 1", other, len(closed), pages)
	}
	if open, _ := listAll(t, shared.starter, herald.EndpointFilter{Tenant: other, State: "open"}, 10, nil); len(open) != 0 {
		t.Errorf("tenant %s, open: %d endpoints, want none", other, len(open))
	}
}

func TestListEndpointsRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		f      herald.EndpointFilter
		cursor []byte
		limit  int
	}{
		{"limit over the most", herald.EndpointFilter{}, nil, starter.MaxEndpointPage + 1},
		{"negative limit", herald.EndpointFilter{}, nil, -1},
		{"tenant outside the grammar", herald.EndpointFilter{Tenant: "a' OR 1=1 -- "}, nil, 0},
		{"unknown state", herald.EndpointFilter{State: "broken"}, nil, 0},
		{"cursor not JSON", herald.EndpointFilter{}, []byte("garbage"), 0},
		{"cursor without its split", herald.EndpointFilter{}, []byte(`{"token":{}}`), 0},
		{"cursor with a token not an object", herald.EndpointFilter{}, []byte(`{"split":"2026-01-01T00:00:00Z","token":"x"}`), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := shared.starter.ListEndpoints(ctx, tc.f, tc.cursor, tc.limit)
			if !errors.Is(err, starter.ErrInvalid) {
				t.Fatalf("ListEndpoints = %v, want ErrInvalid", err)
			}
		})
	}
}
