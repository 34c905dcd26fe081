package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/worker"
)

func newWorkerCmd(g *globals) *cobra.Command {
	wf := &workerFlags{}
	var metricsListen string
	cmd := wf.command(g, &cobra.Command{
		Use:   "worker",
		Short: "Run a Herald worker against any Temporal server",
		Long: `Run a Herald worker: it polls the task queue, runs the delivery and endpoint
workflows and makes the HTTP attempts. Point it at a Temporal cluster with --address and
--namespace (or TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE). The namespace needs Herald's search
attributes (HeraldStatus, HeraldEndpoint, HeraldEventType, HeraldCircuit, HeraldDisabled, HeraldEventId, HeraldTenant, all Keyword); see the README.
Run as many workers as you like on the same task queue.

With --metrics-listen HOST:PORT the worker serves Prometheus metrics on /metrics there: the
Temporal SDK's (task latencies, pollers, slots) and Herald's own (herald_*).`,
	}, nil, func(cmd *cobra.Command, opts worker.Options) error {
		var err error
		if g.keys == nil && !wf.plaintext {
			return fmt.Errorf("%w: no payload encryption keys: give --codec-key-file FILE or HERALD_CODEC_KEYS (create a file with `herald keygen FILE`), or pass --plaintext to store payloads readable", errUsage)
		}
		ctx, stop := untilInterrupt(cmd)
		defer stop()
		var rec *metrics.Recorder
		if metricsListen != "" {
			if rec, err = metrics.New(); err != nil {
				return err
			}
			defer rec.Close()
			stopMetrics, err := serveMetrics(metricsListen, rec, g.logger())
			if err != nil {
				return err
			}
			defer stopMetrics()
		}
		c, err := g.dial(ctx, rec)
		if err != nil {
			return err
		}
		defer c.Close()
		w, err := startWorker(c, opts, g, rec)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Herald worker polling task queue %q on %s (namespace %s). Ctrl-C stops it.\n", g.taskQueue, g.address, g.namespace)
		if metricsListen != "" {
			fmt.Fprintf(cmd.OutOrStdout(), "Metrics on http://%s/metrics\n", metricsListen)
		}
		<-ctx.Done()
		fmt.Fprintln(cmd.OutOrStdout(), "Stopping: finishing running attempts...")
		w.Stop()
		return nil
	})
	cmd.Flags().StringVar(&metricsListen, "metrics-listen", "", "serve Prometheus metrics on http://HOST:PORT/metrics, e.g. 127.0.0.1:9090 (default: no metrics)")
	return cmd
}

// serveMetrics serves rec on addr's /metrics until the returned function is called.
func serveMetrics(addr string, rec *metrics.Recorder, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", rec.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "listen", addr, "error", err)
		}
	}()
	return func() { _ = srv.Close() }, nil
}
