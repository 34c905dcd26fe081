package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// putReq is a put that registers endpoint id at url with a generated secret.
func putReq(id, url string) herald.PutEndpointRequest {
	sec, _ := signature.GenerateSecret()
	return herald.PutEndpointRequest{ID: id, URL: url, Secret: sec, Overrides: fast(1)}
}

// TestEventIDsPerTenant: event ids are scoped to the tenant of the endpoint. Two tenants
// (and the default tenant, with an id that looks like another tenant's workflow id) use
// the same id and each gets its own delivery; reusing an id with another endpoint, type
// or data is refused with ErrConflict naming the field; the same event again is idempotent.
func TestEventIDsPerTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := map[string]*receiver{}
	for _, tenant := range []string{"acme", "beta", herald.DefaultTenant} {
		rcv[tenant] = newReceiver(t, status(http.StatusOK))
		req := putReq("ids-"+tenant, rcv[tenant].URL)
		req.Tenant = tenant
		if _, err := shared.starter.PutEndpoint(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	req := putReq("ids-acme-2", rcv["acme"].URL)
	req.Tenant = "acme"
	if _, err := shared.starter.PutEndpoint(ctx, req); err != nil {
		t.Fatal(err)
	}

	const id = "evt_ids_shared"
	event := func(endpoint, typ, data string) starter.Event {
		return starter.Event{ID: id, EndpointID: endpoint, Type: typ, Data: json.RawMessage(data)}
	}
	sent := map[string]starter.SendResult{}
	for _, tenant := range []string{"acme", "beta"} {
		res, err := shared.starter.Send(ctx, event("ids-"+tenant, "order.paid", `{"tenant":"`+tenant+`"}`))
		if err != nil {
			t.Fatalf("%s sends %s: %v", tenant, id, err)
		}
		sent[tenant] = res
	}
	// The default tenant's "acme:evt_ids_shared" is not acme's evt_ids_shared.
	defRes, err := shared.starter.Send(ctx, starter.Event{Type: "test.event", ID: "acme:" + id, EndpointID: "ids-default", Data: json.RawMessage(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	if defRes.WorkflowID != herald.DeliveryID(herald.DefaultTenant, "acme:"+id) {
		t.Errorf("the default tenant's workflow id is %s, want %s as before tenants had their own ids", defRes.WorkflowID, herald.DeliveryID(herald.DefaultTenant, "acme:"+id))
	}
	if sent["acme"].WorkflowID == sent["beta"].WorkflowID || sent["acme"].WorkflowID == defRes.WorkflowID {
		t.Fatalf("deliveries share a workflow: %+v, %+v", sent, defRes)
	}
	for _, tenant := range []string{"acme", "beta"} {
		st := waitFor(t, tenantStarter{tenant}, id, herald.StateDelivered)
		if st.Event.EndpointID != "ids-"+tenant {
			t.Errorf("%s's %s went to %s", tenant, id, st.Event.EndpointID)
		}
		if n := len(rcv[tenant].requests()); n != 1 {
			t.Errorf("%s's receiver got %d requests, want 1", tenant, n)
		}
	}
	if _, err := shared.starter.Status(ctx, starter.Ref{EventID: id}); !errors.Is(err, starter.ErrNotFound) {
		t.Errorf("the default tenant sees another tenant's %s: %v", id, err)
	}

	// The same event again (data compacted differently) is the same delivery.
	again, err := shared.starter.Send(ctx, event("ids-acme", "order.paid", `{ "tenant" : "acme" }`))
	if err != nil || again.RunID != sent["acme"].RunID {
		t.Fatalf("the same event again: %+v, %v; want run %s", again, err, sent["acme"].RunID)
	}
	for _, tc := range []struct {
		name  string
		ev    starter.Event
		field string
	}{
		{"another endpoint", event("ids-acme-2", "order.paid", `{"tenant":"acme"}`), "to endpoint ids-acme, not ids-acme-2"},
		{"another type", event("ids-acme", "order.refunded", `{"tenant":"acme"}`), `with type "order.paid", not "order.refunded"`},
		{"other data", event("ids-acme", "order.paid", `{"tenant":"beta"}`), "with different data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := shared.starter.Send(ctx, tc.ev)
			if !errors.Is(err, starter.ErrConflict) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Send = %v; want ErrConflict saying %q", err, tc.field)
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(rcv["acme"].requests()); n != 1 {
		t.Errorf("acme's receiver got %d requests, want 1", n)
	}
}

// tenantStarter reads a tenant's statuses (for waitFor).
type tenantStarter struct{ tenant string }

func (s tenantStarter) Status(ctx context.Context, ref starter.Ref) (starter.Report, error) {
	ref.Tenant = s.tenant
	return shared.starter.Status(ctx, ref)
}

// TestOverlappingBulkReplays: two bulk replays over the same range, asked for together,
// replay each dead letter once, even though the replayed deliveries fail again at once and
// park as dead letters the other bulk replay could list.
func TestOverlappingBulkReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, status(http.StatusInternalServerError))
	o := fast(1)
	o.Breaker = &policy.BreakerOverride{ConsecutiveFailures: 1000, VolumeFailures: 1000} // never trips here
	ep := fmt.Sprintf("bulk-twice-%d", time.Now().UnixNano())
	putEndpoint(t, ep, rcv.URL, o)
	const n = 12
	var ids []string
	for i := range n {
		res, err := shared.starter.Send(ctx, starter.Event{Type: "test.event", ID: fmt.Sprintf("evt_%s_%d", ep, i), EndpointID: ep, Data: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.EventID)
	}
	for _, id := range ids {
		waitState(t, id, herald.StateDeadLetter)
	}
	f := herald.DeadLetterFilter{EndpointID: ep, Since: time.Now().Add(-time.Hour)}
	eventually(t, "every dead letter listed", func() bool {
		dls, err := shared.starter.ListDeadLetters(ctx, f)
		return err == nil && len(dls) == n
	})
	var wfs [2]string
	var wg sync.WaitGroup
	for i := range wfs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := shared.starter.BulkReplay(ctx, herald.BulkReplayInput{Filter: f})
			if err != nil {
				t.Error(err)
			}
			wfs[i] = id
		}()
	}
	wg.Wait()
	for _, wf := range wfs {
		if err := shared.client.GetWorkflow(ctx, wf, "").Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		eventually(t, id+" to park again after one replay", func() bool {
			st, err := shared.starter.Status(ctx, starter.Ref{EventID: id})
			return err == nil && st.State == herald.StateDeadLetter && st.Round >= 1
		})
	}
	time.Sleep(500 * time.Millisecond) // a late second replay would show now
	perEvent := map[string]int{}
	for _, r := range rcv.requests() {
		perEvent[r.Header.Get("webhook-id")]++
	}
	for _, id := range ids {
		st, err := shared.starter.Status(ctx, starter.Ref{EventID: id})
		if err != nil {
			t.Fatal(err)
		}
		if st.Round != 1 || perEvent[id] != 2 {
			t.Errorf("%s: round %d and %d requests after two overlapping bulk replays; want round 1, 2 requests (sent, replayed once)", id, st.Round, perEvent[id])
		}
	}
}

// TestRefusedPutLeavesNoWorkflow: a put the starter or the worker refuses leaves no
// endpoint workflow running (it used to wait a minute for a put that never came).
func TestRefusedPutLeavesNoWorkflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		url  string
	}{
		{"no URL", ""},
		{"bad URL", "ftp://example.com/hook"},
		{"SSRF-refused URL", "http://10.1.2.3/hook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "refused-" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
			req := putReq(id, tc.url)
			if _, err := shared.starter.PutEndpoint(ctx, req); !errors.Is(err, starter.ErrInvalid) {
				t.Fatalf("put %s = %v, want it refused (ErrInvalid)", tc.url, err)
			}
			query := fmt.Sprintf("WorkflowId = '%s' AND ExecutionStatus = 'Running'", herald.EndpointWorkflowID(id))
			var running int
			deadline := time.Now().Add(10 * time.Second) // well under the minute an unregistered endpoint lingered
			for {
				resp, err := shared.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
				if err != nil {
					t.Fatal(err)
				}
				running = len(resp.GetExecutions())
				if running == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			desc, err := shared.client.DescribeWorkflowExecution(ctx, herald.EndpointWorkflowID(id), "")
			if running != 0 || (err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING) {
				t.Fatalf("after a refused put, %d endpoint workflows %s are running", running, herald.EndpointWorkflowID(id))
			}
		})
	}
}

// TestRegistrationWritesVisibilityOnce checks what a new endpoint costs the visibility
// store: its start carries the tenant, subscription and circuit, so the put's workflow
// task upserts nothing but the admission memo (each upsert is one more write of the
// endpoint's visibility record), and the listing shows it closed from the start.
func TestRegistrationWritesVisibilityOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	id := "registered-once"
	if _, err := shared.starter.PutEndpoint(ctx, putReq(id, "http://127.0.0.1:9/hook")); err != nil {
		t.Fatal(err)
	}
	var upserts, memos int
	for _, ev := range workflowHistory(t, herald.EndpointWorkflowID(id)) {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			upserts++
		case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
			memos++
		}
	}
	if upserts != 0 || memos != 1 {
		t.Fatalf("registration wrote %d search attribute upserts and %d memo upserts, want 0 and 1", upserts, memos)
	}
	st, err := shared.starter.GetEndpoint(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Circuit.State != "closed" {
		t.Fatalf("circuit %q after registration, want closed", st.Circuit.State)
	}
}
