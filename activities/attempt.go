// Package activities holds Herald's activities: the HTTP attempt (wire format, signing,
// SSRF-safe dialing, timeouts, capped body read, classification of the outcome) and the
// worker-side view of endpoints. Activities make no retry decisions: the delivery workflow
// asks package policy what follows an attempt.
package activities

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
)

// Wire limits of one attempt.
const (
	// MaxResponseBody is how much of a response body Herald reads; the rest is discarded.
	MaxResponseBody = 64 << 10
	// SnippetBytes is how much of the response body is kept on the attempt record.
	SnippetBytes = 512
	// UserAgent is sent on every attempt.
	UserAgent = "Herald-Webhooks/1.0"
)

// Outcome classifies an attempt. Only OutcomeDelivered is a success.
type Outcome string

// Outcomes of an attempt.
const (
	OutcomeDelivered  Outcome = "delivered"   // 2xx
	OutcomeHTTPStatus Outcome = "http_status" // any other status, redirects included (never followed)
	OutcomeTimeout    Outcome = "timeout"     // no complete response within the attempt timeout
	OutcomeNetwork    Outcome = "network"     // DNS, connection refused or reset, ...
	OutcomeTLS        Outcome = "tls"         // TLS handshake or certificate error
	OutcomeRefused    Outcome = "refused"     // Herald refused the address (SSRF guard) or the URL
	OutcomeNoEndpoint Outcome = "no_endpoint" // the endpoint is not registered
)

// AttemptInput is one attempt to deliver an event.
type AttemptInput struct {
	EventID    string          `json:"event_id"`
	EndpointID string          `json:"endpoint_id"`
	Type       string          `json:"type"`
	Data       json.RawMessage `json:"data"`
	CreatedAt  time.Time       `json:"created_at"`
	Round      int             `json:"round"`
	Number     int             `json:"number"`
	// Waiter is the delivery's workflow id: where the endpoint workflow sends a Permit
	// when the attempt has to wait.
	Waiter string `json:"waiter,omitempty"`
	// Permit is a permit of its own the endpoint workflow handed the delivery.
	Permit *Permit `json:"permit,omitempty"`
}

// Result is what happened on one attempt. A failed attempt is a Result, not an error.
type Result struct {
	Number     int           `json:"number"`
	URL        string        `json:"url,omitempty"`
	StartedAt  time.Time     `json:"started_at"`
	Duration   time.Duration `json:"duration"`
	Outcome    Outcome       `json:"outcome"`
	StatusCode int           `json:"status_code,omitempty"`
	Error      string        `json:"error,omitempty"`
	Snippet    string        `json:"snippet,omitempty"`
	// RetryAfterHeader and DateHeader are the raw response headers, when present.
	RetryAfterHeader string `json:"retry_after_header,omitempty"`
	DateHeader       string `json:"date_header,omitempty"`
	// Policy is the policy in force for this endpoint at this attempt, which decides what
	// follows a failure; a delivered attempt leaves it out (it keeps history small).
	Policy Effective `json:"policy,omitzero"`
	// Held is set when the endpoint's gate or breaker held the attempt back: then no
	// request was made and the attempt does not count.
	Held *Hold `json:"held,omitempty"`
	// Spread is a failed attempt's place in its retry's jitter window, given by the gate
	// so that attempts that failed together retry evenly spread (see policy.Spread).
	Spread *float64 `json:"spread,omitempty"`
}

// RetryAfter is what the policy in force makes of the response's Retry-After header
// (action "none" for a delivered attempt, whose result leaves the policy out).
func (r Result) RetryAfter() policy.RetryAfter {
	if r.Delivered() {
		return policy.RetryAfter{Action: policy.RetryAfterNone}
	}
	return r.Policy.RetryAfter.Decide(r.RetryAfterHeader, r.DateHeader, r.StartedAt)
}

// Delivered reports whether the attempt succeeded.
func (r Result) Delivered() bool { return r.Outcome == OutcomeDelivered }

// Summary is a one-line account of the attempt, e.g. "503 Service Unavailable" or "timeout after 30s".
func (r Result) Summary() string {
	switch r.Outcome {
	case OutcomeDelivered, OutcomeHTTPStatus:
		s := fmt.Sprintf("%d %s", r.StatusCode, http.StatusText(r.StatusCode))
		if r.RetryAfterHeader != "" {
			s += fmt.Sprintf(", Retry-After %s %s", strings.TrimSpace(r.RetryAfterHeader), r.RetryAfter().Action)
		}
		return s
	default:
		return fmt.Sprintf("%s: %s", r.Outcome, r.Error)
	}
}

