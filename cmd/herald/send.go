package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

func newSendCmd(g *globals) *cobra.Command {
	var endpoint, tenant, id, typ, data, deliverAt, orderingKey string
	var delay time.Duration
	cmd := &cobra.Command{
		Use:   "send (--tenant T | --endpoint ID) --type TYPE --data JSON",
		Short: "Send an event to a tenant's subscribed endpoints, or to one endpoint",
		Long: `Send an event. With --tenant, Herald delivers it to every endpoint of that tenant whose
subscribed types (herald endpoint put --types) match --type: one delivery per endpoint,
each with its own retries and dead letter, and the event id as webhook-id everywhere. An
endpoint registered or subscribed before send is called receives it. When no endpoint
matches, the event is recorded with no destination; that is not an error.

With --endpoint, the event goes to that one endpoint, whatever its subscriptions.

Herald starts deliveries at once and retries on the ladder until receivers answer 2xx.
Sending the same --id again is safe: it starts nothing twice, and for a tenant it adds any
delivery a cut-short send left out. The same id with another type or data is refused. An
id is one per tenant whether the event goes to one endpoint (--endpoint) or to the tenant
(--tenant): sent one way and then the other with the same type and data, it is the same
event (nothing more is sent); with other type or data, it is refused.

--data takes JSON inline, @FILE to read a file, or - to read standard input (256 KiB at
most once compacted). The receiver gets the data exactly as given, compacted, never re-escaped.

The event's --type is checked against the catalog of event types (herald event-type
--help): data that does not match its type's JSON Schema is refused, naming where and
which rule, and so is a type that is not registered when strict types are on.

--deliver-at (RFC 3339) or --delay (a duration) schedules the send: the deliveries start now,
durable, show as scheduled in herald status, and make their first attempt then (90 days
ahead at most). herald cancel stops a scheduled send before it goes.

--ordering-key K orders the event after the earlier ones sent to the same endpoint with the
same key (for --tenant, at each endpoint): its first request waits until the one before it
is delivered, skipped, or dead-lettered (what a dead letter does is the endpoint's
--ordering-on-dead-letter, block by default). Other keys, and events without one, are not
held. A key is 1 to 128 ASCII letters, digits, '-', '_', '.', ':' and '@'.`,
		Example: `  herald send --tenant acme --type order.paid --data '{"order":42}'
  herald send --tenant acme --type order.paid --id evt_order_42_paid --data @event.json
  herald send --endpoint acme-billing --type order.paid --data '{"order":42}'
  herald send --tenant acme --type trial.ending --delay 72h --data '{"account":7}'
  herald send --endpoint acme-billing --type invoice.due --deliver-at 2026-12-24T09:00:00Z --data '{}'
  herald send --endpoint acme-billing --type subscription.updated --ordering-key customer:42 --data '{"plan":"pro"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (endpoint == "") == (tenant == "") {
				return fmt.Errorf("%w: give --tenant (every subscribed endpoint of the tenant) or --endpoint (one endpoint), one of them", errUsage)
			}
			if tenant != "" {
				if err := herald.ValidateGrantedTenant(tenant); err != nil {
					return fmt.Errorf("%w: --tenant: %v", errUsage, err)
				}
			}
			at, err := parseSchedule(deliverAt, delay, cmd.Flags().Changed("delay"), time.Now())
			if err != nil {
				return err
			}
			opts := starter.SendOptions{DeliverAt: at}
			if orderingKey != "" {
				if err := herald.ValidateOrderingKey(orderingKey); err != nil {
					return fmt.Errorf("%w: --ordering-key: %v", errUsage, err)
				}
			}
			raw, err := readData(data, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if tenant != "" {
				ev := starter.Event{ID: id, Type: typ, Data: json.RawMessage(raw), OrderingKey: orderingKey}
				return show(g, cmd, func(ctx context.Context, s *starter.Client) (starter.PublishResult, error) {
					return s.PublishWith(ctx, tenant, ev, opts)
				}, g.printPublished)
			}
			ev := starter.Event{ID: id, EndpointID: endpoint, Type: typ, Data: json.RawMessage(raw), OrderingKey: orderingKey}
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (starter.SendResult, error) {
				res, err := s.SendWith(ctx, ev, opts)
				if errors.Is(err, starter.ErrNotFound) {
					err = fmt.Errorf("%w (%s)", err, g.herald("endpoint", "put", endpoint, "--url", "URL"))
				}
				return res, err
			}, func(w io.Writer, res starter.SendResult) error {
				tenant, _, _ := herald.ParseDeliveryID(res.WorkflowID)
				fmt.Fprintf(w, "Sent %s (workflow %s)\n", res.EventID, res.WorkflowID)
				if !res.DeliverAt.IsZero() {
					fmt.Fprintf(w, "Scheduled: the first attempt goes at %s (cancel: %s)\n", fmtTime(res.DeliverAt), g.herald(cancelArgs(res.EventID, tenant)...))
				}
				_, err := fmt.Fprintf(w, "Follow it: %s\n", g.herald(statusArgs(res.EventID, tenant)...))
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&tenant, "tenant", "", "send to every endpoint of this tenant subscribed to --type (herald-ops is reserved)")
	f.StringVar(&endpoint, "endpoint", "", "send to this one endpoint instead")
	f.StringVar(&id, "id", "", "event id (default: a new evt_... id); receivers deduplicate on it")
	f.StringVar(&typ, "type", "", "event type (required): ASCII letters, digits, '-', '_' and '.', e.g. order.paid")
	f.StringVar(&data, "data", "", "event payload: JSON, @FILE or - for stdin (required)")
	f.StringVar(&deliverAt, "deliver-at", "", "schedule the first attempt for this time (RFC 3339, e.g. 2026-12-24T09:00:00Z; at most 90 days ahead)")
	f.DurationVar(&delay, "delay", 0, "schedule the first attempt this long from now (e.g. 10m, 72h; instead of --deliver-at)")
	f.StringVar(&orderingKey, "ordering-key", "", "deliver after the earlier events to the same endpoint with this key (1-128 of A-Z a-z 0-9 - _ . : @)")
	_ = cmd.MarkFlagRequired("data")
	_ = cmd.MarkFlagRequired("type")
	return cmd
}

// printPublished prints where a send to a tenant went: each endpoint's delivery.
func (g *globals) printPublished(w io.Writer, res starter.PublishResult) error {
	follow := g.herald(statusArgs(res.EventID, res.Tenant)...)
	for _, f := range res.Filtered {
		fmt.Fprintf(w, "Not sent to %s: %s\n", f.EndpointID, f.Reason)
	}
	if res.NoDestination && len(res.Filtered) > 0 {
		_, err := fmt.Fprintf(w, "Recorded %s (%s) with no destination: the filters of tenant %s's endpoints kept it from them.\nFollow it: %s\n",
			res.EventID, res.Type, res.Tenant, follow)
		return err
	}
	if res.NoDestination {
		_, err := fmt.Fprintf(w, "Recorded %s (%s) with no destination: no endpoint of tenant %s subscribes to %s.\nFollow it: %s\n",
			res.EventID, res.Type, res.Tenant, res.Type, follow)
		return err
	}
	fmt.Fprintf(w, "Sent %s (%s) to %d endpoint(s) of tenant %s:\n", res.EventID, res.Type, len(res.Deliveries), res.Tenant)
	if !res.DeliverAt.IsZero() {
		fmt.Fprintf(w, "Scheduled: the first attempts go at %s (cancel: %s)\n", fmtTime(res.DeliverAt), g.herald(cancelArgs(res.EventID, res.Tenant)...))
	}
	for _, d := range res.Deliveries {
		note := ""
		if d.Existed {
			note = " (already started by an earlier send)"
		}
		fmt.Fprintf(w, "  %s  workflow %s%s\n", d.EndpointID, d.WorkflowID, note)
	}
	_, err := fmt.Fprintf(w, "Follow it: %s\n", follow)
	return err
}

// readData resolves --data: inline JSON, @file or - (stdin), refusing more than the limit.
func readData(arg string, stdin io.Reader) ([]byte, error) {
	path, ok := strings.CutPrefix(arg, "@")
	if !ok && arg != "-" {
		return []byte(arg), nil
	}
	// The limit counts the data compacted (starter.ValidateEvent checks it).
	return readBounded("data", arg, path, stdin, 4*herald.MaxDataBytes, starter.ErrTooLarge,
		"event data may be at most 256 KiB compacted")
}

// statusArgs are the arguments of herald status for an event of tenant.
func statusArgs(eventID, tenant string) []string {
	if tenant == "" || tenant == herald.DefaultTenant {
		return []string{"status", eventID}
	}
	return []string{"status", eventID, "--tenant", tenant}
}

// replayArgs are the arguments of herald replay for an event of tenant.
func replayArgs(eventID, tenant string) []string {
	return append([]string{"replay"}, statusArgs(eventID, tenant)[1:]...)
}
