package herald

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/policy"
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

// Result is what happened on one attempt. A failed attempt is a Result, not an error.
type Result struct {
	Number     int       `json:"number"`
	URL        string    `json:"url,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	Duration   Duration  `json:"duration"`
	Outcome    Outcome   `json:"outcome"`
	StatusCode int       `json:"status_code,omitempty"`
	Error      string    `json:"error,omitempty"`
	Snippet    string    `json:"snippet,omitempty"`
	// RetryAfterHeader and DateHeader are the raw response headers, when present.
	RetryAfterHeader string `json:"retry_after_header,omitempty"`
	DateHeader       string `json:"date_header,omitempty"`
	// Policy is the policy in force for this endpoint at this attempt, which decides what
	// follows a failure; a delivered attempt leaves it out (it keeps history small).
	Policy Settings `json:"policy,omitzero"`
	// Held is set when the endpoint's gate or breaker held the attempt back: then no
	// request was made and the attempt does not count.
	Held *Hold `json:"held,omitempty"`
	// RequestHeaders are the headers the request went out with, secret-free: the
	// signature's value and every custom header's value are RedactedValue (a custom header
	// may carry a credential).
	RequestHeaders []Header `json:"request_headers,omitempty"`
	// ResponseHeaders are the response's first headers, in name order, capped at
	// MaxResponseHeaders headers and MaxResponseHeaderBytes bytes in all;
	// ResponseHeadersCut says headers were left out.
	ResponseHeaders    []Header `json:"response_headers,omitempty"`
	ResponseHeadersCut bool     `json:"response_headers_cut,omitempty"`
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
