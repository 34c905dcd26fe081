package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// putSubscribed registers endpoint id of tenant at url, subscribed to types (nil: all),
// with a fast ladder of attempts.
func putSubscribed(t *testing.T, id, tenant, url string, types []string, attempts int) {
	t.Helper()
	if err := subscribe(id, tenant, url, types, attempts); err != nil {
		t.Fatal(err)
	}
}

// subscribe is putSubscribed for a goroutine other than the test's: it returns the error.
func subscribe(id, tenant, url string, types []string, attempts int) error {
	sec, err := signature.GenerateSecret()
	if err != nil {
		return err
	}
	if _, err := shared.starter.PutEndpoint(context.Background(), herald.PutEndpointRequest{
		ID: id, Tenant: tenant, URL: url, Secret: sec, Types: types, Overrides: fast(attempts, time.Second),
	}); err != nil {
		return fmt.Errorf("put endpoint %s: %w", id, err)
	}
	return nil
}

// webhookIDs returns the webhook-ids a receiver saw, in order.
func webhookIDs(r *receiver) []string {
	var ids []string
	for _, q := range r.requests() {
		ids = append(ids, q.Header.Get("webhook-id"))
	}
	return ids
}

// waitEventSettled waits until the want deliveries of a tenant's event are
// in one of states; missing ones aside), and returns the event's view.
// eventView is the status of a tenant's event sent to the tenant: the event and its
// deliveries.
func eventView(ctx context.Context, tenant, id string) (herald.EventView, error) {
	rep, err := shared.starter.Status(ctx, starter.Ref{Tenant: tenant, EventID: id})
	if err != nil {
		return herald.EventView{}, err
	}
	if rep.Fanout == nil {
		return herald.EventView{}, fmt.Errorf("event %s of tenant %s was sent to one endpoint, not to the tenant", id, tenant)
	}
	return *rep.Fanout, nil
}

func waitEventSettled(t *testing.T, tenant, id string, want int, states ...herald.State) herald.EventView {
	t.Helper()
	var v herald.EventView
	var err error
	eventually(t, fmt.Sprintf("the %d deliveries of event %s to settle", want, id), func() bool {
		v, err = eventView(context.Background(), tenant, id)
		if err != nil {
			return false
		}
		n := 0
		for _, d := range v.Deliveries {
			if d.Missing {
				continue
			}
			if d.Status == nil || !slices.Contains(states, d.Status.State) {
				return false
			}
			n++
		}
		return n == want
	})
	return v
}

