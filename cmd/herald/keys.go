package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/codec"
)

// defaultKeyFile is where `herald dev` keeps its development key, and where every command
// looks for keys when none are configured.
const defaultKeyFile = ".herald/codec.key"

// loadKeys loads the payload keys: HERALD_CODEC_KEYS, else the key file. A missing default
// key file means plain text; a missing file that was asked for is an error.
func (g *globals) loadKeys(explicit bool) error {
	path := g.keyFile
	if os.Getenv("HERALD_CODEC_KEYS") == "" && !explicit {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			path = ""
		}
	}
	k, err := codec.KeyringFromEnvOrFile(os.Getenv("HERALD_CODEC_KEYS"), path)
	if err != nil {
		return fmt.Errorf("%w: payload keys: %v", errUsage, err)
	}
	g.keys = k
	return nil
}

// explainCodec adds a hint to errors caused by encrypted payloads this process cannot read.
func explainCodec(err error) error {
	if err != nil && strings.Contains(err.Error(), codec.Encoding) {
		return fmt.Errorf("%w\nThe payloads are encrypted: give this command the same keys as the worker (--codec-key-file or HERALD_CODEC_KEYS)", err)
	}
	return err
}

func newKeygenCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:         "keygen FILE",
		Short:       "Create a payload encryption key file",
		Annotations: map[string]string{annotationNoKeys: "yes"},
		Long: `Create a key file holding one new random AES-256 key. Give it to every Herald worker and
client (--codec-key-file FILE or HERALD_CODEC_KEY_FILE=FILE) so that event payloads, endpoint
secrets and failure messages are stored encrypted in Temporal. To rotate keys, put a new
key line first in the file and keep the old ones below it. The file is never overwritten.`,
		Args: exactArgs(1, "give the path of the key file to create"),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := codec.GenerateKeyFile(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote key %s to %s (mode 0600). Keep it secret and backed up: without it, stored payloads cannot be read.\n", k.ActiveKeyID(), args[0])
			return nil
		},
	}
}

func newCodecServerCmd(g *globals) *cobra.Command {
	var listen string
	var origins []string
	cmd := &cobra.Command{
		Use:   "codec-server",
		Short: "Serve the payload codec so the Temporal Web UI can show decrypted payloads",
		Long: `Serve Temporal's remote codec protocol (POST /codec/encode, /codec/decode) with your payload
keys, so that the Temporal Web UI, open in your browser, shows decrypted payloads. Run it on
your own machine and set the UI's codec endpoint (in the UI's settings) to
http://127.0.0.1:8081/codec. It decrypts for anyone who can reach it: keep it on loopback.
herald dev serves the same endpoint on its HTTP port and wires its UI to it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.keys == nil {
				return fmt.Errorf("%w: no payload keys: give --codec-key-file or HERALD_CODEC_KEYS", errUsage)
			}
			ctx, stop := untilInterrupt(cmd)
			defer stop()
			mux := http.NewServeMux()
			mux.Handle("/codec/", codec.Handler(g.keys, origins))
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (choose another with --listen)", listen, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Codec server on http://%s/codec for %v. Ctrl-C stops it.\n", ln.Addr(), origins)
			return serveUntil(ctx, &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8081", "address to listen on")
	cmd.Flags().StringSliceVar(&origins, "ui-origin", []string{"http://127.0.0.1:8233", "http://localhost:8233"}, "origins of the Temporal Web UI allowed to call it")
	return cmd
}

// serveUntil serves on ln until ctx ends, then shuts down gracefully.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}

// hostPort joins ip and port.
func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }
