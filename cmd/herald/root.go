package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/tracing"
	"github.com/heraldhq/herald/worker"
)

// errUsage marks errors in how a command was called.
var errUsage = errors.New("usage")

// annotationNoKeys marks commands that must not load the payload keys.
const annotationNoKeys = "herald/no-keys"

// globals are the flags every command shares.
type globals struct {
	address   string
	namespace string
	taskQueue string
	output    string
	verbose   bool
	keyFile   string
	keys      *codec.Keyring // loaded by PersistentPreRunE; nil: payloads in plain text
	// tracing and interceptors are set by startTracing when the environment turns
	// tracing on; nil otherwise.
	tracing      *tracing.Tracing
	interceptors []interceptor.ClientInterceptor
	// tls holds the flags for a Temporal frontend behind TLS or an API key; connTLS and
	// creds are what PersistentPreRunE built from them (nil: plain gRPC, no credentials).
	tls     temporalTLS
	connTLS *tls.Config
	creds   client.Credentials
	// compression is --grpc-compression: none or gzip; compress is what PersistentPreRunE
	// parsed from it (nil: none).
	compression string
	compress    client.GrpcCompression
}

// grpcCompression is the client's gRPC compression for --grpc-compression's value (none or
// gzip), or an error that says what to give.
func grpcCompression(name string) (client.GrpcCompression, error) {
	switch name {
	case "none":
		return &client.GrpcCompressionNone{}, nil
	case "gzip":
		return &client.GrpcCompressionGzip{}, nil
	}
	return nil, fmt.Errorf("%w: --grpc-compression %q: use none or gzip", errUsage, name)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "herald",
		Short: "Herald delivers webhooks durably, on Temporal",
		Long: `Herald delivers webhooks. Each event is a durable Temporal workflow that retries on a
jittered, exponential, capped ladder, honours the receiver's Retry-After within caps, and
parks as a dead letter when the ladder is exhausted, until someone replays it.

Start here:
  herald dev                                   # Temporal server + Web UI + worker, one process
  herald endpoint put acme --url https://example.com/hooks
  herald send --endpoint acme --type order.paid --data '{"order":42}'
  herald status EVENT_ID`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.address, "address", envOr("TEMPORAL_ADDRESS", defaultAddress), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
	pf.StringVar(&g.namespace, "namespace", envOr("TEMPORAL_NAMESPACE", defaultNamespace), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	pf.StringVar(&g.taskQueue, "task-queue", envOr("HERALD_TASK_QUEUE", herald.DefaultTaskQueue), "task queue Herald's workers poll (env HERALD_TASK_QUEUE)")
	g.tls.flags(pf)
	pf.StringVar(&g.compression, "grpc-compression", envOr("HERALD_GRPC_COMPRESSION", "none"),
		"compress calls to Temporal: none, or gzip for a link where bytes cost more than CPU (payloads are encrypted, so they hardly compress; env HERALD_GRPC_COMPRESSION)")
	pf.StringVarP(&g.output, "output", "o", "text", "output format: text or json")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log more (Temporal client and worker details)")
	pf.StringVar(&g.keyFile, "codec-key-file", envOr("HERALD_CODEC_KEY_FILE", defaultKeyFile), "payload encryption keys (env HERALD_CODEC_KEY_FILE; HERALD_CODEC_KEYS holds keys inline and wins)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if g.output != "text" && g.output != "json" {
			return fmt.Errorf("%w: --output %q: use text or json", errUsage, g.output)
		}
		var err error
		if g.compress, err = grpcCompression(g.compression); err != nil {
			return err
		}
		if g.connTLS, g.creds, err = g.tls.connection(); err != nil {
			return err
		}
		if cmd.Annotations[annotationNoKeys] != "" {
			return nil // e.g. keygen, whose key file does not exist yet
		}
		return g.loadKeys(cmd.Flags().Changed("codec-key-file") || os.Getenv("HERALD_CODEC_KEY_FILE") != "")
	}
	root.AddCommand(
		newDevCmd(g), newWorkerCmd(g), newEndpointCmd(g), newSendCmd(g),
		newStatusCmd(g), newReplayCmd(g), newCancelCmd(g), newDLQCmd(g), newKeygenCmd(g), newCodecServerCmd(g), newReceiveCmd(g), newBenchCmd(g),
		newServeCmd(g), newTokenCmd(g), newPortalLinkCmd(g),
		newEventTypeCmd(g), newSettingsCmd(g), newOpsEndpointCmd(g), newNamespaceCmd(g), newMigrateCmd(g), newProbeCmd(), newVersionCmd(g),
	)
	return root
}