// TestFanoutDeliversWhatEachEndpointSubscribed: endpoints of one tenant with mixed filters
// each receive exactly the events whose type they subscribed to, sent at once after their
// puts returned (read-your-writes), and nothing of another tenant's; a changed
// subscription applies to the next send; a resend starts nothing new and a conflicting
// one is refused.
func TestFanoutDeliversWhatEachEndpointSubscribed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tenant = "fan-mixed"
	subs := map[string][]string{
		"fm-all":     nil,
		"fm-star":    {"*"},
		"fm-paid":    {"order.paid"},
		"fm-orders":  {"order.*"},
		"fm-mixed":   {"invoice.sent", "order.refund"},
		"fm-invoice": {"invoice.*"},
	}
	recv := map[string]*receiver{}
	for id, types := range subs {
		recv[id] = newReceiver(t, status(http.StatusOK))
		putSubscribed(t, id, tenant, recv[id].URL, types, 3)
	}
	other := newReceiver(t, status(http.StatusOK))
	putSubscribed(t, "fm-other-tenant", "fan-mixed-other", other.URL, nil, 3)

	send := func(id, typ string) starter.PublishResult {
		t.Helper()
		res, err := shared.starter.Publish(ctx, tenant, starter.Event{ID: id, Type: typ, Data: json.RawMessage(`{"n":1}`)})
		if err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
		return res
	}
	want := map[string][]string{}
	expect := func(res starter.PublishResult, ids ...string) {
		t.Helper()
		var got []string
		for _, d := range res.Deliveries {
			got = append(got, d.EndpointID)
			if d.WorkflowID != herald.FanoutDeliveryID(tenant, d.EndpointID, res.EventID) {
				t.Errorf("delivery of %s to %s has workflow id %s", res.EventID, d.EndpointID, d.WorkflowID)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(got, ids) {
			t.Fatalf("event %s (%s) went to %v, want %v", res.EventID, res.Type, got, ids)
		}
		for _, id := range ids {
			want[id] = append(want[id], res.EventID)
		}
	}
	expect(send("fm-1", "order.paid"), "fm-all", "fm-star", "fm-paid", "fm-orders")
	expect(send("fm-2", "order.refund"), "fm-all", "fm-star", "fm-orders", "fm-mixed")
	expect(send("fm-3", "invoice.sent"), "fm-all", "fm-star", "fm-mixed", "fm-invoice")
	expect(send("fm-4", "user.created"), "fm-all", "fm-star")

	// A subscription changed applies to the very next send.
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "fm-paid", Types: []string{"user.*"}}); err != nil {
		t.Fatal(err)
	}
	expect(send("fm-5", "user.created"), "fm-all", "fm-star", "fm-paid")
	expect(send("fm-6", "order.paid"), "fm-all", "fm-star", "fm-orders")

	// The same event again: nothing new; with other data: a conflict, nothing started.
	again := send("fm-1", "order.paid")
	for _, d := range again.Deliveries {
		if !d.Existed {
			t.Errorf("resend of fm-1 started a new delivery to %s", d.EndpointID)
		}
	}
	_, err := shared.starter.Publish(ctx, tenant, starter.Event{ID: "fm-1", Type: "order.paid", Data: json.RawMessage(`{"n":2}`)})
	if !errors.Is(err, starter.ErrConflict) {
		t.Fatalf("resend with other data: %v, want ErrConflict", err)
	}

	for _, id := range []string{"fm-1", "fm-2", "fm-3", "fm-4", "fm-5", "fm-6"} {
		n := 2
		switch id {
		case "fm-1", "fm-2", "fm-3":
			n = 4
		case "fm-5", "fm-6":
			n = 3
		}
		v := waitEventSettled(t, tenant, id, n, herald.StateDelivered)
		if id == "fm-4" {
			// fm-paid subscribed to user.* after fm-4 was sent: status shows it missing.
			i := slices.IndexFunc(v.Deliveries, func(d herald.DeliveryView) bool { return d.EndpointID == "fm-paid" })
			if i < 0 || !v.Deliveries[i].Missing {
				t.Errorf("status of fm-4 does not show fm-paid's delivery missing: %+v", v.Deliveries)
			}
		}
	}
	for id, r := range recv {
		got := webhookIDs(r)
		slices.Sort(got)
		slices.Sort(want[id])
		if !slices.Equal(got, want[id]) {
			t.Errorf("endpoint %s (types %q) received %v, want %v", id, subs[id], got, want[id])
		}
	}
	if got := webhookIDs(other); len(got) != 0 {
		t.Errorf("an endpoint of another tenant received %v", got)
	}
	st, err := shared.starter.GetEndpoint(ctx, "fm-mixed")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Types, []string{"invoice.sent", "order.refund"}) {
		t.Errorf("endpoint get shows types %q", st.Types)
	}
}

// TestFanoutNoDestination: an event no endpoint subscribed to is recorded, not refused;
// status says it has no destination; a resend is idempotent and a conflicting one refused.
func TestFanoutNoDestination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tenant = "fan-none"
	r := newReceiver(t, status(http.StatusOK))
	putSubscribed(t, "fn-billing", tenant, r.URL, []string{"invoice.*"}, 3)
	ev := starter.Event{ID: "fn-1", Type: "order.paid", Data: json.RawMessage(`{}`)}
	for range 2 {
		res, err := shared.starter.Publish(ctx, tenant, ev)
		if err != nil {
			t.Fatal(err)
		}
		if !res.NoDestination || len(res.Deliveries) != 0 {
			t.Fatalf("publish with no subscriber: %+v", res)
		}
	}
	v, err := eventView(ctx, tenant, "fn-1")
	if err != nil {
		t.Fatal(err)
	}
	if !v.NoDestination || v.Type != "order.paid" || len(v.Deliveries) != 0 {
		t.Fatalf("status of an event with no destination: %+v", v)
	}
	ev.Data = json.RawMessage(`{"other":true}`)
	if _, err := shared.starter.Publish(ctx, tenant, ev); !errors.Is(err, starter.ErrConflict) {
		t.Fatalf("conflicting resend of an event with no destination: %v", err)
	}
	if _, err := shared.starter.Status(ctx, starter.Ref{Tenant: tenant, EventID: "fn-never"}); !errors.Is(err, starter.ErrNotFound) {
		t.Fatalf("status of an event never sent: %v", err)
	}
	if _, err := shared.starter.Publish(ctx, tenant, starter.Event{EndpointID: "fn-billing", Type: "x", Data: json.RawMessage(`{}`)}); !errors.Is(err, starter.ErrInvalid) {
		t.Fatalf("publish naming an endpoint: %v", err)
	}
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "fn-billing", Types: []string{"order.*.paid"}}); !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), "wildcard") {
		t.Fatalf("put with a bad pattern: %v", err)
	}
	if len(r.requests()) != 0 {
		t.Fatalf("the endpoint not subscribed received %d requests", len(r.requests()))
	}
}

