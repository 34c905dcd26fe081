package starter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald"
)

// PublishResult says where Publish sent an event: one delivery per endpoint of the tenant
// that subscribed to its type, or none (NoDestination).
type PublishResult struct {
	EventID string `json:"event_id"`
	Tenant  string `json:"tenant"`
	Type    string `json:"type"`
	// NoDestination is set when no endpoint of the tenant subscribed to the type, or the
	// filters of all that did kept the event from them: the event was recorded
	// (herald.NoDestinationID) and delivered nowhere.
	NoDestination bool `json:"no_destination,omitempty"`
	// Deliveries are sorted by endpoint id.
	Deliveries []FanoutDelivery `json:"deliveries"`
	// Filtered are the endpoints subscribed to the type whose filter kept the event from
	// them (false, or an error evaluating it), sorted by endpoint id.
	Filtered []FilteredEndpoint `json:"filtered,omitempty"`
	// DeliverAt is when the first attempts go, for a scheduled send (SendOptions).
	DeliverAt time.Time `json:"deliver_at,omitzero"`
}

// FanoutDelivery is one endpoint's delivery of a published event.
type FanoutDelivery struct {
	EndpointID string `json:"endpoint_id"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Existed is set when an earlier send of the same event had started it.
	Existed bool `json:"existed,omitempty"`
}

// Publish sends ev to every endpoint of tenant that subscribed to ev.Type and whose filter,
// if it has one, is true on ev (fan-out; Receivers, the others are listed in
// PublishResult.Filtered): one delivery workflow per endpoint (herald.FanoutDeliveryID),
// each with its own ladder and dead letter, and the event id as webhook-id at every
// endpoint. ev.EndpointID must be empty. It finds the endpoints with Receivers, which sees
// every endpoint put that returned before (its filter too), so an endpoint registered,
// subscribed or filtered before Publish is called receives the event as that put says.
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
	return s.PublishWith(ctx, tenant, ev, SendOptions{})
}

// PublishWith is Publish with options: a deliver_at schedules every delivery's first
// attempt (see SendOptions).
func (s *Client) PublishWith(ctx context.Context, tenant string, ev Event, o SendOptions) (PublishResult, error) {
	at, err := o.deliverAt(s.opts.Now())
	if err != nil {
		return PublishResult{}, err
	}
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
	res := PublishResult{EventID: ev.ID, Tenant: tenant, Type: ev.Type, DeliverAt: at}
	if direct != nil {
		res.Deliveries = []FanoutDelivery{*direct}
		return res, nil
	}
	ev.CreatedAt = first.CreatedAt // the deliveries a resend adds carry the event as first sent
	matches, filtered, err := s.Receivers(ctx, tenant, ev)
	if err != nil {
		return PublishResult{}, fmt.Errorf("send event %s to tenant %s: %w", ev.ID, tenant, err)
	}
	res.Filtered = filtered
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
		res.Deliveries[i], errs[i] = s.startFanout(ctx, tenant, matches[i], ev, at)
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
func (s *Client) startFanout(ctx context.Context, tenant, endpoint string, ev Event, at time.Time) (FanoutDelivery, error) {
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
	// The order is per endpoint and key: each endpoint's delivery takes its own place.
	order, err := s.placeOrdered(ctx, tenant, wfID, ev)
	if err != nil {
		return d, fmt.Errorf("send event %s to endpoint %s: %w", ev.ID, endpoint, err)
	}
	d.RunID, d.Existed, err = s.startOnce(ctx, wfID, fmt.Sprintf("%s → %s (tenant %s)%s", ev.Type, endpoint, tenant, scheduledSummary(at)), herald.DeliveryWorkflow, herald.DeliveryInput{Event: ev, DeliverAt: at, Ordering: order},
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