// Activities are Herald's activities. One value is shared by all attempts of a worker.
type Activities struct {
	// Gate admits attempts per endpoint and knows each endpoint's configuration.
	Gate *Gate
	// HTTP sends the attempts; it must not follow redirects (see NewHTTPClient).
	HTTP *http.Client
	// Defaults is the policy an endpoint uses unless it overrides it.
	Defaults Defaults
	// Metrics, if set, counts attempts, their latency and Retry-After decisions.
	Metrics *metrics.Recorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewHTTPClient returns the client attempts use: dialing through the SSRF guard p, never
// following redirects, never using a proxy from the environment.
func NewHTTPClient(p netguard.Policy) *http.Client {
	return &http.Client{
		Transport: p.Transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// envelope is the JSON body of every attempt.
type envelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// body is the envelope as it goes on the wire: compact JSON whose data is the producer's
// bytes, compacted at most. Nothing is escaped for HTML: json.Marshal would turn each <, >
// and & into a six-byte \u escape, changing the data and its size.
func (e envelope) body() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Attempt makes one HTTP attempt to deliver an event to its endpoint's current URL. It
// returns an error only when the worker itself is shutting down; every failure of the
// receiver is reported in the Result.
func (a *Activities) Attempt(ctx context.Context, in AttemptInput) (Result, error) {
	res := Result{Number: in.Number, StartedAt: a.now(), Policy: a.Defaults.Apply(Overrides{})}
	adm, hold, err := a.Gate.Acquire(ctx, in.EndpointID, in.Waiter, in.Permit)
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case errors.Is(err, ErrNoEndpoint):
		res.Outcome, res.Error = OutcomeNoEndpoint, err.Error()
		return res, nil
	case err != nil:
		// The endpoint workflow could not be reached: wait, this is not the receiver's fault.
		activity.GetLogger(ctx).Warn("endpoint workflow unreachable", "event", in.EventID, "endpoint", in.EndpointID, "error", err)
		res.Held = &Hold{Reason: "endpoint workflow unreachable: " + err.Error(), Recheck: policy.UnreachableRecheck}
		return res, nil
	case hold != nil:
		res.Held = hold
		activity.GetLogger(ctx).Debug("attempt held", "event", in.EventID, "endpoint", in.EndpointID, "reason", hold.Reason, "queued", hold.Queued)
		return res, nil
	}
	res = a.send(ctx, in, adm.Endpoint)
	if ctx.Err() != nil {
		// The worker is stopping: the request was cut short, not answered.
		a.Gate.Release(context.WithoutCancel(ctx), adm)
		return res, ctx.Err()
	}
	if spread, ok := a.Gate.Finish(ctx, adm, res); ok {
		res.Spread = &spread
	}
	a.Metrics.Attempt(in.EndpointID, string(res.Outcome), res.Duration)
	log := activity.GetLogger(ctx)
	if res.Delivered() {
		log.Debug("attempt delivered", "event", in.EventID, "endpoint", in.EndpointID, "attempt", in.Number, "status", res.StatusCode, "duration", res.Duration)
		res.Policy = Effective{}
		return res, nil
	}
	log.Info("attempt failed", "event", in.EventID, "endpoint", in.EndpointID, "attempt", in.Number, "round", in.Round,
		"outcome", res.Outcome, "status", res.StatusCode, "error", res.Error, "duration", res.Duration)
	a.Metrics.RetryAfter(in.EndpointID, string(res.RetryAfter().Action))
	return res, nil
}

// send makes the HTTP request of one admitted attempt.
func (a *Activities) send(ctx context.Context, in AttemptInput, ep Endpoint) Result {
	now := a.now()
	res := Result{Number: in.Number, StartedAt: now, Policy: a.Defaults.Apply(ep.Overrides), URL: displayURL(ep.URL)}
	body, err := envelope{ID: in.EventID, Type: in.Type, CreatedAt: in.CreatedAt, Data: in.Data}.body()
	if err != nil {
		res.Outcome, res.Error = OutcomeRefused, fmt.Sprintf("encode body: %v", err)
		return res
	}
	actx, cancel := context.WithTimeout(ctx, res.Policy.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		res.Outcome, res.Error = OutcomeRefused, fmt.Sprintf("bad endpoint URL: %v", err)
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if err := signature.Headers(req.Header, in.EventID, now, body, ep.Secrets(now)...); err != nil {
		res.Outcome, res.Error = OutcomeRefused, fmt.Sprintf("sign: %v", err)
		return res
	}

	resp, err := a.HTTP.Do(req)
	if err != nil {
		res.Duration = a.now().Sub(now)
		res.Outcome, res.Error = classify(err, res.Policy.Timeout)
		return res
	}
	snippet, readErr := readCapped(resp.Body)
	resp.Body.Close()
	res.Duration = a.now().Sub(now)
	res.StatusCode = resp.StatusCode
	res.Snippet = snippet
	res.RetryAfterHeader = resp.Header.Get("Retry-After")
	res.DateHeader = resp.Header.Get("Date")
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299 && readErr != nil && errors.Is(readErr, context.DeadlineExceeded):
		// The receiver answered 2xx but did not finish its body in time: it still said yes.
		res.Outcome = OutcomeDelivered
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		res.Outcome = OutcomeDelivered
	default:
		res.Outcome = OutcomeHTTPStatus
		if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
			res.Error = fmt.Sprintf("redirect to %q not followed: webhooks must answer 2xx at the registered URL", resp.Header.Get("Location"))
		}
	}
	return res
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// readCapped reads at most MaxResponseBody bytes and returns a valid-UTF-8 snippet of the start.
func readCapped(body io.Reader) (string, error) {
	buf, err := io.ReadAll(io.LimitReader(body, MaxResponseBody))
	if len(buf) > SnippetBytes {
		buf = buf[:SnippetBytes]
	}
	return strings.ToValidUTF8(string(buf), "\uFFFD"), err
}

// classify turns a transport error into an outcome and a readable reason.
func classify(err error, timeout time.Duration) (Outcome, string) {
	var forbidden *netguard.ForbiddenError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.As(err, &forbidden):
		return OutcomeRefused, forbidden.Error()
	case errors.Is(err, netguard.ErrForbidden), errors.Is(err, netguard.ErrHTTPSRequired):
		return OutcomeRefused, unwrapURLError(err)
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return OutcomeTimeout, fmt.Sprintf("no response within %s", timeout)
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &recordErr):
		return OutcomeTLS, unwrapURLError(err)
	default:
		return OutcomeNetwork, unwrapURLError(err)
	}
}

// unwrapURLError drops net/http's "Post \"url\": " prefix, which repeats what the record already says.
func unwrapURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if !utf8.ValidString(msg) {
		msg = strings.ToValidUTF8(msg, "\uFFFD")
	}
	return msg
}

// displayURL is the URL without query string or fragment, which may carry credentials.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}
