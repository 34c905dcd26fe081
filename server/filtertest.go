package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/expr"
)

// maxSampleEvent bounds the sample event the endpoint page's test form takes.
const maxSampleEvent = 64 << 10

// defaultSample fills the test form's box before a first test.
const defaultSample = `{"type": "order.paid", "data": {"order_id": 42, "amount": 150}}`

// filterTestView is what the endpoint page's "test against a sample event" form found: the
// filter's answer and, for an endpoint with a transformation, what it makes of the event.
type filterTestView struct {
	// Sample is the sample event as posted, shown again in the box.
	Sample string
	// Invalid says why the sample is not an event (nothing was evaluated).
	Invalid string
	// Filter is "true" or "false" ("" when the endpoint has no filter or it failed);
	// FilterError says why it could not be evaluated (the event would not be delivered).
	Filter, FilterError string
	// Body, Headers and Cancel are the transformation's output; TransformError why it
	// failed (the attempt would be refused and retried).
	Body, Headers, Cancel, TransformError string
}

// sampleEvent is the sample the test form takes: the event's type and data, and an id.
type sampleEvent struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// parseSample reads the test form's sample: a JSON object with a type in the event type
// grammar, data (any JSON value) and optionally an id in the event id grammar.
func parseSample(text string) (sampleEvent, error) {
	var ev sampleEvent
	if len(text) > maxSampleEvent {
		return ev, fmt.Errorf("the sample is %d bytes long; the limit is %d", len(text), maxSampleEvent)
	}
	if !utf8.ValidString(text) {
		return ev, errors.New("the sample is not UTF-8 text")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return ev, fmt.Errorf(`not a sample event: %v; give {"type": "order.paid", "data": {...}} and optionally "id"`, err)
	}
	if dec.More() {
		return ev, errors.New("data after the sample event's JSON object")
	}
	if err := herald.ValidateEventTypeName(ev.Type); err != nil {
		return ev, fmt.Errorf("type: %v", err)
	}
	if ev.ID == "" {
		ev.ID = "evt_sample"
	} else if err := herald.ValidateEventID(ev.ID); err != nil {
		return ev, fmt.Errorf("id: %v", err)
	}
	if len(bytes.TrimSpace(ev.Data)) == 0 {
		ev.Data = json.RawMessage("null")
	}
	return ev, nil
}

// testFilter evaluates endpoint e's filter and transformation on the sample text.
func testFilter(ctx context.Context, e herald.EndpointState, text string) *filterTestView {
	ft := &filterTestView{Sample: text}
	ev, err := parseSample(text)
	if err != nil {
		ft.Invalid = err.Error()
		return ft
	}
	in, err := expr.NewInput(expr.Event{ID: ev.ID, Type: ev.Type, Tenant: herald.TenantOrDefault(e.Tenant), Data: ev.Data})
	if err != nil {
		ft.Invalid = err.Error()
		return ft
	}
	if e.Filter != "" {
		var ok bool
		f, err := expr.CompileFilter(e.Filter)
		if err == nil {
			ok, err = f.Match(in)
		}
		if err != nil {
			ft.FilterError = err.Error()
		} else {
			ft.Filter = fmt.Sprint(ok)
		}
	}
	if e.Transform != "" {
		t, err := expr.CompileTransform(e.Transform)
		var out expr.Output
		if err == nil {
			out, err = t.Apply(ctx, in)
		}
		switch {
		case err != nil:
			ft.TransformError = err.Error()
		case out.Cancel != "":
			ft.Cancel = out.Cancel
		default:
			ft.Body = string(out.Body)
			if out.Body == nil {
				ft.Body = "(Herald's envelope, unchanged)"
			}
			var hs []string
			for n, v := range out.Headers {
				hs = append(hs, n+": "+v)
			}
			ft.Headers = strings.Join(hs, "\n")
		}
	}
	return ft
}

// filterTestForm evaluates the endpoint's filter and transformation on a sample event
// posted from its page, and shows the page with the answer. It reads and changes nothing.
func (s *Server) filterTestForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	v, e, err := s.endpointPageView(ctx, r, p)
	if err != nil {
		return err
	}
	v.FilterTest = testFilter(ctx, e, r.PostFormValue("event"))
	v.Refresh = 0 // the answer stays on the page
	s.render(w, r, http.StatusOK, "endpoint.html", v)
	return nil
}