// logger returns the process logger: warnings only unless --verbose.
func (g *globals) logger() *slog.Logger {
	level := slog.LevelWarn
	if g.verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// clientOptions are the Temporal client options for address/namespace, with TLS and an
// API key as the flags say, and the SDK's metrics going to rec (nil: no metrics).
func (g *globals) clientOptions(address string, rec *metrics.Recorder) client.Options {
	return client.Options{
		HostPort:         address,
		MetricsHandler:   rec.SDKHandler(),
		Namespace:        g.namespace,
		Logger:           sdklog.NewStructuredLogger(g.logger()),
		DataConverter:    codec.DataConverter(g.keys),
		FailureConverter: codec.FailureConverter(g.keys),
		// Workers advertise their release and the ids of their keys, so producers can
		// check theirs.
		Identity:          worker.Identity("", g.keys),
		Interceptors:      g.interceptors,
		ConnectionOptions: client.ConnectionOptions{TLS: g.connTLS, GrpcCompression: g.grpcCompression()},
		Credentials:       g.creds,
	}
}

// grpcCompression is the compression --grpc-compression named (none if PersistentPreRunE
// did not run).
func (g *globals) grpcCompression() client.GrpcCompression {
	if g.compress == nil {
		return &client.GrpcCompressionNone{}
	}
	return g.compress
}

// dial connects to Temporal, with an error that says what to check; the SDK's metrics go
// to rec (nil: no metrics).
func (g *globals) dial(ctx context.Context, rec *metrics.Recorder) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, g.clientOptions(g.address, rec))
	if err != nil {
		hint := "Is `herald dev` running? Point elsewhere with --address or TEMPORAL_ADDRESS"
		if g.tls.on() {
			hint = "Check the address and the TLS settings: --tls-ca-path trusts the server's certificate, --tls-server-name is a name in it, --tls-cert-path/--tls-key-path are the client certificate it asks for, --api-key a key it accepts"
		}
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %s): %w\n%s", g.address, g.namespace, err, hint)
	}
	return c, nil
}

// untilInterrupt returns the command's context, cancelled on Ctrl-C (SIGINT) or SIGTERM;
// stop releases it.
func untilInterrupt(cmd *cobra.Command) (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
}

// withStarter dials Temporal and runs fn with a starter client.
func (g *globals) withStarter(cmd *cobra.Command, fn func(ctx context.Context, s *starter.Client) error) error {
	ctx := cmd.Context()
	c, err := g.dial(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	return explainCodec(fn(ctx, starter.New(c, g.starterOptions())))
}

// show dials Temporal, runs call with a starter client and prints what it returns: as
// JSON with -o json, else with text.
func show[T any](g *globals, cmd *cobra.Command, call func(ctx context.Context, s *starter.Client) (T, error), text func(w io.Writer, v T) error) error {
	return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
		v, err := call(ctx, s)
		if err != nil {
			return err
		}
		if g.output == "json" {
			return printJSON(cmd.OutOrStdout(), v)
		}
		return text(cmd.OutOrStdout(), v)
	})
}

// showList is show for a list: an empty list prints as [] in JSON, and as the line empty
// in text.
func showList[T any](g *globals, cmd *cobra.Command, call func(ctx context.Context, s *starter.Client) ([]T, error), empty string, text func(w io.Writer, list []T) error) error {
	return show(g, cmd, func(ctx context.Context, s *starter.Client) ([]T, error) {
		list, err := call(ctx, s)
		if list == nil {
			list = []T{}
		}
		return list, err
	}, func(w io.Writer, list []T) error {
		if len(list) == 0 {
			_, err := fmt.Fprintln(w, empty)
			return err
		}
		return text(w, list)
	})
}

// starterOptions are the starter options for this process's task queue and keys.
func (g *globals) starterOptions(adjust ...func(*starter.Options)) starter.Options {
	o := starter.Options{TaskQueue: g.taskQueue, DataConverter: codec.DataConverter(g.keys)}
	if g.keys != nil {
		o.PayloadKeyID = g.keys.ActiveKeyID()
	}
	for _, f := range adjust {
		f(&o)
	}
	return o
}

// Defaults of the flags every command shares, before the environment.
const (
	defaultAddress   = "127.0.0.1:7233"
	defaultNamespace = "default"
)

// herald is the command line "herald ARGS..." that reaches what this command reached:
// followed by --address, --namespace, --task-queue and --codec-key-file wherever this
// command's value (from a flag or the environment) is not the default, so a printed hint
// works when pasted into another shell. Each argument is quoted for the shell if needed.
func (g *globals) herald(args ...string) string {
	return g.heraldAt(g.address, g.namespace, args...)
}

// heraldAt is herald for a Temporal at address in namespace (herald dev's own).
func (g *globals) heraldAt(address, namespace string, args ...string) string {
	parts := []string{"herald"}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	for _, f := range [][3]string{
		{"--address", address, defaultAddress},
		{"--namespace", namespace, defaultNamespace},
		{"--task-queue", g.taskQueue, herald.DefaultTaskQueue},
		{"--codec-key-file", g.keyFile, defaultKeyFile},
	} {
		if f[1] != f[2] && f[1] != "" {
			parts = append(parts, f[0], shellQuote(f[1]))
		}
	}
	return strings.Join(parts, " ")
}

// shellQuote is s as one shell word: as it is when that is safe, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