// TestFanoutStatusAndReplay: status shows each endpoint's delivery; replaying the event
// replays every dead-lettered delivery of it, and only those; one delivery replays alone.
func TestFanoutStatusAndReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tenant = "fan-replay"
	ok := newReceiver(t, status(http.StatusOK))
	bad1 := newReceiver(t, status(http.StatusInternalServerError))
	bad2 := newReceiver(t, status(http.StatusInternalServerError))
	putSubscribed(t, "fr-ok", tenant, ok.URL, nil, 1)
	putSubscribed(t, "fr-bad1", tenant, bad1.URL, nil, 1)
	putSubscribed(t, "fr-bad2", tenant, bad2.URL, []string{"order.*"}, 1)
	if _, err := shared.starter.Publish(ctx, tenant, starter.Event{ID: "fr-1", Type: "order.paid", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	v := waitEventSettled(t, tenant, "fr-1", 3, herald.StateDelivered, herald.StateDeadLetter)
	states := map[string]herald.State{}
	for _, d := range v.Deliveries {
		states[d.EndpointID] = d.Status.State
	}
	if states["fr-ok"] != herald.StateDelivered || states["fr-bad1"] != herald.StateDeadLetter || states["fr-bad2"] != herald.StateDeadLetter {
		t.Fatalf("states after the first round: %v", states)
	}
	if v.Type != "order.paid" {
		t.Errorf("status shows type %q", v.Type)
	}
	bad1.setAnswer(status(http.StatusOK))
	bad2.setAnswer(status(http.StatusOK))
	done, err := shared.starter.Replay(ctx, starter.Ref{Tenant: tenant, EventID: "fr-1"})
	replayed := done.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(replayed, []string{"fr-bad1", "fr-bad2"}) {
		t.Fatalf("replayed %v, want the two dead letters", replayed)
	}
	waitEventSettled(t, tenant, "fr-1", 3, herald.StateDelivered)
	if len(ok.requests()) != 1 || len(bad1.requests()) != 2 || len(bad2.requests()) != 2 {
		t.Fatalf("requests: ok %d, bad1 %d, bad2 %d; want 1, 2, 2", len(ok.requests()), len(bad1.requests()), len(bad2.requests()))
	}
	// One delivery alone: the delivered one is delivered again, the others are untouched.
	if _, err := shared.starter.Replay(ctx, starter.Ref{Tenant: tenant, EventID: "fr-1", Endpoint: "fr-ok"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second delivery to fr-ok", func() bool { return len(ok.requests()) == 2 })
	waitEventSettled(t, tenant, "fr-1", 3, herald.StateDelivered)
	if len(bad1.requests()) != 2 || len(bad2.requests()) != 2 {
		t.Fatalf("a replay of fr-ok's delivery reached other endpoints: bad1 %d, bad2 %d", len(bad1.requests()), len(bad2.requests()))
	}
	for _, r := range ok.requests() {
		if id := r.Header.Get("webhook-id"); id != "fr-1" {
			t.Errorf("webhook-id %q, want the event id", id)
		}
	}
}

// fanoutProcessEnv, when set ("addr|namespace|tenant|event|passing"), makes the test
// binary publish one event to a tenant and hang before the delivery after the first
// "passing" ones, until killed (see TestFanoutSurvivesSenderCrash).
const fanoutProcessEnv = "HERALD_TEST_FANOUT_PROCESS"

// runFanoutProcess is the sending process of TestFanoutSurvivesSenderCrash.
func runFanoutProcess(target string) {
	parts := strings.Split(target, "|")
	addr, ns, tenant, event := parts[0], parts[1], parts[2], parts[3]
	var passing int64
	fmt.Sscan(parts[4], &passing)
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: ns, Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fan-out process:", err)
		os.Exit(1)
	}
	var n atomic.Int64
	s := starter.New(c, starter.Options{FanoutParallelism: 4, BeforeFanoutStart: func(string) {
		if n.Add(1) > passing {
			select {} // the process dies here, mid-fan-out
		}
	}})
	_, err = s.Publish(context.Background(), tenant, starter.Event{ID: event, Type: "order.paid", Data: json.RawMessage(`{"crash":true}`)})
	fmt.Fprintln(os.Stderr, "fan-out process returned:", err)
	os.Exit(2)
}

// TestFanoutSurvivesSenderCrash: a process fanning out to 50 endpoints is killed (SIGKILL)
// in the middle; sending the same event again delivers it to every one of the 50 exactly
// once (counted by webhook-id at the receivers).
func TestFanoutSurvivesSenderCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const (
		tenant    = "fan-crash"
		event     = "fc-1"
		endpoints = 50
		passing   = 10
	)
	var mu sync.Mutex
	got := map[string]map[string]int{} // endpoint → webhook-id → requests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep := strings.TrimPrefix(r.URL.Path, "/")
		mu.Lock()
		if got[ep] == nil {
			got[ep] = map[string]int{}
		}
		got[ep][r.Header.Get("webhook-id")]++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	for i := range endpoints {
		id := fmt.Sprintf("fc-%02d", i)
		putSubscribed(t, id, tenant, srv.URL+"/"+id, []string{"order.*"}, 3)
	}
	received := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s|%s|%d", fanoutProcessEnv, shared.srv.FrontendAddress(), shared.srv.Namespace(), tenant, event, passing))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	eventually(t, "the first deliveries of the crashing send", func() bool { return received() >= passing })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	v, err := eventView(ctx, tenant, event)
	if err != nil {
		t.Fatal(err)
	}
	missing := countWhere(v.Deliveries, func(d herald.DeliveryView) bool { return d.Missing })
	if missing != endpoints-passing {
		t.Fatalf("after the crash, status shows %d deliveries missing, want %d", missing, endpoints-passing)
	}

	res, err := shared.starter.Publish(ctx, tenant, starter.Event{ID: event, Type: "order.paid", Data: json.RawMessage(`{"crash":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	existed := countWhere(res.Deliveries, func(d starter.FanoutDelivery) bool { return d.Existed })
	if len(res.Deliveries) != endpoints || existed != passing {
		t.Fatalf("the resend reached %d endpoints, %d of them started before; want %d and %d", len(res.Deliveries), existed, endpoints, passing)
	}
	v = waitEventSettled(t, tenant, event, endpoints, herald.StateDelivered)
	for _, d := range v.Deliveries {
		if !d.Status.Event.CreatedAt.Equal(v.Deliveries[0].Status.Event.CreatedAt) {
			t.Errorf("delivery to %s carries the event created at %s, the first at %s: a resend must add the event as first sent",
				d.EndpointID, d.Status.Event.CreatedAt, v.Deliveries[0].Status.Event.CreatedAt)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range endpoints {
		id := fmt.Sprintf("fc-%02d", i)
		if n := got[id][event]; n != 1 || len(got[id]) != 1 {
			t.Errorf("endpoint %s received %v, want %s once", id, got[id], event)
		}
	}
}

// TestMigrateEndpointsFrom010: an endpoint registered with Herald 0.1.0 (its workflow
// holds it, its search attributes do not name its tenant or subscription, and a 0.1.0
// directory workflow runs) is not found by a send to its tenant until herald migrate
// runs; then it is, the directory is ended, and a second migrate changes nothing.
func TestMigrateEndpointsFrom010(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tenant = "fan-migrate"
	r := newReceiver(t, status(http.StatusOK))
	sec, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	// What 0.1.0 left: the endpoint in its workflow's input, only HeraldEndpoint set.
	old := herald.Endpoint{ID: "fm-old", Tenant: tenant, URL: r.URL, Secret: signature.Secret(sec), Types: []string{"order.*"}, Version: 1,
		Overrides: *fast(3, time.Second)}
	if _, err := shared.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: herald.EndpointWorkflowID(old.ID), TaskQueue: herald.EndpointTaskQueue(herald.DefaultTaskQueue),
		TypedSearchAttributes: temporal.NewSearchAttributes(herald.AttrEndpoint.ValueSet(old.ID)),
	}, herald.EndpointWorkflow, herald.EndpointInput{ID: old.ID, Endpoint: &old}); err != nil {
		t.Fatal(err)
	}
	dir, err := shared.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "subscriptions:" + tenant, TaskQueue: "herald-test-no-worker",
	}, herald.LegacySubscriptionsWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	send := func(id string) starter.PublishResult {
		t.Helper()
		res, err := shared.starter.Publish(ctx, tenant, starter.Event{ID: id, Type: "order.paid", Data: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := send("fm-before"); !res.NoDestination {
		t.Fatalf("before migrating, the send reached %v: the 0.1.0 endpoint has no subscription to be found by", res.Deliveries)
	}
	res, err := shared.starter.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Published < 1 || res.Directories < 1 {
		t.Fatalf("migrate: %+v, want the old endpoint published and the directory ended", res)
	}
	if err := dir.Get(ctx, nil); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("the 0.1.0 directory: %v, want it terminated", err)
	}
	eventually(t, "the migrated endpoint to be found by a send", func() bool {
		ids, err := shared.starter.Subscribers(ctx, tenant, "order.paid")
		return err == nil && slices.Equal(ids, []string{old.ID})
	})
	if res := send("fm-after"); len(res.Deliveries) != 1 || res.Deliveries[0].EndpointID != old.ID {
		t.Fatalf("after migrating, the send reached %+v, want %s", res.Deliveries, old.ID)
	}
	eventually(t, "the delivery", func() bool { return slices.Contains(webhookIDs(r), "fm-after") })
	again, err := shared.starter.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Published != 0 || again.Directories != 0 {
		t.Fatalf("a second migrate did %+v, want nothing", again)
	}
}
