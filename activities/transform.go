package activities

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/expr"
)

// transformation is what an endpoint's transformation made of an event for one attempt:
// the body and headers to send, or a cancellation.
type transformation struct {
	expr.Output
	// contentType replaces application/json when set.
	contentType string
	// headers are the other headers it sets, checked and sorted.
	headers []herald.Header
}

// transform runs ep's transformation on ev (nil when ep has none): compiled once per text
// (package expr's cache), within expr's bounds of cost, time and output. Its headers
// follow the custom headers' rules (herald.NormalizeHeaders), except that Content-Type
// may be set.
func transform(ctx context.Context, ev herald.Event, ep herald.Endpoint) (*transformation, error) {
	if ep.Transform == "" {
		return nil, nil
	}
	t, err := expr.CompileTransform(ep.Transform)
	if err != nil {
		return nil, err
	}
	in, err := expr.NewInput(expr.Event{ID: ev.ID, Type: ev.Type, Tenant: herald.TenantOrDefault(ep.Tenant), Data: ev.Data})
	if err != nil {
		return nil, fmt.Errorf("transform: %w", err)
	}
	out, err := t.Apply(ctx, in)
	if err != nil {
		return nil, err
	}
	tr := &transformation{Output: out}
	hs := make([]herald.Header, 0, len(out.Headers))
	for name, v := range out.Headers {
		if http.CanonicalHeaderKey(name) == "Content-Type" {
			tr.contentType = v
			continue
		}
		hs = append(hs, herald.Header{Name: name, Value: v})
	}
	if tr.headers, err = herald.NormalizeHeaders(hs); err != nil {
		return nil, fmt.Errorf("transform: headers: %w", err)
	}
	if len(tr.contentType) > herald.MaxHeaderValue || slices.ContainsFunc([]byte(tr.contentType), func(c byte) bool { return c < 0x20 || c == 0x7f }) {
		return nil, fmt.Errorf("transform: headers: Content-Type %.40q is not a header value", tr.contentType)
	}
	return tr, nil
}

// record is what the attempt's Result records of t: the body sent, or the cancellation.
func (t *transformation) record() *herald.Transformed {
	if t.Cancel != "" {
		return &herald.Transformed{Cancel: t.Cancel}
	}
	var rec herald.Transformed
	if t.Body != nil {
		rec = herald.RecordBody(t.Body)
	}
	for _, h := range t.headers {
		rec.HeaderNames = append(rec.HeaderNames, h.Name)
	}
	if t.contentType != "" {
		rec.HeaderNames = append(rec.HeaderNames, "Content-Type")
	}
	return &rec
}
