package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/starter"
)

func newPortalLinkCmd(g *globals) *cobra.Command {
	var (
		tokensFile, publicURL, tenant, endpoint string
		ttl                                     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "portal-link --tenant NAME [--endpoint ID] [--ttl 1h]",
		Short: "Mint a single-use sign-in link to one tenant's dashboard (to embed the portal)",
		Long: `Print a URL that signs whoever opens it into the dashboard of herald serve as the tenant
--tenant: they see and manage that tenant's endpoints, events and dead letters, and nothing
else; with --endpoint, only that endpoint of the tenant. Give it to your customer, or put it
behind an "Open webhooks portal" button of your product (mint it when they click), so they
get Herald's portal without a long-lived token.

The link opens once: a second open, even on another herald serve sharing the tokens file,
is refused, and so is an open after --ttl (at most 24h). Opening it starts a dashboard
session that lasts as long as any dashboard session (12h by default). Link previews in chat
or mail apps may open links, so hand it over at the moment it is needed.

The link is signed with the key in the tokens file, so this command must read the same
tokens file as herald serve (--tokens-file). --url is the address your customers open the
dashboard at. Producers without access to that file mint links with the API instead:
POST /v1/portal-links with an operator token.`,
		Example: `  herald portal-link --tenant acme
  herald portal-link --tenant acme --endpoint acme-orders --ttl 15m --url https://herald.example.com
  herald portal-link --tenant acme -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tenant == "" {
				return fmt.Errorf("%w: --tenant is missing: name the tenant whose portal the link opens, e.g. --tenant acme", errUsage)
			}
			if err := server.ValidatePortalLinkTTL(ttl); err != nil {
				return fmt.Errorf("%w: --%v", errUsage, err)
			}
			tokens, err := server.OpenTokenStore(tokensFile)
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			if endpoint != "" {
				// A link to an endpoint that is not the tenant's would open an empty portal.
				err := g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
					return server.CheckPortalScope(ctx, s, tenant, endpoint)
				})
				if err != nil {
					return err
				}
			}
			link, err := tokens.MintPortalLink(publicURL, tenant, endpoint, ttl, time.Now(), "")
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			if g.output == "json" {
				return printJSON(cmd.OutOrStdout(), link)
			}
			w := cmd.OutOrStdout()
			scope := "tenant " + tenant
			if endpoint != "" {
				scope += ", endpoint " + endpoint
			}
			fmt.Fprintf(w, "Portal link for %s (opens once, until %s):\n  %s\n", scope, fmtTime(link.ExpiresAt), link.URL)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&tenant, "tenant", "", "the tenant whose portal the link opens (required; herald-ops is reserved)")
	f.StringVar(&endpoint, "endpoint", "", "limit the portal to this endpoint of the tenant")
	f.DurationVar(&ttl, "ttl", server.DefaultPortalLinkTTL, "how long the link can be opened, at most 24h")
	f.StringVar(&publicURL, "url", envOr("HERALD_PUBLIC_URL", "http://127.0.0.1:8080"), "the dashboard's address as your customers open it (env HERALD_PUBLIC_URL)")
	f.StringVar(&tokensFile, "tokens-file", envOr("HERALD_TOKENS_FILE", server.DefaultTokensFile), "tokens file shared with herald serve (env HERALD_TOKENS_FILE)")
	return cmd
}
