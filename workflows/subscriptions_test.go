package workflows

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
)

// TestSubscriptionsDirectory: the directory keeps one entry per endpoint, sorted, the one
// of the latest version; a removal takes the endpoint out; a backfill adds only endpoints
// it lacks and marks it backfilled; an entry no put could make is refused.
func TestSubscriptionsDirectory(t *testing.T) {
	env := newTestEnv()
	env.RegisterWorkflowWithOptions(SubscriptionsWorkflow, workflow.RegisterOptions{Name: herald.SubscriptionsWorkflow})
	var outcomes []*updateOutcome[any]
	subscribe := func(s herald.Subscription) {
		outcomes = append(outcomes, sendUpdate[any](env, herald.UpdateSubscribe, s))
	}
	var bad *updateOutcome[any]
	var backfilled *updateOutcome[herald.Directory]
	var mid, end herald.Directory
	env.RegisterDelayedCallback(func() {
		subscribe(herald.Subscription{Endpoint: "b", Version: 1})
		subscribe(herald.Subscription{Endpoint: "a", Types: []string{"order.*"}, Version: 1})
		subscribe(herald.Subscription{Endpoint: "a", Types: []string{"invoice.sent"}, Version: 3})
		subscribe(herald.Subscription{Endpoint: "a", Types: []string{"stale"}, Version: 2})
		bad = sendUpdate[any](env, herald.UpdateSubscribe, herald.Subscription{Endpoint: "c", Types: []string{"order.*.x"}})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		mid = mustQuery[herald.Directory](t, env, herald.QuerySubscriptions)
		subscribe(herald.Subscription{Endpoint: "b", Version: 2, Remove: true})
		backfilled = sendUpdate[herald.Directory](env, herald.UpdateBackfill, []herald.Subscription{
			{Endpoint: "a", Types: []string{"old"}, Version: 9}, {Endpoint: "c", Version: 1},
		})
	}, time.Minute)
	var again *updateOutcome[herald.Directory]
	env.RegisterDelayedCallback(func() {
		again = sendUpdate[herald.Directory](env, herald.UpdateBackfill, []herald.Subscription{{Endpoint: "d"}})
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		end = mustQuery[herald.Directory](t, env, herald.QuerySubscriptions)
		env.CancelWorkflow()
	}, time.Hour)
	env.ExecuteWorkflow(herald.SubscriptionsWorkflow, herald.SubscriptionsInput{Directory: herald.Directory{Tenant: "acme"}})

	for i, o := range outcomes {
		o.check(t, fmt.Sprintf("subscribe %d", i+1))
	}
	if bad == nil || bad.rejected == nil {
		t.Errorf("a subscription with a bad pattern was not refused: %+v", bad)
	}
	want := []herald.Subscription{{Endpoint: "a", Types: []string{"invoice.sent"}, Version: 3}, {Endpoint: "b", Version: 1}}
	if !slices.EqualFunc(mid.Entries, want, sameSubscription) || mid.Backfilled {
		t.Errorf("directory after the subscribes = %+v, want %+v", mid, want)
	}
	backfilled.mustSucceed(t, "backfill")
	want = []herald.Subscription{{Endpoint: "a", Types: []string{"invoice.sent"}, Version: 3}, {Endpoint: "c", Version: 1}}
	if !slices.EqualFunc(end.Entries, want, sameSubscription) || !end.Backfilled || end.Tenant != "acme" {
		t.Errorf("directory after the removal and the backfill = %+v, want %+v, backfilled", end, want)
	}
	if again == nil || again.rejected == nil || !strings.Contains(again.rejected.Error(), herald.ErrBackfilled.Error()) {
		t.Errorf("a second backfill was not refused (a refused update leaves no trace): %+v", again)
	}
	if !slices.EqualFunc(backfilled.result.Entries, want, sameSubscription) {
		t.Errorf("backfill answered %+v", backfilled.result)
	}
	if got := end.Matching("invoice.sent"); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("matching invoice.sent = %v", got)
	}
	if got := end.Matching("order.paid"); !slices.Equal(got, []string{"c"}) {
		t.Errorf("matching order.paid = %v", got)
	}
}

func sameSubscription(a, b herald.Subscription) bool {
	return a.Endpoint == b.Endpoint && a.Version == b.Version && slices.Equal(a.Types, b.Types) && a.Remove == b.Remove
}

// TestSubscriptionsContinueAsNew: a directory continues as new once its history is long
// (the test environment counts no events: the length is set), carrying every entry, sorted;
// an update is never accepted and then dropped by the continue-as-new (one not accepted is
// retried by the server on the new run).
func TestSubscriptionsContinueAsNew(t *testing.T) {
	env := newTestEnv()
	env.RegisterWorkflowWithOptions(SubscriptionsWorkflow, workflow.RegisterOptions{Name: herald.SubscriptionsWorkflow})
	const n = 50
	for i := range n {
		env.RegisterDelayedCallback(func() {
			sendUpdate[any](env, herald.UpdateSubscribe, herald.Subscription{Endpoint: fmt.Sprintf("ep-%04d", n-1-i), Version: 1})
		}, time.Duration(i+1)*time.Second)
	}
	var last *updateOutcome[any]
	env.RegisterDelayedCallback(func() {
		env.SetCurrentHistoryLength(subscriptionsContinueAsNewEvents + 1)
		last = sendUpdate[any](env, herald.UpdateSubscribe, herald.Subscription{Endpoint: "ep-9999", Types: []string{"order.*"}, Version: 1})
	}, time.Minute)
	env.ExecuteWorkflow(herald.SubscriptionsWorkflow, herald.SubscriptionsInput{Directory: herald.Directory{Tenant: "acme", Backfilled: true}})
	_, next := continuedAsNew[herald.SubscriptionsInput](t, env)
	got := next.Directory.Entries
	if len(got) < n || next.Directory.Tenant != "acme" || !next.Directory.Backfilled {
		t.Fatalf("continued with %d entries of tenant %q (backfilled %v), want %d, acme, backfilled", len(got), next.Directory.Tenant, next.Directory.Backfilled, n)
	}
	for i, e := range got[:n] {
		if e.Endpoint != fmt.Sprintf("ep-%04d", i) {
			t.Fatalf("entry %d is %s: entries are lost or out of order", i, e.Endpoint)
		}
	}
	if _, kept := next.Directory.Find("ep-9999"); last.accepted != kept {
		t.Fatalf("the update that came with the continue-as-new: accepted %v, in the next run %v", last.accepted, kept)
	}
}
