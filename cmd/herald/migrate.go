package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/starter"
)

func newMigrateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Bring endpoints registered with an older Herald up to this release",
		Long: `Run once after upgrading every worker from Herald 0.1.0 to this release (and after
herald namespace setup, which adds the HeraldSubscriptions search attribute).

Herald 0.2.0 finds a tenant's endpoints by their search attributes (HeraldTenant and
HeraldSubscriptions) instead of a per-tenant directory workflow. Endpoints registered before
do not carry them until they are put again: migrate asks each such endpoint to publish its
tenant and subscription, then ends the old directory workflows. Until it has run, a send to a
tenant does not reach its endpoints registered with 0.1.0 (sends to one endpoint by id are
not affected).

It is safe to run again: endpoints that carry the attributes already are left alone.`,
		Example: `  herald namespace setup && herald migrate`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
				res, err := s.Migrate(ctx)
				if err != nil {
					return err
				}
				if g.output == "json" {
					return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%d endpoints looked at: %d now publish their subscription, %d hold no endpoint (skipped); %d old subscription directories ended\n",
					res.Endpoints, res.Published, res.Unregistered, res.Directories)
				return err
			})
		},
	}
}
