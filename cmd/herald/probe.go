package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// maxProbeWait is the longest herald probe waits for an answer.
const maxProbeWait = 2 * time.Minute

func newProbeCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe URL",
		Short: "Exit 0 when URL answers over HTTP: a healthcheck for images without a shell",
		Long: `Send GET URL and exit 0 when the server answers with a status below 500, 1 when it does
not answer within --timeout or answers 5xx. Herald's image has no shell, curl or wget:
docker-compose.yml's healthchecks use this against herald serve, the codec server and a
worker's metrics endpoint.`,
		Example:     `  herald probe http://127.0.0.1:9090/metrics`,
		Args:        exactArgs(1, "give the URL to probe, e.g. herald probe http://127.0.0.1:8080/v1/openapi.json"),
		Annotations: map[string]string{annotationNoKeys: "yes"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 || timeout > maxProbeWait {
				return fmt.Errorf("%w: --timeout %s: give a duration from 1ms to %s, e.g. 5s", errUsage, timeout, maxProbeWait)
			}
			c := &http.Client{Timeout: timeout}
			resp, err := c.Get(args[0])
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				return fmt.Errorf("%s answered %s", args[0], resp.Status)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer (at most 2m)")
	return cmd
}
