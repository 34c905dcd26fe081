package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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
github.com/heraldhq/herald/signature the same way.

With -o json it prints one JSON object per request, one per line (JSON Lines), and its
start-up line goes to standard error: n (1, 2, ...), received_at, method, path, webhook_id,
signature ("ok", "invalid" with signature_error, or "not_checked"), headers (each name's
values joined by ", "), and body: the JSON the request carried, or body_text when it was
not JSON.`,
		Example: `  herald receive --listen 127.0.0.1:9000 --secret whsec_...
  herald receive --listen 127.0.0.1:9000 --status 503 --retry-after 60
  herald receive -o json | jq .body`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotationNoKeys: "it never talks to Temporal"},
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
				rr := received(n, time.Now(), r, body, v)
				if g.output == "json" {
					_ = json.NewEncoder(out).Encode(rr)
				} else {
					check := "signature not checked (no --secret)"
					switch rr.Signature {
					case signatureOK:
						check = "signature ok"
					case signatureInvalid:
						check = "SIGNATURE INVALID: " + rr.SignatureError
					}
					fmt.Fprintf(out, "#%d %s %s %s webhook-id=%s; %s\n  %s\n", n, rr.ReceivedAt.Local().Format("15:04:05.000"),
						r.Method, r.URL.Path, rr.WebhookID, check, oneLine(string(body), 300))
				}
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				w.WriteHeader(code)
			})
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (choose another with --listen)", listen, err)
			}
			banner := out
			if g.output == "json" {
				banner = cmd.ErrOrStderr() // standard output carries only the requests
			}
			fmt.Fprintf(banner, "Receiving on http://%s/ and answering %d. Ctrl-C stops it.\n", ln.Addr(), code)
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

// What receive -o json says of a request's signature.
const (
	signatureOK         = "ok"
	signatureInvalid    = "invalid"
	signatureNotChecked = "not_checked"
)

// receivedRequest is one request as receive -o json prints it.
type receivedRequest struct {
	N              int               `json:"n"`
	ReceivedAt     time.Time         `json:"received_at"`
	Method         string            `json:"method"`
	Path           string            `json:"path"`
	WebhookID      string            `json:"webhook_id,omitempty"`
	Signature      string            `json:"signature"`
	SignatureError string            `json:"signature_error,omitempty"`
	Headers        map[string]string `json:"headers"`
	Body           json.RawMessage   `json:"body,omitempty"`
	BodyText       string            `json:"body_text,omitempty"`
}

// received describes the n-th request r, received at with body, its signature checked
// by v (nil: not checked).
func received(n int, at time.Time, r *http.Request, body []byte, v *signature.Verifier) receivedRequest {
	rr := receivedRequest{N: n, ReceivedAt: at, Method: r.Method, Path: r.URL.Path,
		WebhookID: r.Header.Get(signature.HeaderID), Signature: signatureNotChecked, Headers: map[string]string{}}
	if v != nil {
		rr.Signature = signatureOK
		if err := v.Verify(r.Header, body); err != nil {
			rr.Signature, rr.SignatureError = signatureInvalid, err.Error()
		}
	}
	for name, values := range r.Header {
		rr.Headers[strings.ToLower(name)] = strings.Join(values, ", ")
	}
	if json.Valid(body) {
		rr.Body = json.RawMessage(body)
	} else {
		rr.BodyText = string(body)
	}
	return rr
}
