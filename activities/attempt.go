// Package activities holds Herald's activities: the attempt (admission at the worker's
// gate, wire format, signing, SSRF-safe dialing, timeouts, capped body read,
// classification of the outcome), bulk replay and the operational events. Activities make
// no retry decisions: the delivery workflow asks package policy what follows an attempt.
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
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/worker/gate"
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

// AttemptInput is one attempt to deliver an event: the delivery's event itself, and which
// attempt this is. It is a local activity's input, handed over in process and never
// recorded in history.
type AttemptInput struct {
	Event  herald.Event `json:"event"`
	Round  int          `json:"round"`
	Number int          `json:"number"`
	// Waiter is the delivery's workflow id: where the endpoint workflow sends a Permit
	// when the attempt has to wait.
	Waiter string `json:"waiter,omitempty"`
	// Permit is a permit of its own the endpoint workflow handed the delivery.
	Permit *policy.Grant `json:"permit,omitempty"`
}

// Activities are Herald's activities. One value is shared by all attempts of a worker.
type Activities struct {
	// Gate admits attempts per endpoint and knows each endpoint's configuration.
	Gate *gate.Gate
	// HTTP sends the attempts; it must not follow redirects (see NewHTTPClient).
	HTTP *http.Client
	// Defaults are the settings an endpoint uses unless it overrides them.
	Defaults herald.Settings
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
	CreatedAt time.Time       `json:"created_at,omitzero"`
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
// receiver is reported in the herald.Result.
func (a *Activities) Attempt(ctx context.Context, in AttemptInput) (herald.Result, error) {
	res := herald.Result{Number: in.Number, StartedAt: a.now(), Policy: a.Defaults.Apply(herald.Overrides{})}
	adm, hold, err := a.Gate.Acquire(ctx, in.Event.EndpointID, in.Waiter, in.Permit)
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case errors.Is(err, herald.ErrNoEndpoint):
		res.Outcome, res.Error = herald.OutcomeNoEndpoint, err.Error()
		return res, nil
	case err != nil:
		// The endpoint workflow could not be reached: wait, this is not the receiver's fault.
		activity.GetLogger(ctx).Warn("endpoint workflow unreachable", "event", in.Event.ID, "endpoint", in.Event.EndpointID, "error", err)
		res.Held = &herald.Hold{Reason: "endpoint workflow unreachable: " + err.Error(), Recheck: herald.Duration(policy.UnreachableRecheck)}
		return res, nil
	case hold != nil:
		res.Held = hold
		activity.GetLogger(ctx).Debug("attempt held", "event", in.Event.ID, "endpoint", in.Event.EndpointID, "reason", hold.Reason, "queued", hold.Queued)
		return res, nil
	}
	start := a.now()
	if h := a.Gate.Late(ctx, adm, start); h != nil {
		// A rate-limited attempt whose second is over: no request, no attempt used.
		res.Held = h
		return res, nil
	}
	res = a.send(ctx, in, adm.Endpoint, start)
	if ctx.Err() != nil {
		// The worker is stopping: the request was cut short, not answered.
		a.Gate.Release(context.WithoutCancel(ctx), adm)
		return res, ctx.Err()
	}
	if spread, ok := a.Gate.Finish(ctx, adm, res); ok {
		res.Spread = &spread
	}
	a.Metrics.Attempt(in.Event.EndpointID, string(res.Outcome), res.Duration.Std())
	log := activity.GetLogger(ctx)
	if res.Delivered() {
		log.Debug("attempt delivered", "event", in.Event.ID, "endpoint", in.Event.EndpointID, "attempt", in.Number, "status", res.StatusCode, "duration", res.Duration)
		res.Policy = herald.Settings{}
		return res, nil
	}
	log.Info("attempt failed", "event", in.Event.ID, "endpoint", in.Event.EndpointID, "attempt", in.Number, "round", in.Round,
		"outcome", res.Outcome, "status", res.StatusCode, "error", res.Error, "duration", res.Duration)
	a.Metrics.RetryAfter(in.Event.EndpointID, string(res.RetryAfter().Action))
	return res, nil
}

