package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

func newEndpointListCmd(g *globals) *cobra.Command {
	var (
		f      herald.EndpointFilter
		limit  int
		cursor string
		all    bool
	)
	cmd := &cobra.Command{
		Use:   "list [--tenant T] [--state open] [--limit 50] [--cursor C | --all]",
		Short: "List registered endpoints, a page at a time, with their circuit state (or disabled)",
		Long: fmt.Sprintf(`List registered endpoints, latest registered first, a page of --limit at a time
(default %d, at most %d): the command prints the page and, when more follow, the command
that prints the next one (--cursor). --all prints every page, one after the other. Each
endpoint of a page is asked for its state; the selection (tenant, state) is made by
Temporal's visibility store, so a page costs the same in an installation of any size.`, starter.DefaultEndpointPage, starter.MaxEndpointPage),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.Validate(); err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			if limit < 1 || limit > starter.MaxEndpointPage {
				return fmt.Errorf("%w: --limit %d: give a number from 1 to %d", errUsage, limit, starter.MaxEndpointPage)
			}
			var from []byte
			if cursor != "" {
				if all {
					return fmt.Errorf("%w: give --cursor or --all, not both", errUsage)
				}
				var err error
				if from, err = base64.RawURLEncoding.DecodeString(cursor); err != nil || len(from) == 0 {
					return fmt.Errorf("%w: --cursor %q is not one herald endpoint list printed: leave it out to start from the first page", errUsage, cursor)
				}
			}
			return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
				l := &endpointLister{g: g, w: cmd.OutOrStdout(), seen: map[string]bool{}, filtered: f != (herald.EndpointFilter{}) || from != nil}
				for first := true; ; first = false {
					page, err := s.ListEndpoints(ctx, f, from, limit)
					if err != nil {
						return err
					}
					if err := l.print(page.Endpoints, first); err != nil {
						return err
					}
					if len(page.Next) == 0 {
						return l.end()
					}
					if !all {
						if err := l.end(); err != nil {
							return err
						}
						args := []string{"endpoint", "list"}
						if f.Tenant != "" {
							args = append(args, "--tenant", f.Tenant)
						}
						if f.State != "" {
							args = append(args, "--state", f.State)
						}
						if limit != starter.DefaultEndpointPage {
							args = append(args, "--limit", strconv.Itoa(limit))
						}
						args = append(args, "--cursor", base64.RawURLEncoding.EncodeToString(page.Next))
						fmt.Fprintf(cmd.ErrOrStderr(), "More endpoints follow: %s\n", g.herald(args...))
						return nil
					}
					from = page.Next
				}
			})
		},
	}
	cmd.Flags().StringVar(&f.Tenant, "tenant", "", "only the endpoints of this tenant (default: every tenant; \"default\" for those put without one)")
	cmd.Flags().StringVar(&f.State, "state", "", "only endpoints whose circuit is closed, open or half_open, or those disabled")
	cmd.Flags().IntVar(&limit, "limit", starter.DefaultEndpointPage, fmt.Sprintf("endpoints per page (1 to %d)", starter.MaxEndpointPage))
	cmd.Flags().StringVar(&cursor, "cursor", "", "start at the page this cursor names (printed after the page before)")
	cmd.Flags().BoolVar(&all, "all", false, "print every page")
	return cmd
}

// endpointLister prints the pages of an endpoint listing as one table (text) or one JSON
// array, as they come, each endpoint once (a listing may meet an endpoint twice: see
// starter.ListEndpoints).
type endpointLister struct {
	g       *globals
	w       io.Writer
	seen    map[string]bool
	tw      *table
	printed int
	// filtered is set for a listing with a filter or from a cursor: finding nothing does
	// not mean there are no endpoints.
	filtered bool
}

// print prints one page; first says it is the first.
func (l *endpointLister) print(eps []herald.EndpointState, first bool) error {
	if l.g.output == "json" {
		if first {
			fmt.Fprint(l.w, "[")
		}
		for _, e := range eps {
			if l.seen[e.ID] {
				continue
			}
			l.seen[e.ID] = true
			b, err := json.MarshalIndent(e, "  ", "  ")
			if err != nil {
				return err
			}
			sep := ",\n  "
			if l.printed == 0 {
				sep = "\n  "
			}
			l.printed++
			fmt.Fprint(l.w, sep+string(b))
		}
		return nil
	}
	for _, e := range eps {
		if l.seen[e.ID] {
			continue
		}
		l.seen[e.ID] = true
		if l.tw == nil {
			l.tw = newTable(l.w, "ID", "CIRCUIT", "IN-FLIGHT/CAP", "QUEUE", "ATTEMPTS", "FAILED", "URL")
		}
		circuit := string(e.Circuit.State)
		if e.Disabled != nil {
			circuit = "disabled (" + string(e.Disabled.Cause) + ")"
		}
		l.tw.row(e.ID, circuit, fmt.Sprintf("%d/%d", e.InFlight, e.Cap), e.Queue, e.Counters.Attempts, e.Counters.Failures, e.URL)
		l.printed++
	}
	if l.tw != nil {
		return l.tw.flush() // each page as it comes
	}
	return nil
}

// end closes the listing: the JSON array, or the line that says there is nothing.
func (l *endpointLister) end() error {
	if l.g.output == "json" {
		if l.printed > 0 {
			fmt.Fprint(l.w, "\n")
		}
		_, err := fmt.Fprintln(l.w, "]")
		return err
	}
	switch {
	case l.printed == 0 && l.filtered:
		_, err := fmt.Fprintln(l.w, "No endpoints match.")
		return err
	case l.printed == 0:
		_, err := fmt.Fprintln(l.w, "No endpoints yet. Register one: "+l.g.herald("endpoint", "put", "ID", "--url", "URL"))
		return err
	}
	return nil
}
