package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/expr"
)

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

// testFilter evaluates endpoint e's filter and transformation on the sample text.
func testFilter(ctx context.Context, e herald.EndpointState, text string) *filterTestView {
	ft := &filterTestView{Sample: text}
	ev, err := herald.ParseSampleEvent(text)
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
