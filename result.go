package herald

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/policy"
)

// Outcome classifies an attempt, whatever its destination. Only OutcomeDelivered is a
// success.
type Outcome string

// Outcomes of an attempt. The names are on the wire and in recorded histories.
const (
	OutcomeDelivered Outcome = "delivered" // the receiver took the event (HTTP: a 2xx)
	// OutcomeHTTPStatus: the receiver answered, but did not take the event (HTTP: any other
	// status, redirects included, never followed; Result.StatusCode says which).
	OutcomeHTTPStatus Outcome = "http_status"
	OutcomeTimeout    Outcome = "timeout"     // no complete answer within the attempt timeout
	OutcomeNetwork    Outcome = "network"     // DNS, connection refused or reset, ...
	OutcomeTLS        Outcome = "tls"         // TLS handshake or certificate error
	OutcomeRefused    Outcome = "refused"     // Herald refused the address (SSRF guard), the URL or the request
	OutcomeNoEndpoint Outcome = "no_endpoint" // the endpoint is not registered
)

// Caps of the headers a Result records, which keep a delivery's history small.
const (
	// MaxResponseHeaders is how many response headers a Result keeps.
	MaxResponseHeaders = 30
	// MaxResponseHeaderBytes is how many bytes of response header names and values a
	// Result keeps in all; a value is cut to fit.
	MaxResponseHeaderBytes = 4 << 10
)

// RedactedValue stands for a header value a Result does not record.
const RedactedValue = "[redacted]"

// Result is what happened on one attempt, whatever its destination. A failed attempt is a
// Result, not an error. What only an HTTP exchange has (a status, headers) is in
// HTTPExchange.
type Result struct {
	Number int `json:"number"`
	// URL is where the attempt went, without query string, fragment or credentials.
	URL       string    `json:"url,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	Duration  Duration  `json:"duration"`
	Outcome   Outcome   `json:"outcome"`
	Error     string    `json:"error,omitempty"`
	// Snippet is the start of the receiver's answer (an HTTP response's body).
	Snippet string `json:"snippet,omitempty"`
	// Policy is the policy in force for this endpoint at this attempt, which decides what
	// follows a failure; a delivered attempt leaves it out (it keeps history small).
	Policy Settings `json:"policy,omitzero"`
	// Held is set when the endpoint's gate or breaker held the attempt back: then no
	// request was made and the attempt does not count.
	Held *Hold `json:"held,omitempty"`
	// Spread is a failed attempt's place in its retry's jitter window, given by the gate
	// so that attempts that failed together retry evenly spread (see policy.Spread).
	Spread *float64 `json:"spread,omitempty"`
	// Transformed is what the endpoint's transformation made of the event (what was sent,
	// or why the delivery was cancelled); nil for an endpoint without one.
	Transformed *Transformed `json:"transformed,omitempty"`
	// HTTPExchange is the HTTP detail of an attempt an HTTP destination made; zero for one
	// that made no request or got no answer. Its fields are on the wire at the top level
	// of the Result, where recorded histories have them.
	HTTPExchange
}

// HTTPExchange is what an HTTP attempt sent and got back, beyond the Result's outcome.
type HTTPExchange struct {
	// StatusCode is the response's status (zero: no response).
	StatusCode int `json:"status_code,omitempty"`
	// RetryAfterHeader and DateHeader are the raw response headers, when present.
	RetryAfterHeader string `json:"retry_after_header,omitempty"`
	DateHeader       string `json:"date_header,omitempty"`
	// RequestHeaders are the headers the request went out with, secret-free: the
	// signature's value and every custom header's value are RedactedValue (a custom header
	// may carry a credential).
	RequestHeaders []Header `json:"request_headers,omitempty"`
	// ResponseHeaders are the response's first headers, in name order, capped at
	// MaxResponseHeaders headers and MaxResponseHeaderBytes bytes in all;
	// ResponseHeadersCut says headers were left out.
	ResponseHeaders    []Header `json:"response_headers,omitempty"`
	ResponseHeadersCut bool     `json:"response_headers_cut,omitempty"`
}

// RetryAfter is what the policy in force makes of the response's Retry-After header
// (action "none" for a delivered attempt, whose result leaves the policy out).
func (r Result) RetryAfter() policy.RetryAfter {
	if r.Delivered() {
		return policy.RetryAfter{Action: policy.RetryAfterNone}
	}
	return r.Policy.RetryAfter.Decide(r.HTTPExchange.RetryAfterHeader, r.HTTPExchange.DateHeader, r.StartedAt)
}

// Delivered reports whether the attempt succeeded.
func (r Result) Delivered() bool { return r.Outcome == OutcomeDelivered }

// Gone reports whether the receiver said it wants no more events, ever (HTTP 410 Gone,
// policy.GoneStatus): the endpoint is disabled at once.
func (r Result) Gone() bool {
	return r.Outcome == OutcomeHTTPStatus && r.HTTPExchange.StatusCode == policy.GoneStatus
}

// Summary is a one-line account of the attempt, e.g. "503 Service Unavailable" or "timeout after 30s".
func (r Result) Summary() string {
	h := r.HTTPExchange
	switch {
	case (r.Outcome == OutcomeDelivered || r.Outcome == OutcomeHTTPStatus) && h.StatusCode != 0:
		s := fmt.Sprintf("%d %s", h.StatusCode, http.StatusText(h.StatusCode))
		if h.RetryAfterHeader != "" {
			s += fmt.Sprintf(", Retry-After %s %s", strings.TrimSpace(h.RetryAfterHeader), r.RetryAfter().Action)
		}
		return s
	case r.Outcome == OutcomeDelivered:
		return string(r.Outcome)
	default:
		return fmt.Sprintf("%s: %s", r.Outcome, r.Error)
	}
}
