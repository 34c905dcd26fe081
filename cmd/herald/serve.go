package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/tracing"
)

func newServeCmd(g *globals) *cobra.Command {
	var (
		listen, tokensFile, temporalUI, cookieSecure string
		tlsCert, tlsKey                              string
		publicURL                                    string
		frameAncestors                               []string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the JSON API (/v1) and the dashboard over HTTP",
		Long: `Serve Herald's HTTP API and dashboard against any Temporal (--address, --namespace).

The JSON API under /v1 lets producers in any language send events, follow deliveries,
manage endpoints and replay dead letters; its OpenAPI document is at /v1/openapi.json.
The dashboard at / shows endpoints, their circuits, recent deliveries and dead letters.

Both take tokens from the tokens file (herald token create). Several serve instances must
share one tokens file: it also holds the key that signs dashboard sessions, and each
instance rereads it when it changes, so created and revoked tokens apply at once.

The session cookie is marked Secure when the request came over https (--tls-cert, or a
proxy setting X-Forwarded-Proto: https); on plain http (e.g. 127.0.0.1) it is not, or a
browser would never send it back. Force it with --cookie-secure always|never.

Portal links (herald portal-link, POST /v1/portal-links) sign a customer in to one tenant's
dashboard; --public-url is the address they open it at. To show the dashboard inside your
product's pages (an iframe), list your product's origins with --frame-ancestors: other
sites may not frame it.

` + tracing.EnvHelp,
		Example: `  herald token create --operator
  herald serve --listen 127.0.0.1:8080 --temporal-ui http://127.0.0.1:8233`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (tlsCert == "") != (tlsKey == "") {
				return fmt.Errorf("%w: give both --tls-cert and --tls-key, or neither", errUsage)
			}
			tokens, err := server.OpenTokenStore(tokensFile)
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			stopTracing, err := g.startTracing(cmd.Context())
			if err != nil {
				return err
			}
			defer stopTracing()
			c, err := client.NewLazyClient(g.clientOptions(g.address, nil))
			if err != nil {
				//lint:ignore ST1005 "Temporal" is a name, capitalised wherever it stands
				return fmt.Errorf("Temporal client for %s: %w", g.address, err)
			}
			defer c.Close()
			h, err := server.New(server.Options{
				Starter: starter.New(c, g.starterOptions()), Client: c, Tokens: tokens,
				Namespace: g.namespace, TemporalUI: temporalUI, CookieSecure: cookieSecure, Logger: g.logger(),
				PublicURL: publicURL, FrameAncestors: frameAncestors, Tracing: g.tracing,
			})
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (choose another address with --listen)", listen, err)
			}
			srv := apiServer(h)
			scheme := "http"
			if tlsCert != "" {
				scheme = "https"
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Herald API and dashboard on %s://%s/ (Temporal %s, namespace %s)\n", scheme, ln.Addr(), g.address, g.namespace)
			fmt.Fprintf(out, "  API        %s://%s/v1 (OpenAPI at /v1/openapi.json)\n", scheme, ln.Addr())
			fmt.Fprintf(out, "  Tokens     %s", tokens.Path())
			if list, _ := tokens.List(); len(list) == 0 {
				fmt.Fprintf(out, " (none yet: %s)", tokenCreate(tokens.Path()))
			}
			fmt.Fprintln(out)
			ctx, stop := untilInterrupt(cmd)
			defer stop()
			errc := make(chan error, 1)
			go func() {
				if tlsCert != "" {
					errc <- srv.ServeTLS(ln, tlsCert, tlsKey)
				} else {
					errc <- srv.Serve(ln)
				}
			}()
			select {
			case err := <-errc:
				if !errors.Is(err, http.ErrServerClosed) {
					return err
				}
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve on")
	f.StringVar(&tokensFile, "tokens-file", envOr("HERALD_TOKENS_FILE", server.DefaultTokensFile), "tokens file; share it between instances (env HERALD_TOKENS_FILE)")
	f.StringVar(&temporalUI, "temporal-ui", envOr("HERALD_TEMPORAL_UI", ""), "Temporal Web UI base URL, for operators' links to workflows (env HERALD_TEMPORAL_UI)")
	f.StringVar(&cookieSecure, "cookie-secure", server.CookieSecureAuto, "mark the session cookie Secure: auto (when over https), always or never")
	f.StringVar(&tlsCert, "tls-cert", "", "serve https with this certificate file (PEM)")
	f.StringVar(&tlsKey, "tls-key", "", "the certificate's private key file (PEM)")
	f.StringVar(&publicURL, "public-url", envOr("HERALD_PUBLIC_URL", ""), "the dashboard's address as people open it, for portal links minted by the API; default: the request's (env HERALD_PUBLIC_URL)")
	f.StringSliceVar(&frameAncestors, "frame-ancestors", nil, "origins whose pages may embed the dashboard in a frame, e.g. https://app.example.com (repeat or comma-separate)")
	return cmd
}

// apiServer is the HTTP server of Herald's API and dashboard (herald serve, herald worker
// --api-listen), with its timeouts.
func apiServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
}
