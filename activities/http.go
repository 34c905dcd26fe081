package activities

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
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

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/netguard"
)

// Wire limits of an HTTP attempt.
const (
	// MaxResponseBody is how much of a response body Herald reads; the rest is discarded.
	MaxResponseBody = 64 << 10
	// SnippetBytes is how much of the response body is kept on the attempt record.
	SnippetBytes = 512
)

// HTTP is the HTTP destination: it POSTs the request to the endpoint's URL and classifies
// the answer. A 2xx delivers; any other status, redirects included (never followed), is
// OutcomeHTTPStatus; no answer in time, a network or a TLS error, or an address the SSRF
// guard refuses is the outcome of that name. It authenticates to receivers that ask for it
// (auth.go): basic auth, an OAuth2 token, a TLS client certificate.
type HTTP struct {
	// Client sends the requests; it must not follow redirects (NewHTTP's does not).
	Client *http.Client
	// creds makes the clients of endpoints with a client certificate and fetches OAuth2
	// tokens (NewHTTP sets it; without it, only basic auth is possible).
	creds *credentials
}

// HTTPOptions adjust NewHTTP's destination; the zero value is the default.
type HTTPOptions struct {
	// Wrap, if set, wraps every transport the destination makes (tracing.Tracing.Transport).
	Wrap func(http.RoundTripper) http.RoundTripper
	// RootCAs are the certificate authorities receivers' and token servers' certificates
	// must chain to; nil means the system's.
	RootCAs *x509.CertPool
}

// NewHTTP returns the HTTP destination whose clients dial through the SSRF guard p (the
// OAuth2 token requests too), never follow redirects and never use a proxy from the
// environment.
func NewHTTP(p netguard.Policy, o HTTPOptions) *HTTP {
	c := newCredentials(p, o)
	return &HTTP{Client: c.client(nil), creds: c}
}

// Deliver POSTs req and returns the outcome with the HTTP exchange: the status, the
// Retry-After and Date headers, the headers sent (secret-free) and the first ones received,
// and the start of the response body. An endpoint with OAuth2 that answers 401 to a token
// this worker had kept gets the attempt once more with a new token.
func (d *HTTP) Deliver(ctx context.Context, req *Request) herald.Result {
	var res herald.Result
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	client := d.Client
	if cc := req.Auth.ClientCert; cc != nil {
		c, err := d.creds.certClient(req.EndpointID, *cc)
		if err != nil {
			res.Outcome, res.Error = herald.OutcomeRefused, "client certificate: "+err.Error()
			return res
		}
		client = c
	}
	if b := req.Auth.Basic; b != nil {
		d.setAuthorization(req, "Basic "+base64.StdEncoding.EncodeToString([]byte(b.Username+":"+string(b.Password))))
	}
	o := req.Auth.OAuth2
	var tok string
	var fresh bool
	if o != nil {
		var err error
		if tok, fresh, err = d.creds.token(ctx, req.EndpointID, *o, ""); err != nil {
			return tokenFailure(err, req.Timeout)
		}
		d.setAuthorization(req, tok)
	}
	res = d.post(ctx, client, req)
	if o != nil && !fresh && res.HTTPExchange.StatusCode == http.StatusUnauthorized {
		// The token this worker kept may have been revoked: a new one, once.
		var err error
		if tok, _, err = d.creds.token(ctx, req.EndpointID, *o, tok); err != nil {
			return tokenFailure(err, req.Timeout)
		}
		d.setAuthorization(req, tok)
		res = d.post(ctx, client, req)
	}
	return res
}

// setAuthorization sets req's Authorization header to v, recorded as redacted.
func (d *HTTP) setAuthorization(req *Request, v string) {
	req.Header.Set("Authorization", v)
	if !slices.Contains(req.secret, "Authorization") {
		req.secret = append(req.secret, "Authorization")
	}
}

// post sends req once with client and classifies what happened.
func (d *HTTP) post(ctx context.Context, client *http.Client, req *Request) herald.Result {
	var res herald.Result
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		res.Outcome, res.Error = herald.OutcomeRefused, fmt.Sprintf("bad endpoint URL: %v", err)
		return res
	}
	hreq.Header = req.Header.Clone()
	x := &res.HTTPExchange
	x.RequestHeaders = req.Recorded()
	resp, err := client.Do(hreq)
	if err != nil {
		res.Outcome, res.Error = classify(err, req.Timeout)
		return res
	}
	snippet, readErr := readCapped(resp.Body)
	resp.Body.Close()
	res.Snippet = snippet
	x.StatusCode = resp.StatusCode
	x.RetryAfterHeader = resp.Header.Get("Retry-After")
	x.DateHeader = resp.Header.Get("Date")
	x.ResponseHeaders, x.ResponseHeadersCut = cappedHeaders(resp.Header)
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

// readCapped reads at most MaxResponseBody bytes and returns a valid-UTF-8 snippet of the start.
func readCapped(body io.Reader) (string, error) {
	buf, err := io.ReadAll(io.LimitReader(body, MaxResponseBody))
	if len(buf) > SnippetBytes {
		buf = buf[:SnippetBytes]
	}
	return strings.ToValidUTF8(string(buf), "\uFFFD"), err
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
