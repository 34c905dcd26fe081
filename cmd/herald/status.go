package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/workflows"
)

// tenantFlag adds --tenant: event ids are scoped to the tenant of their endpoint.
func tenantFlag(cmd *cobra.Command, tenant *string) {
	cmd.Flags().StringVar(tenant, "tenant", herald.DefaultTenant, "the tenant of the event's endpoint (event ids are scoped to the tenant)")
}

func newStatusCmd(g *globals) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "status EVENT_ID [--tenant T]",
		Short: "Show where a delivery stands and every attempt so far",
		Args:  exactArgs(1, "give the event id that send printed"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := herald.ValidateTenant(tenant); err != nil {
				return fmt.Errorf("%w: --tenant: %v", errUsage, err)
			}
			return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
				st, err := s.StatusOf(ctx, tenant, args[0])
				if err != nil {
					return err
				}
				if g.output == "json" {
					return printJSON(cmd.OutOrStdout(), st)
				}
				printStatus(cmd.OutOrStdout(), st)
				return nil
			})
		},
	}
	tenantFlag(cmd, &tenant)
	return cmd
}

func newReplayCmd(g *globals) *cobra.Command {
	var endpoint, since, until, at, tenant string
	cmd := &cobra.Command{
		Use:   "replay EVENT_ID... [--tenant T] | --endpoint ID [--since T] [--until T] [--at T]",
		Short: "Replay dead letters, one by one or in bulk",
		Long: `Replay dead letters: each runs its retry ladder again from attempt 1 with its original
event id, so receivers that deduplicate on webhook-id keep working. A delivered or expired
event is delivered once more with the same id. An event still being retried is left alone.

With --endpoint, every dead letter of that endpoint sent between --since and --until is
replayed, now or at --at, by a bulk-replay workflow you can watch in the Temporal UI.
Times are RFC 3339 (2026-11-30T12:00:00Z) or durations: --since 2h means two hours ago,
--at 30m means in thirty minutes.`,
		Example: `  herald replay evt_0193...
  herald replay --endpoint acme --since 2026-11-30T12:00:00Z --until 2026-11-30T13:00:00Z
  herald replay --endpoint acme --since 6h --at 30m`,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if endpoint == "" {
				if len(args) == 0 {
					return fmt.Errorf("%w: give event ids, or --endpoint ID for a bulk replay", errUsage)
				}
				if since != "" || until != "" || at != "" {
					return fmt.Errorf("%w: --since, --until and --at go with --endpoint", errUsage)
				}
				if err := herald.ValidateTenant(tenant); err != nil {
					return fmt.Errorf("%w: --tenant: %v", errUsage, err)
				}
				return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
					failed := 0
					for _, id := range args {
						if err := s.ReplayOf(ctx, tenant, id); err != nil {
							fmt.Fprintf(cmd.ErrOrStderr(), "herald: %v\n", err)
							failed++
							continue
						}
						fmt.Fprintf(w, "Replaying %s\n", id)
					}
					if failed > 0 {
						return fmt.Errorf("%d of %d replays failed", failed, len(args))
					}
					return nil
				})
			}
			if len(args) > 0 {
				return fmt.Errorf("%w: give either event ids or --endpoint, not both", errUsage)
			}
			now := time.Now()
			in := workflows.BulkReplayInput{Filter: herald.DeadLetterFilter{EndpointID: endpoint}}
			var err error
			if in.Filter.Since, err = parseWhen(since, now, -1); err != nil {
				return fmt.Errorf("%w: --since: %v", errUsage, err)
			}
			if in.Filter.Until, err = parseWhen(until, now, -1); err != nil {
				return fmt.Errorf("%w: --until: %v", errUsage, err)
			}
			if in.At, err = parseWhen(at, now, +1); err != nil {
				return fmt.Errorf("%w: --at: %v", errUsage, err)
			}
			return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
				id, err := s.BulkReplay(ctx, in)
				if err != nil {
					return err
				}
				if g.output == "json" {
					return printJSON(w, map[string]any{"workflow_id": id, "at": in.At, "filter": in.Filter})
				}
				when := "now"
				if !in.At.IsZero() {
					when = "at " + fmtTime(in.At)
				}
				fmt.Fprintf(w, "Bulk replay %s started (%s); watch it in the Temporal UI.\n", id, when)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&endpoint, "endpoint", "", "replay every dead letter of this endpoint")
	f.StringVar(&since, "since", "", "only events sent at or after this time")
	f.StringVar(&until, "until", "", "only events sent at or before this time")
	f.StringVar(&at, "at", "", "replay at this time instead of now")
	tenantFlag(cmd, &tenant)
	return cmd
}

// parseWhen reads an RFC 3339 time, a date, or a duration counted from now in direction dir.
func parseWhen(s string, now time.Time, dir int) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(time.Duration(dir) * d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: use RFC 3339 (2026-11-30T12:00:00Z), a date (2026-11-30) or a duration (2h)", s)
}

func newDLQCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "Inspect dead letters"}
	var endpoint, since, until string
	list := &cobra.Command{
		Use:   "list",
		Short: "List dead letters (deliveries whose ladder is exhausted)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			f := herald.DeadLetterFilter{EndpointID: endpoint}
			var err error
			if f.Since, err = parseWhen(since, now, -1); err != nil {
				return fmt.Errorf("%w: --since: %v", errUsage, err)
			}
			if f.Until, err = parseWhen(until, now, -1); err != nil {
				return fmt.Errorf("%w: --until: %v", errUsage, err)
			}
			return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
				dls, err := s.ListDeadLetters(ctx, f)
				if err != nil {
					return err
				}
				if g.output == "json" {
					if dls == nil {
						dls = []starter.DeadLetter{}
					}
					return printJSON(cmd.OutOrStdout(), dls)
				}
				if len(dls) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "No dead letters.")
					return nil
				}
				t := newTable(cmd.OutOrStdout(), "EVENT", "TENANT", "ENDPOINT", "TYPE", "SENT")
				for _, d := range dls {
					t.row(d.EventID, d.Tenant, d.EndpointID, d.Type, fmtTime(d.SentAt))
				}
				return t.flush()
			})
		},
	}
	list.Flags().StringVar(&endpoint, "endpoint", "", "only this endpoint's dead letters")
	list.Flags().StringVar(&since, "since", "", "only events sent at or after this time (RFC 3339, date or duration ago)")
	list.Flags().StringVar(&until, "until", "", "only events sent at or before this time")
	cmd.AddCommand(list)
	return cmd
}
