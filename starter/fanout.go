package starter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.temporal.io/sdk/converter"

	"github.com/heraldhq/herald"
)

// PublishResult says where Publish sent an event: one delivery per endpoint of the tenant
// that subscribed to its type, or none (NoDestination).
type PublishResult struct {
	EventID string `json:"event_id"`
	Tenant  string `json:"tenant"`
	Type    string `json:"type"`
	// NoDestination is set when no endpoint of the tenant subscribed to the type: the event
	// was recorded (herald.NoDestinationID) and delivered nowhere.
	NoDestination bool `json:"no_destination,omitempty"`
	// Deliveries are sorted by endpoint id.
	Deliveries []FanoutDelivery `json:"deliveries"`
}

// FanoutDelivery is one endpoint's delivery of a published event.
type FanoutDelivery struct {
	EndpointID string `json:"endpoint_id"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Existed is set when an earlier send of the same event had started it.
	Existed bool `json:"existed,omitempty"`
}

// Publish sends ev to every endpoint of tenant that subscribed to ev.Type (fan-out): one
// delivery workflow per endpoint (herald.FanoutDeliveryID), each with its own ladder and
// dead letter, and the event id as webhook-id at every endpoint. ev.EndpointID must be
// empty. It reads the tenant's subscription directory, which every endpoint put updates
// before it returns, so an endpoint registered or subscribed before Publish is called
// receives the event.
//
// Publish is idempotent and safe to repeat after an error or a crash: sending the same
// event id again starts nothing twice and adds any delivery a cut-short send left out.
// Event ids are shared with the tenant's sends to one endpoint (Send): the id is held
// (herald.FanoutEventWorkflow) before any delivery starts, and the same id with another
// type or data, by either way of sending, fails with ErrConflict before anything starts;
// an id a send to one endpoint holds with the same type and data is that delivery, and
// nothing more is started. No matching endpoint is not an
// error: the event is recorded as having no destination (PublishResult.NoDestination). The
// event is checked against the catalog of event types first, as by Send.
func (s *Client) Publish(ctx context.Context, tenant string, ev Event) (PublishResult, error) {
	tenant = herald.TenantOrDefault(tenant)
	if err := herald.ValidateGrantedTenant(tenant); err != nil {
		return PublishResult{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if ev.EndpointID != "" {
		return PublishResult{}, fmt.Errorf("%w: the event names endpoint %s and tenant %s: send to one endpoint (Send) or to every subscribed endpoint of a tenant (Publish), not both", ErrInvalid, ev.EndpointID, tenant)
	}
	if err := validateEvent(&ev, s.opts.Now(), false); err != nil {
		return PublishResult{}, err
	}
	if err := s.checkType(ctx, ev); err != nil {
		return PublishResult{}, err
	}
	if err := s.requireWorkerKey(ctx); err != nil {
		return PublishResult{}, err
	}
	// The id first: a send to one endpoint or another event may hold it already.
	first, direct, err := s.holdForTenant(ctx, tenant, ev)
	if err != nil {
		return PublishResult{}, err
	}
	res := PublishResult{EventID: ev.ID, Tenant: tenant, Type: ev.Type}
	if direct != nil {
		res.Deliveries = []FanoutDelivery{*direct}
		return res, nil
	}
	ev.CreatedAt = first.CreatedAt // the deliveries a resend adds carry the event as first sent
	dir, err := s.Directory(ctx, tenant)
	if err == nil && dir.Large {
		dir, err = s.subscribers(ctx, tenant, ev.Type)
	}
	if err != nil {
		return PublishResult{}, fmt.Errorf("send event %s to tenant %s: %w", ev.ID, tenant, err)
	}
	matches := dir.Matching(ev.Type)
	if len(matches) == 0 {
		if err := s.recordNoDestination(ctx, tenant, ev); err != nil {
			return PublishResult{}, err
		}
		res.NoDestination, res.Deliveries = true, []FanoutDelivery{}
		return res, nil
	}
	res.Deliveries = make([]FanoutDelivery, len(matches))
	errs := make([]error, len(matches))
	eachAtOnce(len(matches), s.opts.FanoutParallelism, func(i int) {
		res.Deliveries[i], errs[i] = s.startFanout(ctx, tenant, matches[i], ev)
	})
	var failed []string
	for i, err := range errs {
		if err == nil {
			continue
		}
		if errors.Is(err, ErrConflict) {
			return PublishResult{}, err
		}
		failed = append(failed, fmt.Sprintf("%s: %v", matches[i], err))
	}
	if len(failed) > 0 {
		return PublishResult{}, fmt.Errorf("send event %s to tenant %s: %d of %d deliveries could not be started (%s): send the same event (id %s) again to add them; the others are not started twice",
			ev.ID, tenant, len(failed), len(matches), strings.Join(failed, "; "), ev.ID)
	}
	return res, nil
}

// startFanout starts endpoint's delivery of ev, or finds the one an earlier send started
// and checks that it carries the same event.
func (s *Client) startFanout(ctx context.Context, tenant, endpoint string, ev Event) (FanoutDelivery, error) {
	select {
	case s.fanout <- struct{}{}:
		defer func() { <-s.fanout }()
	case <-ctx.Done():
		return FanoutDelivery{EndpointID: endpoint}, fmt.Errorf("send event %s to endpoint %s: %w", ev.ID, endpoint, ctx.Err())
	}
	if h := s.opts.BeforeFanoutStart; h != nil {
		h(endpoint)
	}
	ev.EndpointID = endpoint
	wfID := herald.FanoutDeliveryID(tenant, endpoint, ev.ID)
	d := FanoutDelivery{EndpointID: endpoint, WorkflowID: wfID}
	var err error
	d.RunID, d.Existed, err = s.startOnce(ctx, wfID, fmt.Sprintf("%s → %s (tenant %s)", ev.Type, endpoint, tenant), herald.DeliveryWorkflow, herald.DeliveryInput{Event: ev},
		herald.AttrEndpoint.ValueSet(endpoint), herald.AttrEventType.ValueSet(ev.Type), herald.AttrEventID.ValueSet(ev.ID),
		herald.AttrTenant.ValueSet(herald.TenantOrDefault(tenant)))
	if err != nil {
		return d, fmt.Errorf("send event %s to endpoint %s: %w", ev.ID, endpoint, err)
	}
	if !d.Existed {
		return d, nil
	}
	return d, s.sameEvent(ctx, wfID, ev)
}

// recordNoDestination records that ev was sent to tenant while no endpoint subscribed to
// its type, once: a resend finds the record and checks it is the same event.
func (s *Client) recordNoDestination(ctx context.Context, tenant string, ev Event) error {
	wfID := herald.NoDestinationID(tenant, ev.ID)
	_, existed, err := s.startOnce(ctx, wfID, fmt.Sprintf("%s for tenant %s: no endpoint subscribed", ev.Type, tenant), herald.NoDestinationWorkflow, ev,
		herald.AttrEventType.ValueSet(ev.Type), herald.AttrEventID.ValueSet(ev.ID), herald.AttrTenant.ValueSet(herald.TenantOrDefault(tenant)))
	if err != nil {
		return fmt.Errorf("send event %s to tenant %s: record that no endpoint subscribed to %s: %w", ev.ID, tenant, ev.Type, err)
	}
	if !existed {
		return nil
	}
	was, err := s.noDestinationEvent(ctx, wfID)
	if err != nil {
		return fmt.Errorf("send event %s: the id was sent before, and that event cannot be read to compare: %w", ev.ID, err)
	}
	if diff := difference(was, ev); diff != "" {
		return fmt.Errorf("%w: event id %s was already sent %s: send the same type and data again, or choose a new id", ErrConflict, ev.ID, diff)
	}
	return nil
}

// noDestinationEvent reads the event a no-destination record holds.
func (s *Client) noDestinationEvent(ctx context.Context, wfID string) (Event, error) {
	var ev Event
	in, err := s.startInput(ctx, wfID)
	if err == nil {
		err = s.opts.DataConverter.FromPayloads(in, &ev)
	}
	return ev, err
}

// Directory returns a tenant's subscription directory: its endpoints and the event types
// each receives, as the last put left them. It reads what the directory workflow publishes
// (a describe: no worker is asked); for a directory of more than
// herald.MemoSubscriptionsMax endpoints that is only the Large marker, without entries. The first time a tenant's directory is read, the
// endpoints registered before directories existed are added to it (backfill).
func (s *Client) Directory(ctx context.Context, tenant string) (herald.Directory, error) {
	tenant = herald.TenantOrDefault(tenant)
	dir, err := s.readDirectory(ctx, tenant)
	if err != nil || dir.Backfilled {
		return dir, err
	}
	// One backfill at a time per tenant in this process; others wait for it and read again.
	v, err, _ := s.backfills.Do(tenant, func() (any, error) { return s.backfill(ctx, tenant) })
	if err != nil {
		return herald.Directory{}, err
	}
	return v.(herald.Directory), nil
}

// subscribers asks a Large directory for the endpoints that receive eventType (a query:
// a worker answers, with what every put before it recorded).
func (s *Client) subscribers(ctx context.Context, tenant, eventType string) (herald.Directory, error) {
	var dir herald.Directory
	v, err := s.c.QueryWorkflow(ctx, herald.SubscriptionsWorkflowID(tenant), "", herald.QuerySubscribers, eventType)
	if err == nil {
		err = v.Get(&dir)
	}
	if err != nil {
		return dir, fmt.Errorf("ask the subscriptions of tenant %s (more than %d endpoints: a Herald worker answers): %w", tenant, herald.MemoSubscriptionsMax, err)
	}
	return dir, nil
}

// readDirectory reads a tenant's directory as its workflow published it (an empty one when
// there is none yet).
func (s *Client) readDirectory(ctx context.Context, tenant string) (herald.Directory, error) {
	dir := herald.Directory{Tenant: tenant}
	desc, err := s.c.DescribeWorkflow(ctx, herald.SubscriptionsWorkflowID(tenant), "")
	switch {
	case isNotFound(err):
	case err != nil:
		return dir, fmt.Errorf("read the subscriptions of tenant %s: %w", tenant, err)
	default:
		if err := desc.GetMemoValue(herald.MemoSubscriptions, &dir); err != nil {
			v, qerr := s.c.QueryWorkflow(ctx, herald.SubscriptionsWorkflowID(tenant), "", herald.QuerySubscriptions)
			if qerr == nil {
				qerr = v.Get(&dir)
			}
			if qerr != nil {
				return dir, fmt.Errorf("read the subscriptions of tenant %s: %w", tenant, qerr)
			}
		}
	}
	return dir, nil
}

// backfill adds to tenant's directory the endpoints of the tenant registered before
// directories existed, found by listing every endpoint workflow, and marks the directory
// backfilled so that it is done once. Endpoints put since are in the directory already
// (their entry is kept).
func (s *Client) backfill(ctx context.Context, tenant string) (herald.Directory, error) {
	var ids []string
	for ex, err := range herald.Executions(ctx, s.c, herald.Workflows(herald.EndpointWorkflow).Running().String(), 500) {
		if err != nil {
			return herald.Directory{}, fmt.Errorf("add the endpoints registered before subscriptions to tenant %s's directory: list endpoints: %w", tenant, err)
		}
		if id, ok := herald.ParseEndpointWorkflowID(ex.GetExecution().GetWorkflowId()); ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	ids = slices.Compact(ids)
	subs := make([]*herald.Subscription, len(ids))
	errs := make([]error, len(ids))
	eachAtOnce(len(ids), 8, func(i int) {
		v, err := herald.ReadAdmission(ctx, s.c, ids[i])
		if errors.Is(err, herald.ErrNoEndpoint) {
			return // started, never registered
		}
		if err != nil {
			errs[i] = err
			return
		}
		if herald.TenantOrDefault(v.Endpoint.Tenant) == tenant {
			subs[i] = &herald.Subscription{Endpoint: ids[i], Types: v.Endpoint.Types, Version: v.Endpoint.Version}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return herald.Directory{}, fmt.Errorf("add the endpoints registered before subscriptions to tenant %s's directory: %w", tenant, err)
	}
	found := []herald.Subscription{}
	for _, sub := range subs {
		if sub != nil {
			found = append(found, *sub)
		}
	}
	var dir herald.Directory
	err := s.updateDirectory(ctx, tenant, herald.UpdateBackfill, found, &dir)
	if err != nil && strings.Contains(err.Error(), herald.ErrBackfilled.Error()) {
		// Another sender backfilled it meanwhile: read what it holds.
		var v converter.EncodedValue
		if v, err = s.c.QueryWorkflow(ctx, herald.SubscriptionsWorkflowID(tenant), "", herald.QuerySubscriptions); err == nil {
			err = v.Get(&dir)
		}
	}
	if err != nil {
		return dir, fmt.Errorf("add the endpoints registered before subscriptions to tenant %s's directory: %w", tenant, err)
	}
	return dir, nil
}

// updateDirectory runs update name with arg on tenant's directory, starting it if need be,
// and waits for its result (into out, if not nil).
func (s *Client) updateDirectory(ctx context.Context, tenant, name string, arg, out any) error {
	wfID := herald.SubscriptionsWorkflowID(tenant)
	_, err := s.updateWithStart(ctx, startUpdate{
		ID: wfID, Type: herald.SubscriptionsWorkflow, Summary: "subscriptions of tenant " + tenant,
		Input: herald.SubscriptionsInput{Directory: herald.Directory{Tenant: tenant}},
		Name:  name, Arg: arg,
	}, out)
	return err
}

// subscribe records a put endpoint's subscription in its tenant's directory.
// A directory that holds the endpoint with its types already is left alone (most puts
// change neither types nor tenant): a describe, not an update.
func (s *Client) subscribe(ctx context.Context, ep herald.Endpoint) error {
	tenant := herald.TenantOrDefault(ep.Tenant)
	if dir, err := s.readDirectory(ctx, tenant); err == nil {
		if e, ok := dir.Find(ep.ID); ok && slices.Equal(e.Types, ep.Types) {
			return nil
		}
	}
	return s.updateDirectory(ctx, tenant, herald.UpdateSubscribe,
		herald.Subscription{Endpoint: ep.ID, Types: ep.Types, Version: ep.Version}, nil)
}

// leaveTenant takes endpoint id out of the directory of the tenant it belongs to, when a
// put is about to move it to another tenant. Done before the move, it is safe to repeat:
// a put that fails after it leaves the endpoint out of its old tenant's sends, and running
// the put again moves it and adds it to the new tenant's directory.
func (s *Client) leaveTenant(ctx context.Context, id, newTenant string) error {
	v, err := herald.ReadAdmission(ctx, s.c, id)
	if errors.Is(err, herald.ErrNoEndpoint) || isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the endpoint's tenant: %w", err)
	}
	old := herald.TenantOrDefault(v.Endpoint.Tenant)
	if old == newTenant {
		return nil
	}
	if err := s.updateDirectory(ctx, old, herald.UpdateSubscribe, herald.Subscription{Endpoint: id, Version: v.Endpoint.Version + 1, Remove: true}, nil); err != nil {
		return fmt.Errorf("take it out of tenant %s's directory: %w", old, err)
	}
	return nil
}
