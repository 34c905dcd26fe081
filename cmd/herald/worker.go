package main

import (
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/worker"
)

func newWorkerCmd(g *globals) *cobra.Command {
	wf := &workerFlags{}
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a Herald worker against any Temporal server",
		Long: `Run a Herald worker: it polls the task queue, runs the delivery and endpoint
workflows and makes the HTTP attempts. Point it at a Temporal cluster with --address and
--namespace (or TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE). The namespace needs Herald's search
attributes (HeraldStatus, HeraldEndpoint, HeraldEventType, all Keyword); see the README.
Run as many workers as you like on the same task queue.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := wf.options(g.taskQueue)
			if err != nil {
				return err
			}
			if g.keys == nil && !wf.plaintext {
				return fmt.Errorf("%w: no payload encryption keys: give --codec-key-file FILE or HERALD_CODEC_KEYS (create a file with `herald keygen FILE`), or pass --plaintext to store payloads readable", errUsage)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			c, err := g.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			opts.Logger = g.logger()
			w, err := worker.New(c, opts)
			if err != nil {
				return err
			}
			if err := w.Start(); err != nil {
				return fmt.Errorf("start worker: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Herald worker polling task queue %q on %s (namespace %s). Ctrl-C stops it.\n", g.taskQueue, g.address, g.namespace)
			<-ctx.Done()
			fmt.Fprintln(cmd.OutOrStdout(), "Stopping: finishing running attempts...")
			w.Stop()
			return nil
		},
	}
	wf.bind(cmd.Flags(), nil)
	return cmd
}
