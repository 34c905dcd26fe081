package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/starter"
)

// TestFanoutFilters: a send to a tenant goes to the subscribed endpoints whose CEL filter
// is true on the event; one whose filter is false or cannot be evaluated is listed with
// why, and receives nothing; a filter changed (the subscription unchanged) applies to the
// very next send; the filters come from the visibility records' memos, not a read per
// endpoint; a filter that does not compile is refused at put with its position.
func TestFanoutFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tenant = "filters"
	var reads atomic.Int32
	st := starter.New(shared.client, starter.Options{EagerStart: true, OnFilterRead: func(string) { reads.Add(1) }})
	filters := map[string]string{
		"flt-all": "",
		"flt-big": `data.amount > 100`,
		"flt-fr":  `data.customer.country == "FR"`,
		"flt-vip": `type == "order.paid" && "vip" in data.tags`,
	}
	recv := map[string]*receiver{}
	for id, f := range filters {
		recv[id] = newReceiver(t, status(http.StatusOK))
		putSubscribed(t, id, tenant, recv[id].URL, nil, 2)
		if f != "" {
			if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, Filter: &f}); err != nil {
				t.Fatalf("put filter of %s: %v", id, err)
			}
		}
	}
	awaitMemoFilters(t, shared.client, starter.Options{EagerStart: true}, tenant, "order.paid")
	send := func(id, data string, deliveries []string, filtered map[string]string) {
		t.Helper()
		res, err := st.Publish(ctx, tenant, starter.Event{ID: id, Type: "order.paid", Data: json.RawMessage(data)})
		if err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
		var got []string
		for _, d := range res.Deliveries {
			got = append(got, d.EndpointID)
		}
		slices.Sort(deliveries)
		if !slices.Equal(got, deliveries) {
			t.Errorf("event %s went to %v, want %v (filtered: %+v)", id, got, deliveries, res.Filtered)
		}
		if len(res.Filtered) != len(filtered) {
			t.Errorf("event %s: filtered %+v, want %v", id, res.Filtered, filtered)
		}
		for _, f := range res.Filtered {
			if want, ok := filtered[f.EndpointID]; !ok || !strings.Contains(f.Reason, want) {
				t.Errorf("event %s: %s filtered because %q, want %q", id, f.EndpointID, f.Reason, want)
			}
		}
	}
	send("flt-1", `{"amount": 150, "customer": {"country": "FR"}, "tags": ["vip"]}`, []string{"flt-all", "flt-big", "flt-fr", "flt-vip"}, nil)
	send("flt-2", `{"amount": 50, "customer": {"country": "DE"}, "tags": []}`, []string{"flt-all"},
		map[string]string{"flt-big": "the filter is false", "flt-fr": "the filter is false", "flt-vip": "the filter is false"})
	send("flt-3", `{"amount": 500}`, []string{"flt-all", "flt-big"},
		map[string]string{"flt-fr": "could not be evaluated", "flt-vip": "could not be evaluated"})
	// The event's status does not show the endpoints a filter kept out as missing.
	v := waitEventSettled(t, tenant, "flt-2", 1, herald.StateDelivered)
	for _, d := range v.Deliveries {
		if d.Missing {
			t.Errorf("status of flt-2 shows %s missing; its filter kept the event out", d.EndpointID)
		}
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("sends read %d filters from their endpoints; the memos in the visibility records hold them", n)
	}

	// Only the filter changes (the subscription tokens stay): the next send uses it.
	lower := `data.amount > 10`
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "flt-big", Filter: &lower}); err != nil {
		t.Fatal(err)
	}
	send("flt-4", `{"amount": 50, "customer": {"country": "FR"}, "tags": []}`, []string{"flt-all", "flt-big", "flt-fr"},
		map[string]string{"flt-vip": "the filter is false"})
	none := ""
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "flt-vip", Filter: &none}); err != nil {
		t.Fatal(err)
	}
	send("flt-5", `{"amount": 1}`, []string{"flt-all", "flt-vip"},
		map[string]string{"flt-big": "the filter is false", "flt-fr": "could not be evaluated"})

	// Every endpoint's filter false: recorded with no destination.
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "flt-all", Filter: &lower}); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "flt-vip", Filter: &lower}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Publish(ctx, tenant, starter.Event{ID: "flt-6", Type: "order.paid", Data: json.RawMessage(`{"amount": 1, "customer": {"country": "DE"}}`)})
	if err != nil || !res.NoDestination || len(res.Filtered) != 4 {
		t.Fatalf("event every filter keeps out: %+v, %v; want no destination, 4 filtered", res, err)
	}

	bad := "data.amount >\n  > 1"
	_, err = shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: "flt-big", Filter: &bad})
	if err == nil || !strings.Contains(err.Error(), "line 2, column 3") {
		t.Fatalf("put of a broken filter: %v, want an error naming line 2, column 3", err)
	}

	want := map[string][]string{
		"flt-all": {"flt-1", "flt-2", "flt-3", "flt-4", "flt-5"},
		"flt-big": {"flt-1", "flt-3", "flt-4"},
		"flt-fr":  {"flt-1", "flt-4"},
		"flt-vip": {"flt-1", "flt-5"},
	}
	for id, r := range recv {
		ev := want[id]
		eventually(t, "endpoint "+id+" to receive its events", func() bool { return len(r.requests()) >= len(ev) })
		got := webhookIDs(r)
		slices.Sort(got)
		if !slices.Equal(got, ev) {
			t.Errorf("endpoint %s (filter %q) received %v, want %v", id, filters[id], got, ev)
		}
	}
}

