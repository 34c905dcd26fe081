package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

// devBeforeReady, when set (by tests), is called with the HTTP address once everything
// but the dashboard and API is up, before they answer.
var devBeforeReady func(httpURL string)

func newDevCmd(g *globals) *cobra.Command {
	var (
		dbFile   string
		inMemory bool
		ip       string
		port     int
		uiPort   int
		httpPort int
	)
	wf := &workerFlags{}
	cmd := wf.command(g, &cobra.Command{
		Use:   "dev",
		Short: "Run the whole stack in one process: Temporal server, Web UI and a worker",
		Long: `Run Herald for development: an embedded Temporal server that keeps its state in a
SQLite file, the Temporal Web UI, and a Herald worker, all in this one process. Nothing is
downloaded and no Docker is needed. Stop it with Ctrl-C; start it again on the same file and
every waiting delivery and parked dead letter carries on.

The dev worker may dial loopback addresses (127.0.0.0/8, ::1), so receivers on this
machine work; production workers refuse them unless allowed with --allow-cidr.

The HTTP port (--http-port) opens first: until the dashboard and API are ready, every
request there answers 503 with a JSON error and Retry-After, so clients retry.`,
	}, []string{"127.0.0.0/8", "::1/128"}, func(cmd *cobra.Command, opts worker.Options) error {
		var err error
		ctx, stop := untilInterrupt(cmd)
		defer stop()
		out := cmd.OutOrStdout()
		var db string // in memory: none
		if !inMemory {
			if db, err = filepath.Abs(dbFile); err != nil {
				return fmt.Errorf("--db-file %q: %w", dbFile, err)
			}
		}
		if g.keys == nil && !wf.plaintext {
			k, err := codec.GenerateKeyFile(g.keyFile)
			if err != nil {
				return fmt.Errorf("create a development payload key: %w", err)
			}
			g.keys = k
			fmt.Fprintf(out, "Generated a development payload key in %s.\n", g.keyFile)
		}
		httpLn, err := net.Listen("tcp", hostPort(ip, httpPort))
		if err != nil {
			return fmt.Errorf("listen on %s: %w (choose another port with --http-port)", hostPort(ip, httpPort), err)
		}
		httpURL := "http://" + httpLn.Addr().String()
		// Serve at once: until the dashboard and API are mounted, every request answers 503
		// with Retry-After (clients retry), never a 404 (clients give up).
		starting := &server.Starting{}
		httpSrv := &http.Server{Handler: starting, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = httpSrv.Serve(httpLn) }()
		defer httpSrv.Close()
		codecEndpoint := ""
		if g.keys != nil {
			codecEndpoint = httpURL + "/codec"
		}
		startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		srv, err := devserver.Start(startCtx, devserver.Options{
			IP: ip, FrontendPort: port, UIPort: uiPort, DBFile: db,
			Namespace: g.namespace, SearchAttributes: herald.SearchAttributeTypes(), Logger: g.logger(), CodecEndpoint: codecEndpoint,
		})
		cancel()
		if err != nil {
			return fmt.Errorf("start Temporal: %w", err)
		}
		defer srv.Stop()

		rec, err := metrics.New()
		if err != nil {
			return err
		}
		defer rec.Close()
		mux := http.NewServeMux()
		mux.Handle("/metrics", rec.Handler())
		if g.keys != nil {
			mux.Handle("/codec/", codec.Handler(g.keys, []string{srv.UIAddress()}))
		}
		copts := g.clientOptions(srv.FrontendAddress(), rec)
		// The embedded server is plain gRPC on loopback: the --tls flags are for a remote one.
		copts.ConnectionOptions, copts.Credentials = srv.Connection(), nil
		c, err := client.DialContext(ctx, copts)
		if err != nil {
			return fmt.Errorf("connect to the embedded Temporal: %w", err)
		}
		defer c.Close()
		w, err := startWorker(c, opts, g, rec)
		if err != nil {
			return err
		}
		defer w.Stop()

		tokens, err := server.OpenTokenStore(envOr("HERALD_TOKENS_FILE", server.DefaultTokensFile))
		if err != nil {
			return err
		}
		dashboard, err := server.New(server.Options{
			Starter: starter.New(c, g.starterOptions(func(o *starter.Options) { o.EagerStart, o.OnEndpointRead = true, w.OfferAdmission })),
			Client:  c, Tokens: tokens,
			Namespace: srv.Namespace(), TemporalUI: srv.UIAddress(), Logger: g.logger(), Tracing: g.tracing,
		})
		if err != nil {
			return err
		}
		if devBeforeReady != nil {
			devBeforeReady(httpURL)
		}
		mux.Handle("/", dashboard)
		starting.Ready(mux)

		storage := db
		if storage == "" {
			storage = "in memory (lost on exit)"
		}
		fmt.Fprintf(out, "Herald dev stack is running.\n")
		fmt.Fprintf(out, "  Temporal frontend  %s (namespace %s)\n", srv.FrontendAddress(), srv.Namespace())
		if srv.UIAddress() != "" {
			fmt.Fprintf(out, "  Temporal Web UI    %s/namespaces/%s/workflows\n", srv.UIAddress(), srv.Namespace())
		}
		fmt.Fprintf(out, "  Storage            %s\n", storage)
		fmt.Fprintf(out, "  Metrics            %s/metrics (Prometheus)\n", httpURL)
		fmt.Fprintf(out, "  Dashboard and API  %s/ (API under /v1; sign in with a token from %s, kept in %s)\n", httpURL, tokenCreate(tokens.Path()), tokens.Path())
		if g.keys != nil {
			fmt.Fprintf(out, "  Payloads           encrypted with key %s (%s); UI decodes through %s\n", g.keys.ActiveKeyID(), g.keyFile, codecEndpoint)
		} else {
			fmt.Fprintf(out, "  Payloads           NOT encrypted (--plaintext)\n")
		}
		fmt.Fprintf(out, "  Worker             task queue %q; may dial %v\n", g.taskQueue, opts.Net.Allow)
		fmt.Fprintf(out, "Try:  %s\n", g.heraldAt(srv.FrontendAddress(), srv.Namespace(), "endpoint", "put", "demo", "--url", "http://127.0.0.1:9000/hook"))
		fmt.Fprintf(out, "      %s\n", g.heraldAt(srv.FrontendAddress(), srv.Namespace(), "send", "--endpoint", "demo", "--type", "demo.hello", "--data", `{"hello":"world"}`))
		fmt.Fprintf(out, "Ctrl-C stops everything.\n")
		<-ctx.Done()
		fmt.Fprintln(out, "\nStopping Herald dev stack...")
		httpSrv.Close() // first: no request reaches a stopping worker or Temporal
		return nil
	})
	f := cmd.Flags()
	f.StringVar(&dbFile, "db-file", ".herald/temporal.db", "SQLite file that keeps Temporal's state across restarts (a new file gets its workflow lists in FILE-visibility beside it)")
	f.BoolVar(&inMemory, "in-memory", false, "keep Temporal's state in memory only (ignores --db-file)")
	f.StringVar(&ip, "ip", "127.0.0.1", "address the Temporal frontend and Web UI listen on")
	f.IntVar(&port, "port", 7233, "Temporal frontend (gRPC) port")
	f.IntVar(&uiPort, "ui-port", 8233, "Temporal Web UI port (-1: no UI)")
	f.IntVar(&httpPort, "http-port", 8080, "Herald's HTTP port (codec endpoint for the UI)")
	return cmd
}
