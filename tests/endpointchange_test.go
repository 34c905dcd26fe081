package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// TestEndpointChangeReachesEveryWorker: once a URL change, and then a secret rotation, has
// returned, every attempt that starts afterwards, on either of two workers, goes to the new
// URL, signed with the new secret, while traffic never stops.
func TestEndpointChangeReachesEveryWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	secondWorker(t, time.Second)
	lazy := starter.New(shared.client, starter.Options{}) // no eager start: both workers take events

	oldURL, newURL := newReceiver(t, status(http.StatusOK)), newReceiver(t, status(http.StatusOK))
	oldSecret := putEndpoint(t, "ryw", oldURL.URL, fast(3, time.Second))

	// Traffic all along: an event every 20 ms, each noted with whether it was sent after
	// the change had returned.
	type sent struct {
		id    string
		after int // how many changes had returned when it was sent
	}
	var (
		mu      sync.Mutex
		events  []sent
		changes int
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			mu.Lock()
			n := changes
			mu.Unlock()
			res, err := lazy.Send(ctx, starter.Event{Type: "test.event", EndpointID: "ryw", Data: json.RawMessage(`{}`)})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			events = append(events, sent{res.EventID, n})
			mu.Unlock()
		}
	}()
	// settle lets traffic flow as the endpoint is now: 1.5 s, for both workers to know it (a
	// worker reads it again at least once a second), and at least enough events to tell,
	// however slowly a loaded machine sends them.
	const enough = 10
	settle := func() {
		time.Sleep(1500 * time.Millisecond)
		eventually(t, "traffic between the changes", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return countWhere(events, func(e sent) bool { return e.after == changes }) >= enough
		})
	}
	changed := func(req herald.PutEndpointRequest) {
		settle()
		if _, err := shared.starter.PutEndpoint(ctx, req); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		changes++
		mu.Unlock()
	}
	changed(herald.PutEndpointRequest{ID: "ryw", URL: newURL.URL})
	newSecret, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	changed(herald.PutEndpointRequest{ID: "ryw", RotateTo: newSecret})
	settle()
	close(stop)
	<-done

	for _, e := range events {
		waitState(t, e.id, herald.StateDelivered)
	}
	at := map[string]request{}
	for _, r := range oldURL.requests() {
		at[r.Header.Get("webhook-id")] = r
	}
	moved := map[string]request{}
	for _, r := range newURL.requests() {
		moved[r.Header.Get("webhook-id")] = r
	}
	counts := [3]int{}
	for _, e := range events {
		counts[e.after]++
		if e.after == 0 {
			continue
		}
		r, ok := moved[e.id]
		if !ok {
			_, old := at[e.id]
			t.Errorf("event %s, sent after the URL change returned, did not reach the new URL (old URL got it: %v)", e.id, old)
			continue
		}
		if e.after == 2 {
			if err := signature.NewVerifier(newSecret).Verify(r.Header, r.Body); err != nil {
				t.Errorf("event %s, sent after the rotation returned: %v", e.id, err)
			}
			if err := signature.NewVerifier(oldSecret).Verify(r.Header, r.Body); err == nil {
				t.Errorf("event %s, sent after a rotation with no grace returned, is still signed with the old secret", e.id)
			}
		}
	}
	if counts[1] < enough || counts[2] < enough {
		t.Fatalf("too little traffic to tell: %v events before, between and after the changes", counts)
	}
	t.Logf("events before / after the URL change / after the rotation: %v", counts)
}
