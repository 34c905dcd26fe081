package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

func newWorkerCmd(g *globals) *cobra.Command {
	wf := &workerFlags{}
	var metricsListen, apiListen, tokensFile, pprofListen string
	cmd := wf.command(g, &cobra.Command{
		Use:   "worker",
		Short: "Run a Herald worker against any Temporal server",
		Long: `Run a Herald worker: it polls the task queue, runs the delivery and endpoint
workflows and makes the HTTP attempts. Point it at a Temporal cluster with --address and
--namespace (or TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE). The namespace needs Herald's search
attributes (HeraldStatus, HeraldEndpoint, HeraldEventType, HeraldCircuit, HeraldDisabled, HeraldEventId, HeraldTenant, all Keyword); see the README.
Run as many workers as you like on the same task queue.

With --metrics-listen HOST:PORT the worker serves Prometheus metrics on /metrics there: the
Temporal SDK's (task latencies, pollers, slots) and Herald's own (herald_*).

With --pprof-listen HOST:PORT the worker serves Go's profiles (net/http/pprof) on
/debug/pprof/ there, for measuring where its CPU and memory go. They show the process's
internals: listen on loopback, or a port no one else reaches.

With --api-listen HOST:PORT the worker also serves Herald's HTTP API and dashboard there, as
` + "`herald serve`" + ` does (tokens from --tokens-file), and starts the deliveries of the events it
accepts eagerly: the Temporal server hands each new delivery's first workflow task to this
worker in its answer to the start, with no trip through matching. On PostgreSQL that is
about 5 transactions fewer per delivery (docs/sizing.md, "The production path's cost"). For TLS,
portal links and the Temporal UI links, run ` + "`herald serve`" + ` in front.`,
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
		if pprofListen != "" {
			stopProfiles, err := serveProfiles(pprofListen, g.logger())
			if err != nil {
				return err
			}
			defer stopProfiles()
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
		stopAPI := func() {}
		if apiListen != "" {
			if stopAPI, err = serveWorkerAPI(g, c, w, apiListen, tokensFile); err != nil {
				w.Stop()
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Herald API and dashboard on http://%s/ (deliveries started eagerly on this worker)\n", apiListen)
		}
		<-ctx.Done()
		fmt.Fprintln(cmd.OutOrStdout(), "Stopping: finishing running attempts...")
		stopAPI()
		w.Stop()
		return nil
	})
	cmd.Flags().StringVar(&metricsListen, "metrics-listen", "", "serve Prometheus metrics on http://HOST:PORT/metrics, e.g. 127.0.0.1:9090 (default: no metrics)")
	cmd.Flags().StringVar(&apiListen, "api-listen", "", "also serve the HTTP API and dashboard on HOST:PORT, starting deliveries eagerly on this worker (default: no API)")
	cmd.Flags().StringVar(&pprofListen, "pprof-listen", "", "serve Go's CPU and memory profiles on http://HOST:PORT/debug/pprof/, e.g. 127.0.0.1:6060 (default: none; keep it private)")
	cmd.Flags().StringVar(&tokensFile, "tokens-file", envOr("HERALD_TOKENS_FILE", server.DefaultTokensFile), "tokens file of the API (--api-listen); share it with herald serve (env HERALD_TOKENS_FILE)")
	return cmd
}

// serveWorkerAPI serves Herald's API and dashboard on addr from the worker's process: its
// starter shares the worker's client c and starts deliveries eagerly, so that the server
// hands each one's first workflow task straight to this worker, and offers w's gate its reads
// of the endpoints it sends to. stop shuts it down.
func serveWorkerAPI(g *globals, c client.Client, w *worker.Worker, addr, tokensFile string) (stop func(), err error) {
	tokens, err := server.OpenTokenStore(tokensFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	h, err := server.New(server.Options{
		Starter: starter.New(c, g.starterOptions(func(o *starter.Options) { o.EagerStart, o.OnEndpointRead = true, w.OfferAdmission })),
		Client:  c, Tokens: tokens, Namespace: g.namespace, Logger: g.logger(), Tracing: g.tracing,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--api-listen %s: %w", addr, err)
	}
	srv := apiServer(h)
	log := g.logger()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("API server stopped", "listen", addr, "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// serveProfiles serves net/http/pprof's handlers on addr's /debug/pprof/ until the returned
// function is called.
func serveProfiles(addr string, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("profile server stopped", "listen", addr, "error", err)
		}
	}()
	return func() { _ = srv.Close() }, nil
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
