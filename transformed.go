package herald

import (
	"strings"
	"unicode/utf8"
)

// OutcomeTransformCancelled: the endpoint's transformation cancelled the delivery (its
// reason is the Result's Error). No request was made; the delivery ends, skipped, with the
// reason, and is neither retried nor dead-lettered.
const OutcomeTransformCancelled Outcome = "transform_cancelled"

// MaxRecordedBody is how much of a transformed body an attempt's Result records.
const MaxRecordedBody = 4 << 10

// Transformed is what an endpoint's transformation (Endpoint.Transform) made of the event
// for one attempt, as its Result records it: the body sent, or the cancellation.
type Transformed struct {
	// Body is the start of the body sent, as text (at most MaxRecordedBody bytes; Cut
	// says it was cut). The signature covers the whole body.
	Body string `json:"body,omitempty"`
	// Bytes is the size of the whole body sent; 0 when the transformation kept Herald's
	// envelope.
	Bytes int  `json:"bytes,omitempty"`
	Cut   bool `json:"cut,omitempty"`
	// HeaderNames are the headers the transformation set (their values are recorded
	// redacted in the request's headers, as custom headers' are).
	HeaderNames []string `json:"header_names,omitempty"`
	// Cancel is the reason the transformation gave to cancel the delivery.
	Cancel string `json:"cancel,omitempty"`
}

// RecordBody is a Transformed recording body: its start as valid UTF-8, and its size.
func RecordBody(body []byte) Transformed {
	t := Transformed{Bytes: len(body)}
	b := body
	if len(b) > MaxRecordedBody {
		cut := MaxRecordedBody
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b, t.Cut = b[:cut], true
	}
	t.Body = strings.ToValidUTF8(string(b), "\uFFFD")
	return t
}
