package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// opsReceived is an operational event as the operational endpoint got it.
type opsReceived struct {
	ID   string         `json:"id"`
	Type string         `json:"type"`
	Data herald.OpsData `json:"data"`
}

// opsEventsOf returns the operational events r got about endpoint ep, in order, checking
// each one's signature.
func opsEventsOf(t *testing.T, r *receiver, sec signature.Secret, ep string) []opsReceived {
	t.Helper()
	var out []opsReceived
	for _, req := range r.requests() {
		var ev opsReceived
		if err := json.Unmarshal(req.Body, &ev); err != nil {
			t.Fatalf("operational event %s: %v", req.Body, err)
		}
		if ev.Data.EndpointID != ep {
			continue
		}
		if err := signature.NewVerifier(sec).Verify(req.Header, req.Body); err != nil {
			t.Errorf("operational event %s: %v", ev.ID, err)
		}
		out = append(out, ev)
	}
	return out
}

func opsTypes(evs []opsReceived) []string {
	var ts []string
	for _, ev := range evs {
		ts = append(ts, ev.Type)
	}
	slices.Sort(ts)
	return ts
}

// opsEventID is the id of the operational event typ about the delivery of event id of
// tenant in round (what the delivery workflow would emit).
func opsEventID(t *testing.T, typ, tenant, id string, round int) string {
	t.Helper()
	ev, err := herald.OpsEvent(typ, fmt.Sprintf("%s|%d", herald.DeliveryID(tenant, id), round), herald.OpsData{})
	if err != nil {
		t.Fatal(err)
	}
	return ev.ID
}

// useOpsEndpoint registers the installation's operational endpoint at url (with the fast
// ladder), enables it, and disables it when the test is over. The test that ran before
// may have left it disabled, and a put does not enable it.
func useOpsEndpoint(t *testing.T, url string) herald.PutEndpointResult {
	t.Helper()
	ctx := context.Background()
	res, err := shared.starter.PutOpsEndpoint(ctx, herald.PutEndpointRequest{URL: url, Overrides: fast(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shared.starter.EnableEndpoint(ctx, herald.OpsEndpointID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := shared.starter.DisableEndpoint(ctx, herald.OpsEndpointID, "the test is over"); err != nil {
			t.Error(err)
		}
	})
	return res
}

// TestOpsEvents: with an operational endpoint registered, a circuit that opens and closes,
// dead letters and their recovery reach it as signed Herald events, through the ladder like
// any delivery; an operational delivery that dead-letters, and is recovered, produces none.
// Not parallel: the operational endpoint is the installation's, and is disabled at the end.
func TestOpsEvents(t *testing.T) {
	ctx := context.Background()
	opsRcv := newReceiver(t, status(http.StatusOK))
	opsSecret := useOpsEndpoint(t, opsRcv.URL).Endpoint.Secret
	if _, err := shared.starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: herald.OpsEndpointID, URL: opsRcv.URL}); !errors.Is(err, starter.ErrInvalid) {
		t.Error("a plain put of the operational endpoint's id was accepted")
	}

	cust := newReceiver(t, status(http.StatusServiceUnavailable))
	one := 1
	o := fast(1)
	o.Breaker = &policy.BreakerOverride{ConsecutiveFailures: 2, ProbeDelay: duration.Duration(time.Second), MaxProbeDelay: duration.Duration(time.Second), HalfOpenSuccesses: &one}
	putEndpoint(t, "ops-cust", cust.URL, o)
	e1 := sendOne(t, "ops-cust")
	waitState(t, e1, herald.StateDeadLetter)
	e2 := sendOne(t, "ops-cust")
	waitState(t, e2, herald.StateDeadLetter)
	eventually(t, "the circuit opened", func() bool {
		st, err := shared.starter.GetEndpoint(ctx, "ops-cust")
		return err == nil && st.Circuit.State == policy.CircuitOpen
	})
	cust.setAnswer(status(http.StatusOK))
	for _, e := range []string{e1, e2} {
		if _, err := shared.starter.Replay(ctx, starter.Ref{Tenant: herald.DefaultTenant, EventID: e}); err != nil {
			t.Fatal(err)
		}
		waitState(t, e, herald.StateDelivered)
	}
	want := []string{herald.OpsDeadLettered, herald.OpsDeadLettered, herald.OpsRecovered, herald.OpsRecovered, herald.OpsCircuitClosed, herald.OpsCircuitOpened}
	eventually(t, "the operational events at the operational endpoint", func() bool {
		return slices.Equal(opsTypes(opsEventsOf(t, opsRcv, opsSecret, "ops-cust")), want)
	})
	for _, ev := range opsEventsOf(t, opsRcv, opsSecret, "ops-cust") {
		d := ev.Data
		if d.Tenant != herald.DefaultTenant || d.At.IsZero() {
			t.Errorf("%s: data %+v, want the tenant and the time", ev.Type, d)
		}
		if ev.Type == herald.OpsDeadLettered && (d.Reason == "" || d.Attempts != 1 || (d.EventID != e1 && d.EventID != e2)) {
			t.Errorf("%s: data %+v, want the event, its one attempt and the reason", ev.Type, d)
		}
		if ev.Type == herald.OpsCircuitOpened && d.Reason == "" {
			t.Errorf("%s: data %+v, want why it opened", ev.Type, d)
		}
	}

	// An operational delivery that dead-letters, and then is recovered, tells nobody.
	opsRcv.setAnswer(status(http.StatusInternalServerError))
	cust.setAnswer(status(http.StatusServiceUnavailable))
	e3 := sendOne(t, "ops-cust")
	waitState(t, e3, herald.StateDeadLetter)
	opsID := opsEventID(t, herald.OpsDeadLettered, herald.DefaultTenant, e3, 0)
	waitFor(t, tenantStatus{herald.OpsTenant}, opsID, herald.StateDeadLetter)
	opsRcv.setAnswer(status(http.StatusOK))
	if _, err := shared.starter.Replay(ctx, starter.Ref{Tenant: herald.OpsTenant, EventID: opsID}); err != nil {
		t.Fatal(err)
	}
	if err := shared.client.GetWorkflow(ctx, herald.DeliveryID(herald.OpsTenant, opsID), "").Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{
		opsEventID(t, herald.OpsDeadLettered, herald.OpsTenant, opsID, 0),
		opsEventID(t, herald.OpsRecovered, herald.OpsTenant, opsID, 1),
	} {
		_, err := shared.client.DescribeWorkflowExecution(ctx, herald.DeliveryID(herald.OpsTenant, id), "")
		var nf *serviceerror.NotFound
		if !errors.As(err, &nf) {
			t.Errorf("the operational delivery emitted operational event %s (describe: %v)", id, err)
		}
	}
	var e3Events []string
	for _, ev := range opsEventsOf(t, opsRcv, opsSecret, "ops-cust") {
		if ev.Data.EventID == e3 {
			e3Events = append(e3Events, ev.Type+" "+ev.ID)
		}
	}
	if w := herald.OpsDeadLettered + " " + opsID; !slices.Equal(e3Events, []string{w, w}) {
		t.Errorf("operational events about e3 %v, want its dead letter twice (refused, then replayed with the same id)", e3Events)
	}
}

// tenantStatus reads statuses of one tenant's deliveries.
type tenantStatus struct{ tenant string }

// Status is the status of the tenant's event ref names.
func (s tenantStatus) Status(ctx context.Context, ref starter.Ref) (starter.Report, error) {
	ref.Tenant = s.tenant
	return shared.starter.Status(ctx, ref)
}
