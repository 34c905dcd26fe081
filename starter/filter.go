package starter

import (
	"context"
	"errors"
	"fmt"
	"slices"

	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/expr"
)

// FilteredEndpoint is an endpoint subscribed to a sent event's type whose filter kept the
// event from it (herald.Endpoint.Filter).
type FilteredEndpoint struct {
	EndpointID string `json:"endpoint_id"`
	// Reason is "the filter is false", or why the filter could not be evaluated on the
	// event (such an event is not delivered either).
	Reason string `json:"reason"`
}

// subscriber is an endpoint a send to its tenant found, and its filter.
type subscriber struct {
	id     string
	filter string
}

// admissionMemo is the part of an endpoint workflow's admission memo (herald.MemoAdmission)
// a send reads: enough to tell that it matches the visibility record, and the filter.
type admissionMemo struct {
	Endpoint struct {
		ID     string   `json:"id"`
		Tenant string   `json:"tenant"`
		Types  []string `json:"types"`
		Filter string   `json:"filter"`
	} `json:"endpoint"`
}

// memoFilter returns the filter the admission memo of an endpoint workflow's visibility
// record shows, and whether the memo can be trusted: it decodes (the client's data
// converter decrypts it), names endpoint id and shows the tenant and subscription the
// record's search attributes show (tokens). A memo written before the record's last
// subscription change, or none, cannot.
func (s *Client) memoFilter(ex *workflowpb.WorkflowExecutionInfo, id, tenant string, tokens []string) (string, bool) {
	p := ex.GetMemo().GetFields()[herald.MemoAdmission]
	if p == nil {
		return "", false
	}
	var m admissionMemo
	if err := s.opts.DataConverter.FromPayload(p, &m); err != nil {
		return "", false
	}
	ep := m.Endpoint
	if ep.ID != id || herald.TenantOrDefault(ep.Tenant) != tenant || !slices.Equal(herald.SubscriptionTokens(ep.Tenant, ep.Types), tokens) {
		return "", false
	}
	return ep.Filter, true
}

// readFilters reads, for each subscriber whose memo could not be trusted (unread), its
// endpoint's configuration (herald.ReadAdmission: a describe) and takes its filter.
func (s *Client) readFilters(ctx context.Context, subs []subscriber, unread []int) error {
	errs := make([]error, len(unread))
	eachAtOnce(len(unread), recordReads, func(i int) {
		sub := &subs[unread[i]]
		if h := s.opts.OnFilterRead; h != nil {
			h(sub.id)
		}
		v, err := herald.ReadAdmission(ctx, s.c, sub.id)
		if errors.Is(err, herald.ErrNoEndpoint) {
			sub.id = "" // closed since the visibility store showed it
			return
		}
		if err != nil {
			errs[i] = err
			return
		}
		sub.filter = v.Endpoint.Filter
	})
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("read the filter of endpoint %s: %w", subs[unread[i]].id, err)
		}
	}
	return nil
}

// Receivers returns the ids of tenant's endpoints that receive ev (sorted): those
// subscribed to its type (Subscribers) whose filter, if any, is true on it; and those
// whose filter kept it from them, with why. A filter that cannot be evaluated on ev (a
// field ev lacks, the cost limit passed) keeps it from its endpoint. Each filter is
// compiled once per text (package expr's cache) and ev's data decoded once. A client
// whose keys cannot decrypt an endpoint's configuration gets an error (codec.IsUndecryptable)
// rather than a guess.
func (s *Client) Receivers(ctx context.Context, tenant string, ev Event) ([]string, []FilteredEndpoint, error) {
	tenant = herald.TenantOrDefault(tenant)
	subs, err := s.subscribers(ctx, tenant, ev.Type, true)
	if err != nil {
		return nil, nil, err
	}
	var in *expr.Input
	var inErr error
	ids := make([]string, 0, len(subs))
	var filtered []FilteredEndpoint
	for _, sub := range subs {
		if sub.filter == "" {
			ids = append(ids, sub.id)
			continue
		}
		if in == nil && inErr == nil {
			var v expr.Input
			if v, inErr = expr.NewInput(expr.Event{ID: ev.ID, Type: ev.Type, Tenant: tenant, Data: ev.Data}); inErr == nil {
				in = &v
			}
		}
		ok, err := false, inErr
		if err == nil {
			var f *expr.Filter
			if f, err = expr.CompileFilter(sub.filter); err == nil {
				ok, err = f.Match(*in)
			}
		}
		switch {
		case err != nil:
			filtered = append(filtered, FilteredEndpoint{EndpointID: sub.id, Reason: "the filter could not be evaluated, so the event is not delivered: " + err.Error()})
		case ok:
			ids = append(ids, sub.id)
		default:
			filtered = append(filtered, FilteredEndpoint{EndpointID: sub.id, Reason: "the filter is false"})
		}
	}
	return ids, filtered, nil
}
