package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

func newOpsEndpointCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ops-endpoint",
		Short: "Register the endpoint that receives Herald's operational events",
		Long: `Herald tells you what happens to your customers' endpoints by sending signed events to
an operational endpoint of your own, with the same retries and dead letters as any delivery:

  endpoint.disabled         an endpoint was disabled (by hand, by a 410, or after failing)
  endpoint.circuit_opened   an endpoint's circuit opened
  endpoint.circuit_closed   it closed again
  delivery.dead_lettered    a delivery parked as a dead letter
  delivery.recovered        a replayed delivery was delivered
  ordering.blocked          a dead letter holds its ordering key (ordering on dead letter: block)

The data names the endpoint and its tenant, when, why, and for a delivery the event.
An operational delivery never produces another operational event. Nothing is sent while no
operational endpoint is registered. The operational endpoint is endpoint ` + herald.OpsEndpointID + `
of tenant ` + herald.OpsTenant + `: herald endpoint get, disable, enable and replay work on it.`,
	}
	cmd.AddCommand(newOpsEndpointPutCmd(g))
	return cmd
}

func newOpsEndpointPutCmd(g *globals) *cobra.Command {
	var (
		url, secret  string
		headers      []string
		clearHeaders bool
		auth         authFlags
	)
	cmd := &cobra.Command{
		Use:   "put --url URL",
		Short: "Register the operational endpoint, or change it",
		Example: `  herald ops-endpoint put --url https://ops.example.com/herald-events
  herald ops-endpoint put --header 'Authorization: Bearer ...'
  herald ops-endpoint put --auth-basic herald:s3cret`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := herald.PutEndpointRequest{URL: url}
			if secret != "" {
				s, err := signature.ParseSecret(secret)
				if err != nil {
					return fmt.Errorf("%w: --secret: %v", starter.ErrInvalid, err)
				}
				req.Secret = s
			}
			var err error
			if req.Headers, err = headerFlags(headers, clearHeaders); err != nil {
				return err
			}
			if req.Auth, err = auth.change(cmd.Flags()); err != nil {
				return err
			}
			req.ClearAuth = auth.clear
			return runPut(g, cmd, req, (*starter.Client).PutOpsEndpoint, func(res herald.PutEndpointResult) string {
				return fmt.Sprintf("Operational events go to %s (endpoint %s, version %d)", res.Endpoint.URL, res.Endpoint.ID, res.Endpoint.Version)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "where to POST operational events; required when registering")
	f.StringVar(&secret, "secret", "", "signing secret (whsec_...); generated when omitted")
	f.StringArrayVar(&headers, "header", nil, "a custom header sent with every event, as 'Name: value' (repeatable)")
	f.BoolVar(&clearHeaders, "clear-headers", false, "remove the custom headers")
	auth.bind(f) // as herald endpoint put's (see its --help)
	return cmd
}
