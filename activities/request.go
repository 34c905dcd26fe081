package activities

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
)

// UserAgent is sent on every attempt.
const UserAgent = "Herald-Webhooks/1.0"

// Request is one attempt's request, built and signed: what a Destination sends.
type Request struct {
	// URL is the endpoint's address. It may carry credentials: it is never recorded
	// (herald.Result.URL is its display form).
	URL string
	// Header holds the endpoint's custom headers, then Herald's own: the content type, the
	// user agent and the Standard Webhooks signature headers.
	Header http.Header
	// Body is the envelope's bytes, as signed.
	Body []byte
	// Timeout bounds the whole exchange (the endpoint's attempt timeout).
	Timeout time.Duration
	// EndpointID is the endpoint's id, under which a destination keeps what it learns of
	// the endpoint's authentication (a token, a client).
	EndpointID string
	// Auth is how the destination authenticates to the receiver (HTTP: auth.go).
	Auth herald.EndpointAuth
	// secret names the headers whose values are not recorded (canonical names).
	secret []string
}

// newRequest builds the request of one attempt at ev to ep, signed at now: the envelope
// (the body) or the body of the endpoint's transformation tr (nil: none), the headers (the
// endpoint's custom headers, then tr's), then the signature over the body, which covers
// the bytes that go out.
func newRequest(ev herald.Event, ep herald.Endpoint, tr *transformation, now time.Time, timeout time.Duration) (*Request, error) {
	var body []byte
	if tr != nil && tr.Body != nil {
		body = tr.Body
	} else {
		var err error
		if body, err = (envelope{ID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt, Data: ev.Data}).body(); err != nil {
			return nil, fmt.Errorf("encode body: %v", err)
		}
	}
	req := &Request{URL: ep.URL, Header: http.Header{}, Body: body, Timeout: timeout, EndpointID: ep.ID, Auth: ep.Auth,
		secret: []string{http.CanonicalHeaderKey(signature.HeaderSignature)}}
	for _, h := range ep.Headers {
		req.Header.Set(h.Name, h.Value) // never one of Herald's own (herald.NormalizeHeaders)
		req.secret = append(req.secret, http.CanonicalHeaderKey(h.Name))
	}
	contentType := "application/json"
	if tr != nil {
		for _, h := range tr.headers {
			req.Header.Set(h.Name, h.Value) // never one of Herald's own (herald.NormalizeHeaders)
			req.secret = append(req.secret, http.CanonicalHeaderKey(h.Name))
		}
		if tr.contentType != "" {
			contentType = tr.contentType
		}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", UserAgent)
	if err := signature.Headers(req.Header, ev.ID, now, body, ep.Secrets(now)...); err != nil {
		return nil, fmt.Errorf("sign: %v", err)
	}
	return req, nil
}

// Recorded lists the request's headers by name, secret-free: the signature's value and the
// endpoint's custom headers' values are herald.RedactedValue.
func (r *Request) Recorded() []herald.Header {
	out := make([]herald.Header, 0, len(r.Header))
	for _, name := range slices.Sorted(maps.Keys(r.Header)) {
		v := strings.Join(r.Header[name], ", ")
		if slices.Contains(r.secret, name) {
			v = herald.RedactedValue
		}
		out = append(out, herald.Header{Name: name, Value: v})
	}
	return out
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
