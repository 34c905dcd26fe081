package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// subscriptionsContinueAsNewEvents: past this many history events a directory continues
// as new (well below the 2,000 updates a run may take: each update is a few events).
const subscriptionsContinueAsNewEvents = 2000

// SubscriptionsWorkflow is a tenant's subscription directory: the tenant's endpoints and
// the event types each receives, kept sorted by endpoint. Endpoint puts record changes in
// it (herald.UpdateSubscribe) before they return, and it publishes itself in its memo
// (herald.MemoSubscriptions) with every change, so that a send reads it with a describe:
// what a put recorded, the next send sees.
func SubscriptionsWorkflow(ctx workflow.Context, in herald.SubscriptionsInput) error {
	d := in.Directory
	// marker is the Large marker the memo holds, if it holds one rather than the entries (a
	// run continued as new keeps its predecessor's memo).
	var marker *herald.Directory
	if len(d.Entries) > herald.MemoSubscriptionsMax {
		marker = &herald.Directory{Tenant: d.Tenant, Backfilled: d.Backfilled, Large: true}
	}
	publish := func() {
		memo := d
		if len(d.Entries) > herald.MemoSubscriptionsMax {
			memo = herald.Directory{Tenant: d.Tenant, Backfilled: d.Backfilled, Large: true}
			if marker != nil && marker.Backfilled == memo.Backfilled {
				return // published already: a put to a large directory rewrites no memo
			}
			marker = &memo
		} else {
			marker = nil
		}
		// Upsert fails only on a memo it cannot encode; senders then ask with a query.
		_ = workflow.UpsertMemo(ctx, map[string]any{herald.MemoSubscriptions: memo})
	}
	if err := workflow.SetQueryHandler(ctx, herald.QuerySubscriptions, func() (herald.Directory, error) {
		return d, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, herald.QuerySubscribers, func(eventType string) (herald.Directory, error) {
		out := herald.Directory{Tenant: d.Tenant, Backfilled: d.Backfilled}
		for _, s := range d.Entries {
			if policy.MatchesType(s.Types, eventType) {
				out.Entries = append(out.Entries, s)
			}
		}
		return out, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateSubscribe,
		func(ctx workflow.Context, s herald.Subscription) error {
			if d.Apply(s) {
				publish()
			}
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, s herald.Subscription) error {
			return validateSubscription(s)
		}}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateBackfill,
		func(ctx workflow.Context, subs []herald.Subscription) (herald.Directory, error) {
			for _, s := range subs {
				// What puts recorded is newer than what a scan found: keep it.
				if _, ok := d.Find(s.Endpoint); !ok {
					d.Apply(s)
				}
			}
			d.Backfilled = true
			publish()
			return d, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, subs []herald.Subscription) error {
			if d.Backfilled {
				// Another sender's backfill came first: refused, this one leaves no trace.
				return herald.ErrBackfilled
			}
			for _, s := range subs {
				if err := validateSubscription(s); err != nil {
					return err
				}
			}
			return nil
		}}); err != nil {
		return err
	}
	// The memo goes with the run that continues (the SDK carries it over).
	return continueWhenLong(ctx, subscriptionsContinueAsNewEvents, herald.SubscriptionsWorkflow, func() herald.SubscriptionsInput {
		return herald.SubscriptionsInput{Directory: d}
	})
}

// validateSubscription refuses an entry no put could have made; a refused update leaves no
// trace in history.
func validateSubscription(s herald.Subscription) error {
	if err := herald.ValidateEndpointID(s.Endpoint); err != nil {
		return err
	}
	if err := policy.ValidateTypePatterns(s.Types); err != nil {
		return fmt.Errorf("endpoint %s: types: %w", s.Endpoint, err)
	}
	return nil
}

// NoDestination records an event sent to a tenant none of whose endpoints subscribed to
// its type: the event is its input, and it completes at once.
func NoDestination(ctx workflow.Context, ev herald.Event) error { return nil }

// FanoutEvent holds a tenant's event id for an event sent to the tenant
// (herald.FanoutEventWorkflow): the event is its input, and it completes at once.
func FanoutEvent(ctx workflow.Context, ev herald.Event) error { return nil }
