package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
)

func newCancelCmd(g *globals) *cobra.Command {
	var tenant, only, reason string
	cmd := &cobra.Command{
		Use:   "cancel EVENT_ID [--reason TEXT] [--tenant T] [--only ENDPOINT]",
		Short: "Stop a scheduled, waiting or dead-lettered delivery",
		Long: `Cancel an event's delivery before it reaches its receiver: a scheduled send (herald send
--deliver-at/--delay), a delivery waiting for its next retry or for its endpoint (open
circuit, concurrency cap), or a dead letter. It stops at once, shows as cancelled in herald
status, the dashboard and the event list (--state cancelled), and keeps --reason and who
asked in its history. An attempt in flight finishes first (a request on the wire cannot be
taken back): if it delivers the event, cancel fails with "already delivered". A delivered,
skipped, expired or cancelled event cannot be cancelled.

For an event sent to a tenant (herald send --tenant), every delivery of it that can be
stopped is; --only ENDPOINT cancels that endpoint's delivery alone.`,
		Example: `  herald cancel evt_0193... --reason "sent to the wrong customer"
  herald cancel evt_0193... --tenant acme --only acme-billing`,
		Args: exactArgs(1, "give the event id that send printed"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := herald.ValidateTenant(tenant); err != nil {
				return fmt.Errorf("%w: --tenant: %v", errUsage, err)
			}
			if len(reason) > herald.MaxCancelReason {
				return fmt.Errorf("%w: --reason is %d bytes long; the limit is %d", errUsage, len(reason), herald.MaxCancelReason)
			}
			id := args[0]
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (starter.Cancelled, error) {
				return s.Cancel(ctx, starter.Ref{Tenant: tenant, EventID: id, Endpoint: only}, herald.CancelRequest{Reason: reason, By: "operator"})
			}, func(w io.Writer, c starter.Cancelled) error {
				if c.Status != nil && c.Status.Cancelled != nil {
					fmt.Fprintf(w, "Cancelled %s\n", id)
					printCancelled(w, c.Status.Cancelled)
					return nil
				}
				_, err := fmt.Fprintf(w, "Cancelled %s: its deliveries to %s\n", id, strings.Join(c.Endpoints, ", "))
				return err
			})
		},
	}
	tenantFlag(cmd, &tenant)
	cmd.Flags().StringVar(&only, "only", "", "for an event sent to a tenant: cancel this endpoint's delivery only")
	cmd.Flags().StringVar(&reason, "reason", "", "why, kept in the delivery's history and status (at most 500 bytes)")
	return cmd
}

// printCancelled prints when, by whom and why a delivery was cancelled.
func printCancelled(w io.Writer, c *herald.Cancellation) {
	fmt.Fprintf(w, "Cancelled  %s while %s", fmtTime(c.At), c.Phase)
	if c.By != "" {
		fmt.Fprintf(w, " by %s", c.By)
	}
	if c.Reason != "" {
		fmt.Fprintf(w, ": %s", c.Reason)
	}
	fmt.Fprintln(w)
}

// cancelArgs are the arguments of herald cancel for an event of tenant.
func cancelArgs(eventID, tenant string) []string {
	return append([]string{"cancel"}, statusArgs(eventID, tenant)[1:]...)
}

// parseSchedule reads herald send's --deliver-at (RFC 3339, with a zone: 2026-12-24T09:00:00Z
// or 2026-12-24T10:00:00+01:00) and --delay (a positive Go duration, given when delaySet)
// at now: the zero time when neither is given. Whether the time is within bounds is the
// starter's to say (policy.CheckDeliverAt).
func parseSchedule(deliverAt string, delay time.Duration, delaySet bool, now time.Time) (time.Time, error) {
	switch {
	case deliverAt != "" && delaySet:
		return time.Time{}, fmt.Errorf("%w: give --deliver-at or --delay, not both", errUsage)
	case delaySet && delay <= 0:
		return time.Time{}, fmt.Errorf("%w: --delay %s: give a positive duration, e.g. 10m or 72h", errUsage, delay)
	case delaySet:
		return now.Add(delay), nil
	case deliverAt == "":
		return time.Time{}, nil
	}
	at, err := time.Parse(time.RFC3339, deliverAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: --deliver-at %q is not an RFC 3339 time with a zone, e.g. 2026-12-24T09:00:00Z", errUsage, deliverAt)
	}
	return at, nil
}

// recoveryText says how the probing of an endpoint disabled for failing stands: "probe 3
// at 2026-12-02 22:00:00 (2 made; last: probe 2: 503 Service Unavailable)".
func recoveryText(r *policy.Recovery) string {
	var s string
	switch {
	case r.Ended:
		s = "ended: no probe succeeded; enable the endpoint by hand"
	case r.InFlight:
		s = fmt.Sprintf("probe %d in flight", r.Probes)
	default:
		s = fmt.Sprintf("probe %d at %s", r.Probes+1, fmtTime(r.NextAt))
	}
	if r.Last != "" {
		s += fmt.Sprintf(" (%d made; last: %s)", r.Probes, r.Last)
	}
	return s
}
