package starter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/heraldhq/herald"
)

// How a put waits for its tenant's sends to find the endpoint (awaitIndexed).
const (
	// indexPatience is the longest a put waits for the visibility store to show it.
	indexPatience = 30 * time.Second
	// indexQueryBatch is how many endpoints one visibility read checks.
	indexQueryBatch = 200
	// indexFirstPoll and indexLastPoll bound the pause between two reads.
	indexFirstPoll = 5 * time.Millisecond
	indexLastPoll  = 250 * time.Millisecond
)

// subscriptionPage is how many endpoints one visibility read of a send returns.
const subscriptionPage = 1000

// Subscribers returns the ids of tenant's endpoints that receive events of eventType
// (policy.MatchesType), sorted. It is one indexed visibility query on the endpoints'
// HeraldSubscriptions (herald.MatchingTokens): no worker answers it, and its cost grows
// with the endpoints that match, not with the tenant. Every put that returned before it is
// seen (awaitIndexed).
//
// Subscribers does not apply the endpoints' filters, which need the event: Receivers does.
func (s *Client) Subscribers(ctx context.Context, tenant, eventType string) ([]string, error) {
	subs, err := s.subscribers(ctx, tenant, eventType, false)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(subs))
	for i, sub := range subs {
		ids[i] = sub.id
	}
	return ids, nil
}

// subscribers returns tenant's endpoints that receive events of eventType, sorted by id,
// and, withFilters, their filters: each from the admission memo the same visibility record
// holds (memoFilter), or, where that memo cannot be trusted, read from the endpoint
// (readFilters).
func (s *Client) subscribers(ctx context.Context, tenant, eventType string, withFilters bool) ([]subscriber, error) {
	tenant = herald.TenantOrDefault(tenant)
	q := herald.Where().HasAny(herald.AttrSubscriptions, herald.MatchingTokens(tenant, eventType)...).Running()
	var subs []subscriber
	var unread []int
	for ex, err := range herald.Executions(ctx, s.c, q.String(), subscriptionPage) {
		if err != nil {
			return nil, fmt.Errorf("find the endpoints of tenant %s subscribed to %s: %w", tenant, eventType, err)
		}
		id, ok := herald.ParseEndpointWorkflowID(ex.GetExecution().GetWorkflowId())
		if !ok {
			continue
		}
		// The store may compare tokens without regard to case: compare them exactly.
		t, tokens := indexed(ex)
		if t != tenant || !herald.TokensMatch(tokens, tenant, eventType) {
			continue
		}
		var filter string
		if withFilters {
			var ok bool
			if filter, ok = s.memoFilter(ex, id, tenant, tokens); !ok {
				unread = append(unread, len(subs))
			}
		}
		subs = append(subs, subscriber{id: id, filter: filter})
	}
	if err := s.readFilters(ctx, subs, unread); err != nil {
		return nil, fmt.Errorf("find the endpoints of tenant %s subscribed to %s: %w", tenant, eventType, err)
	}
	subs = slices.DeleteFunc(subs, func(sub subscriber) bool { return sub.id == "" })
	slices.SortFunc(subs, func(a, b subscriber) int { return strings.Compare(a.id, b.id) })
	return slices.CompactFunc(subs, func(a, b subscriber) bool { return a.id == b.id }), nil
}

// indexed returns the tenant and subscription tokens an endpoint workflow's visibility
// record holds.
func indexed(ex *workflowpb.WorkflowExecutionInfo) (string, []string) {
	fields := ex.GetSearchAttributes().GetIndexedFields()
	var tokens []string
	if p := fields[herald.AttrSubscriptions.GetName()]; p != nil {
		_ = json.Unmarshal(p.GetData(), &tokens)
	}
	return keyword(fields[herald.AttrTenant.GetName()].GetData()), tokens
}

// awaitIndexed waits until the visibility store shows each of eps with the tenant,
// subscription (herald.SubscriptionTokens) and filter its put left, so that a send from
// any process finds it and applies that filter: read-your-writes for sends to a tenant. An
// endpoint whose record shows something else because a later put changed it again is not
// waited for.
func (s *Client) awaitIndexed(ctx context.Context, eps ...herald.Endpoint) error {
	want := make(map[string]herald.Endpoint, len(eps))
	for _, ep := range eps {
		want[herald.EndpointWorkflowID(ep.ID)] = ep
	}
	start, pause := time.Now(), indexFirstPoll
	for {
		var ids []string
		for id := range want {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for batch := range slices.Chunk(ids, indexQueryBatch) {
			if err := s.checkIndexed(ctx, batch, want, time.Since(start) > indexPatience/4); err != nil {
				return err
			}
		}
		if len(want) == 0 {
			return nil
		}
		if time.Since(start) > indexPatience {
			ep := want[ids[slices.IndexFunc(ids, func(id string) bool { _, ok := want[id]; return ok })]]
			return fmt.Errorf("the visibility store does not show endpoint %s in tenant %s after %s (%d endpoints waiting): is Temporal's visibility keeping up?",
				ep.ID, herald.TenantOrDefault(ep.Tenant), indexPatience, len(want))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the visibility store to show %d endpoints: %w", len(want), ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, indexLastPoll)
	}
}

// checkIndexed reads the visibility records of the endpoint workflows ids and takes out of
// want those that show what was put. With late set, an endpoint that shows something else
// is asked for its version: one a later put changed is not waited for.
func (s *Client) checkIndexed(ctx context.Context, ids []string, want map[string]herald.Endpoint, late bool) error {
	records, err := s.runningRecords(ctx, ids)
	if err != nil {
		return err
	}
	for i, ex := range records {
		if ex == nil {
			continue
		}
		ep := want[ids[i]]
		tenant, tokens := indexed(ex)
		if tenant == herald.TenantOrDefault(ep.Tenant) && slices.Equal(tokens, herald.SubscriptionTokens(ep.Tenant, ep.Types)) {
			// The filter too: a send takes it from the record's memo when the memo
			// matches the record, and reads the endpoint when it does not.
			if filter, trusted := s.memoFilter(ex, ep.ID, tenant, tokens); !trusted || filter == ep.Filter {
				delete(want, ids[i])
				continue
			}
		}
		if late && len(tokens) > 0 {
			if v, err := herald.ReadAdmission(ctx, s.c, ep.ID); err == nil && v.Endpoint.Version > ep.Version {
				delete(want, ids[i])
			}
		}
	}
	return nil
}

// recordReads is how many visibility reads by id runningRecords makes at once.
const recordReads = 16

// runningRecords returns the visibility record of the running execution of each workflow of
// ids (nil for one not running or not shown yet). Each is read by its id alone, with one
// equality (WorkflowId = ...): the store answers it from its index on workflow ids, in a
// time that does not grow with the installation, where a list of ids (WorkflowId IN ...)
// or a condition on the type or status lets SQLite scan every record (200 ids: 36-46 ms at
// 20,000 endpoints, 124-131 ms at 100,000).
func (s *Client) runningRecords(ctx context.Context, ids []string) ([]*workflowpb.WorkflowExecutionInfo, error) {
	out := make([]*workflowpb.WorkflowExecutionInfo, len(ids))
	errs := make([]error, len(ids))
	eachAtOnce(len(ids), recordReads, func(i int) {
		for ex, err := range herald.Executions(ctx, s.c, herald.WorkflowID(ids[i]).String(), 10) {
			if err != nil {
				errs[i] = fmt.Errorf("read the visibility record of %s: %w", ids[i], err)
				return
			}
			if ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				out[i] = ex
				return
			}
		}
	})
	return out, errors.Join(errs...)
}