// send makes the HTTP request of one admitted attempt, started (and signed) at now.
func (a *Activities) send(ctx context.Context, in AttemptInput, ep herald.Endpoint, now time.Time) herald.Result {
	res := herald.Result{Number: in.Number, StartedAt: now, Policy: a.Defaults.Apply(ep.Overrides), URL: displayURL(ep.URL)}
	body, err := envelope{ID: in.Event.ID, Type: in.Event.Type, CreatedAt: in.Event.CreatedAt, Data: in.Event.Data}.body()
	if err != nil {
		res.Outcome, res.Error = herald.OutcomeRefused, fmt.Sprintf("encode body: %v", err)
		return res
	}
	actx, cancel := context.WithTimeout(ctx, res.Policy.Timeout.Std())
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		res.Outcome, res.Error = herald.OutcomeRefused, fmt.Sprintf("bad endpoint URL: %v", err)
		return res
	}
	for _, h := range ep.Headers {
		req.Header.Set(h.Name, h.Value) // never one of Herald's own (herald.NormalizeHeaders)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if err := signature.Headers(req.Header, in.Event.ID, now, body, ep.Secrets(now)...); err != nil {
		res.Outcome, res.Error = herald.OutcomeRefused, fmt.Sprintf("sign: %v", err)
		return res
	}
	res.RequestHeaders = sentHeaders(req.Header, ep.Headers)

	resp, err := a.HTTP.Do(req)
	if err != nil {
		res.Duration = herald.Duration(a.now().Sub(now))
		res.Outcome, res.Error = classify(err, res.Policy.Timeout.Std())
		return res
	}
	snippet, readErr := readCapped(resp.Body)
	resp.Body.Close()
	res.Duration = herald.Duration(a.now().Sub(now))
	res.StatusCode = resp.StatusCode
	res.Snippet = snippet
	res.RetryAfterHeader = resp.Header.Get("Retry-After")
	res.DateHeader = resp.Header.Get("Date")
	res.ResponseHeaders, res.ResponseHeadersCut = cappedHeaders(resp.Header)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299 && readErr != nil && errors.Is(readErr, context.DeadlineExceeded):
		// The receiver answered 2xx but did not finish its body in time: it still said yes.
		res.Outcome = herald.OutcomeDelivered
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		res.Outcome = herald.OutcomeDelivered
	default:
		res.Outcome = herald.OutcomeHTTPStatus
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

// sentHeaders lists the request's headers by name, secret-free: the signature's value and
// the endpoint's custom headers' values are herald.RedactedValue.
func sentHeaders(h http.Header, custom []herald.Header) []herald.Header {
	out := make([]herald.Header, 0, len(h))
	for _, name := range slices.Sorted(maps.Keys(h)) {
		v := strings.Join(h[name], ", ")
		if name == http.CanonicalHeaderKey(signature.HeaderSignature) || slices.ContainsFunc(custom, func(c herald.Header) bool { return http.CanonicalHeaderKey(c.Name) == name }) {
			v = herald.RedactedValue
		}
		out = append(out, herald.Header{Name: name, Value: v})
	}
	return out
}

// cappedHeaders lists a response's headers by name, at most herald.MaxResponseHeaders of
// them and herald.MaxResponseHeaderBytes in all (the value that crosses the limit is cut);
// cut says some were left out or cut.
func cappedHeaders(h http.Header) (out []herald.Header, cut bool) {
	budget := herald.MaxResponseHeaderBytes
	for _, name := range slices.Sorted(maps.Keys(h)) {
		if len(out) == herald.MaxResponseHeaders || budget <= len(name) {
			return out, true
		}
		v := strings.ToValidUTF8(strings.Join(h[name], ", "), "\uFFFD")
		budget -= len(name)
		if len(v) > budget {
			v, cut = strings.ToValidUTF8(v[:budget], ""), true
		}
		budget -= len(v)
		out = append(out, herald.Header{Name: name, Value: v})
	}
	return out, cut
}

// classify turns a transport error into an outcome and a readable reason.
func classify(err error, timeout time.Duration) (herald.Outcome, string) {
	var forbidden *netguard.ForbiddenError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.As(err, &forbidden):
		return herald.OutcomeRefused, forbidden.Error()
	case errors.Is(err, netguard.ErrForbidden), errors.Is(err, netguard.ErrHTTPSRequired):
		return herald.OutcomeRefused, unwrapURLError(err)
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return herald.OutcomeTimeout, fmt.Sprintf("no response within %s", timeout)
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &recordErr):
		return herald.OutcomeTLS, unwrapURLError(err)
	default:
		return herald.OutcomeNetwork, unwrapURLError(err)
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