// TestFanoutFiltersEncrypted: with payloads encrypted, a send decrypts each filter from the
// record's memo (no read per endpoint) and applies it; a client without the keys gets an
// error that says it cannot decrypt, and nothing is delivered.
func TestFanoutFiltersEncrypted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keys := newKeys(t, "filters")
	stk := startKeyed(t, keys)
	rcv := newReceiver(t, status(http.StatusOK))
	for id, f := range map[string]string{"enc-big": `data.amount > 100`, "enc-small": `data.amount <= 100`} {
		req := putReq(id, rcv.URL)
		req.Tenant, req.Filter = "enc", &f
		if _, err := stk.Starter.PutEndpoint(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	opts := starter.Options{EagerStart: true, DataConverter: codec.DataConverter(keys), PayloadKeyID: keys.ActiveKeyID()}
	awaitMemoFilters(t, stk.Client, opts, "enc", "order.paid")
	var reads atomic.Int32
	opts.OnFilterRead = func(string) { reads.Add(1) }
	st := starter.New(stk.Client, opts)
	res, err := st.Publish(ctx, "enc", starter.Event{ID: "enc-1", Type: "order.paid", Data: json.RawMessage(`{"amount": 150}`)})
	if err != nil || len(res.Deliveries) != 1 || res.Deliveries[0].EndpointID != "enc-big" || len(res.Filtered) != 1 {
		t.Fatalf("publish: %+v, %v; want enc-big alone, enc-small filtered", res, err)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("the send read %d filters from endpoints; the encrypted memos hold them", n)
	}
	_, plain := stk.producer(t, nil)
	_, err = plain.Publish(ctx, "enc", starter.Event{ID: "enc-2", Type: "order.paid", Data: json.RawMessage(`{"amount": 150}`)})
	if err == nil || !codec.IsUndecryptable(err) || !strings.Contains(err.Error(), "read the filter of endpoint enc-") {
		t.Fatalf("publish without the keys: %v, want an error saying an endpoint's filter cannot be decrypted", err)
	}
	eventually(t, "enc-big to receive enc-1", func() bool { return len(rcv.requests()) >= 1 })
	if got := webhookIDs(rcv); len(got) != 1 || got[0] != "enc-1" {
		t.Fatalf("receiver got %v, want enc-1 alone", got)
	}
}

// awaitMemoFilters waits until a send of type typ to tenant takes every subscriber's filter
// from the visibility records' memos. A new endpoint's record lists it as soon as its
// workflow starts; its memo follows a moment later, with the first workflow task, and
// until then a send reads the endpoint instead (correct, but not what the tests count).
func awaitMemoFilters(t *testing.T, c client.Client, opts starter.Options, tenant, typ string) {
	t.Helper()
	var reads atomic.Int32
	opts.OnFilterRead = func(string) { reads.Add(1) }
	probe := starter.New(c, opts)
	eventually(t, "the memos of tenant "+tenant+"'s endpoints to show their filters", func() bool {
		reads.Store(0)
		_, _, err := probe.Receivers(context.Background(), tenant, starter.Event{ID: "memo-probe", Type: typ, Data: json.RawMessage(`{}`)})
		return err == nil && reads.Load() == 0
	})
}
