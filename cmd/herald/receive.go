package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/signature"
)

func newReceiveCmd(g *globals) *cobra.Command {
	var (
		listen, secret, retryAfter string
		code                       int
	)
	cmd := &cobra.Command{
		Use:   "receive",
		Short: "Run a test receiver that prints the webhooks it gets",
		Long: `Run a small webhook receiver for trying Herald out: it prints every request, checks its
signature when given the endpoint's --secret, and answers with --status (and a Retry-After
header with --retry-after). Receivers you write in Go can verify with Herald's package
github.com/heraldhq/herald/signature the same way.`,
		Example: `  herald receive --listen 127.0.0.1:9000 --secret whsec_...
  herald receive --listen 127.0.0.1:9000 --status 503 --retry-after 60`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var v *signature.Verifier
			if secret != "" {
				s, err := signature.ParseSecret(secret)
				if err != nil {
					return fmt.Errorf("%w: --secret: %v", errUsage, err)
				}
				v = signature.NewVerifier(s)
			}
			if code < 100 || code > 599 {
				return fmt.Errorf("%w: --status %d is not an HTTP status code", errUsage, code)
			}
			ctx, stop := untilInterrupt(cmd)
			defer stop()
			out := cmd.OutOrStdout()
			var mu sync.Mutex
			n := 0
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
				mu.Lock()
				defer mu.Unlock()
				n++
				check := "signature not checked (no --secret)"
				if v != nil {
					if err := v.Verify(r.Header, body); err != nil {
						check = "SIGNATURE INVALID: " + err.Error()
					} else {
						check = "signature ok"
					}
				}
				fmt.Fprintf(out, "#%d %s %s %s webhook-id=%s; %s\n  %s\n", n, time.Now().Format("15:04:05.000"),
					r.Method, r.URL.Path, r.Header.Get(signature.HeaderID), check, oneLine(string(body), 300))
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				w.WriteHeader(code)
			})
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (choose another with --listen)", listen, err)
			}
			fmt.Fprintf(out, "Receiving on http://%s/ and answering %d. Ctrl-C stops it.\n", ln.Addr(), code)
			return serveUntil(ctx, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9000", "address to listen on")
	f.StringVar(&secret, "secret", "", "the endpoint's signing secret, to verify signatures")
	f.IntVar(&code, "status", http.StatusNoContent, "HTTP status to answer with")
	f.StringVar(&retryAfter, "retry-after", "", "Retry-After header to send (seconds or an HTTP date)")
	return cmd
}
