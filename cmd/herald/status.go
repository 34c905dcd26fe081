package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
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
		Long: `Show where an event's delivery stands and every attempt so far. For an event sent to a
tenant (herald send --tenant), show each endpoint's delivery of it: its state, attempts and
last result; an endpoint that subscribes to the type but has no delivery is shown missing
(send the same event again to add it). With -o json, an event sent to one endpoint prints
its delivery's status, and an event sent to a tenant its event view (with "deliveries").`,
		Args: exactArgs(1, "give the event id that send printed"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := herald.ValidateTenant(tenant); err != nil {
				return fmt.Errorf("%w: --tenant: %v", errUsage, err)
			}
			return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
				w := cmd.OutOrStdout()
				st, err := s.StatusOf(ctx, tenant, args[0])
				if err == nil {
					if g.output == "json" {
						return printJSON(w, st)
					}
					return g.printStatus(w, st, tenant)
				}
				if !errors.Is(err, starter.ErrNotFound) {
					return err
				}
				v, ferr := s.EventStatus(ctx, tenant, args[0])
				if errors.Is(ferr, starter.ErrNotFound) {
					return err // neither: say so as before
				}
				if ferr != nil {
					return ferr
				}
				if g.output == "json" {
					return printJSON(w, v)
				}
				return printEventView(w, v)
			})
		},
	}
	tenantFlag(cmd, &tenant)
	return cmd
}

func newReplayCmd(g *globals) *cobra.Command {
	var dl deadLetterFlags
	var at, tenant, only string
	cmd := &cobra.Command{
		Use:   "replay EVENT_ID... [--tenant T] [--only ENDPOINT] | --endpoint ID [--since T] [--until T] [--at T]",
		Short: "Replay dead letters, one by one or in bulk",
		Long: `Replay dead letters: each runs its retry ladder again from attempt 1 with its original
event id, so receivers that deduplicate on webhook-id keep working. A delivered or expired
event is delivered once more with the same id. An event waiting for its next retry makes
that retry now. An event whose endpoint holds it back (open circuit, concurrency cap), or
whose attempt is in flight, is left alone, with a message that says why.

For an event sent to a tenant (herald send --tenant), every dead-lettered delivery of it
is replayed, the others are left alone; --only ENDPOINT replays that endpoint's delivery
alone (delivered again if it was delivered).

With --endpoint, every dead letter of that endpoint sent between --since and --until is
replayed, now or at --at, by a bulk-replay workflow you can watch in the Temporal UI. A
bulk replay that runs now is waited for, and says how many it replayed and how many it
skipped (dead letters that ended between being listed and being replayed).
Times are RFC 3339 (2026-11-30T12:00:00Z) or durations: --since 2h means two hours ago,
--at 30m means in thirty minutes.

With -o json, event ids print a list with one object per id (event_id, replayed, and a
message or the error); --endpoint prints the bulk replay (filter, at, workflow_id) with its
result (replayed, skipped, skipped_why) once it has run.`,
		Example: `  herald replay evt_0193...
  herald replay evt_0193... --tenant acme --only acme-billing
  herald replay --endpoint acme --since 2026-11-30T12:00:00Z --until 2026-11-30T13:00:00Z
  herald replay --endpoint acme --since 6h --at 30m`,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if dl.endpoint == "" {
				if len(args) == 0 {
					return fmt.Errorf("%w: give event ids, or --endpoint ID for a bulk replay", errUsage)
				}
				if dl.since != "" || dl.until != "" || at != "" {
					return fmt.Errorf("%w: --since, --until and --at go with --endpoint", errUsage)
				}
				if err := herald.ValidateTenant(tenant); err != nil {
					return fmt.Errorf("%w: --tenant: %v", errUsage, err)
				}
				return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
					failed := 0
					outcomes := []replayOutcome{}
					for _, id := range args {
						msg, replayed, err := g.replayEvent(ctx, s, tenant, id, only)
						if err != nil {
							if g.output == "json" {
								outcomes = append(outcomes, replayOutcome{EventID: id, Error: err.Error()})
							} else {
								fmt.Fprintf(cmd.ErrOrStderr(), "herald: %v\n", err)
							}
							failed++
							continue
						}
						if g.output == "json" {
							outcomes = append(outcomes, replayOutcome{EventID: id, Replayed: replayed, Message: msg})
						} else {
							fmt.Fprintln(w, msg)
						}
					}
					if g.output == "json" {
						if err := printJSON(w, outcomes); err != nil {
							return err
						}
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
			if only != "" {
				return fmt.Errorf("%w: --only goes with event ids, not with --endpoint", errUsage)
			}
			now := time.Now()
			filter, err := dl.filter(now)
			if err != nil {
				return err
			}
			in := herald.BulkReplayInput{Filter: filter}
			if in.At, err = parseWhen(at, now, +1); err != nil {
				return fmt.Errorf("%w: --at: %v", errUsage, err)
			}
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (bulkReplayStarted, error) {
				id, err := s.BulkReplay(ctx, in)
				b := bulkReplayStarted{BulkReplayInput: in, WorkflowID: id}
				if err != nil || in.At.After(time.Now()) {
					return b, err
				}
				res, err := s.WaitBulkReplay(ctx, id)
				b.Result = &res
				return b, err
			}, func(w io.Writer, b bulkReplayStarted) error {
				if b.Result == nil {
					_, err := fmt.Fprintf(w, "Bulk replay %s will run at %s; when it has, the Temporal UI shows how many it replayed (its result).\n", b.WorkflowID, fmtTime(b.At))
					return err
				}
				r := b.Result
				fmt.Fprintf(w, "Replayed %d dead letter(s) of endpoint %s (bulk replay %s).\n", r.Replayed, b.Filter.EndpointID, b.WorkflowID)
				if r.Skipped > 0 {
					fmt.Fprintf(w, "Skipped %d: %s.\n", r.Skipped, r.SkippedWhy)
				}
				return nil
			})
		},
	}
	dl.bind(cmd.Flags(), "replay every dead letter of the endpoint with this `ID`", "only events sent at or after this `TIME`")
	cmd.Flags().StringVar(&at, "at", "", "replay at this `TIME` instead of now")
	cmd.Flags().StringVar(&only, "only", "", "for an event sent to a tenant: replay only this `ENDPOINT`'s delivery of it")
	tenantFlag(cmd, &tenant)
	return cmd
}

// replayEvent replays an event: its delivery, for an event sent to one endpoint; for an
// event sent to a tenant, its dead-lettered deliveries, or only's delivery. It returns
// the line to print, and whether anything is replayed.
func (g *globals) replayEvent(ctx context.Context, s *starter.Client, tenant, id, only string) (msg string, replayed bool, err error) {
	if only == "" {
		r, err := s.ReplayDelivery(ctx, tenant, id)
		if err == nil && r.State == herald.StateWaitingRetry {
			return fmt.Sprintf("Retrying %s now: retry %d was due at %s", id, r.Retry, r.DueAt.Format(time.RFC3339)), true, nil
		}
		if err == nil {
			return "Replaying " + id, true, nil
		}
		if !errors.Is(err, starter.ErrNotFound) {
			return "", false, err
		}
		if _, ferr := s.EventStatus(ctx, tenant, id); ferr != nil {
			return "", false, err // no such event at all: say so as before
		}
	}
	eps, err := s.ReplayEvent(ctx, tenant, id, only)
	if err != nil {
		return "", false, err
	}
	if len(eps) == 0 {
		return fmt.Sprintf("Event %s has no dead-lettered delivery: nothing to replay (%s)", id, g.herald(statusArgs(id, tenant)...)), false, nil
	}
	return fmt.Sprintf("Replaying %s to %s", id, strings.Join(eps, ", ")), true, nil
}

// replayOutcome is what replay -o json prints for each event id given.
type replayOutcome struct {
	EventID  string `json:"event_id"`
	Replayed bool   `json:"replayed"`
	Message  string `json:"message,omitempty"`
	Error    string `json:"error,omitempty"`
}

// bulkReplayStarted is what replay --endpoint prints: what the bulk replay replays and
// when, its workflow id and, once it has run (at once unless --at is later), its result.
type bulkReplayStarted struct {
	herald.BulkReplayInput
	WorkflowID string                   `json:"workflow_id"`
	Result     *herald.BulkReplayResult `json:"result,omitempty"`
}

func newDLQCmd(g *globals) *cobra.Command {
	var dl deadLetterFlags
	cmd := &cobra.Command{Use: "dlq", Short: "Inspect dead letters"}
	list := &cobra.Command{
		Use:   "list",
		Short: "List dead letters (deliveries whose ladder is exhausted)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := dl.filter(time.Now())
			if err != nil {
				return err
			}
			return showList(g, cmd, func(ctx context.Context, s *starter.Client) ([]starter.DeadLetter, error) {
				return s.ListDeadLetters(ctx, f)
			}, "No dead letters.", func(w io.Writer, dls []starter.DeadLetter) error {
				t := newTable(w, "EVENT", "TENANT", "ENDPOINT", "TYPE", "SENT")
				for _, d := range dls {
					t.row(d.EventID, d.Tenant, d.EndpointID, d.Type, fmtTime(d.SentAt))
				}
				return t.flush()
			})
		},
	}
	dl.bind(list.Flags(), "only the dead letters of the endpoint with this `ID`", "only events sent at or after this `TIME` (RFC 3339, a date, or a duration ago such as 2h)")
	cmd.AddCommand(list)
	return cmd
}
