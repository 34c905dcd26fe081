package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// tenantQuery is the query that names a tenant's event in links: none for the default tenant.
func tenantQuery(tenant string) string {
	if tenant == "" || tenant == herald.DefaultTenant {
		return ""
	}
	return "?tenant=" + url.QueryEscape(tenant)
}

// deliveryQuery is the query that names the delivery workflow wfID in links: its tenant,
// and its endpoint for a delivery of an event sent to the tenant (fan-out).
func deliveryQuery(wfID string) string {
	if tenant, endpoint, _, ok := herald.ParseFanoutDeliveryID(wfID); ok {
		return eventQuery(tenant, endpoint)
	}
	tenant, _, _ := herald.ParseDeliveryID(wfID)
	return tenantQuery(tenant)
}

// eventQuery is the query naming a tenant's event and, for an event sent to the tenant,
// its delivery to endpoint.
func eventQuery(tenant, endpoint string) string {
	if endpoint == "" {
		return tenantQuery(tenant)
	}
	return "?" + url.Values{"tenant": {tenant}, "endpoint": {endpoint}}.Encode()
}

// attemptView is one attempt on a delivery's timeline.
type attemptView struct {
	Round, Number int
	At            string
	OK            bool
	Result        string
	Latency       string
	RetryAfter    string
	Next          string
	Snippet       string
	// Status is the response's status line ("503 Service Unavailable"), or "" without one.
	Status string
	// Recorded is set when the attempt recorded its headers (histories from before did not).
	Recorded        bool
	RequestHeaders  []herald.Header
	ResponseHeaders []herald.Header
	HeadersCut      bool
	URL             string
	Error           string
	// Transformed is what the endpoint's transformation sent, or why it cancelled.
	Transformed *herald.Transformed
}

// timelineItem is one step of a delivery's timeline.
type timelineItem struct {
	At, What string
	// Kind is created, attempt-ok, attempt-failed, wait, replay, delivered or dead.
	Kind string
}

// eventView is a delivery as its page shows it.
type eventView struct {
	ID, EndpointID, Type string
	// TenantQuery is "?tenant=T" for another tenant than the default, for links.
	TenantQuery string
	CreatedAt   string
	State       string
	Round       int
	Dropped     int
	Attempts    []attemptView
	When        string
	// Ordering is the event's ordering key and what it waits on or holds (empty without a key).
	Ordering    string
	TemporalURL string
	CanReplay   bool
	// CanCancel: the delivery waits (scheduled, for a retry, for its endpoint) or is a
	// dead letter, and a cancel would stop it.
	CanCancel bool
	// Payload is the event's data, indented; PayloadNote says why it is missing or cut.
	Payload     string
	PayloadNote string
	Timeline    []timelineItem
}

// maxShownPayload is how much of an event's data its page shows.
const maxShownPayload = 64 << 10

// payload is an event's data for its page, indented when it is JSON, and a note when it
// is cut.
func payload(data []byte) (string, string) {
	var buf bytes.Buffer
	if json.Indent(&buf, data, "", "  ") != nil {
		buf.Reset()
		buf.Write(data)
	}
	if buf.Len() > maxShownPayload {
		return strings.ToValidUTF8(string(buf.Bytes()[:maxShownPayload]), ""), fmt.Sprintf("The data is %d bytes; its first %d are shown.", buf.Len(), maxShownPayload)
	}
	return buf.String(), ""
}

// timeline lists what happened to a delivery, in order: its creation, each round's
// replay, each attempt and the wait after it, and how it ended.
func (s *Server) timeline(st herald.Status) []timelineItem {
	out := []timelineItem{{At: s.stamp(st.Event.CreatedAt), What: "Event created", Kind: "created"}}
	round := 0
	for _, a := range st.Attempts {
		if a.Round > round {
			round = a.Round
			out = append(out, timelineItem{At: s.stamp(a.Result.StartedAt), What: fmt.Sprintf("Replayed: round %d starts again at attempt 1", a.Round+1), Kind: "replay"})
		}
		kind := "attempt-failed"
		if a.Result.Delivered() {
			kind = "attempt-ok"
		}
		what := fmt.Sprintf("Round %d · attempt %d → %s", a.Round+1, a.Number, a.Result.Summary())
		if d := a.Result.Duration; d > 0 {
			what += " in " + shortDuration(d.Std())
		}
		out = append(out, timelineItem{At: s.stamp(a.Result.StartedAt), What: what, Kind: kind})
		if n := a.Next; n != nil && n.Retry {
			out = append(out, timelineItem{At: s.stamp(a.Result.StartedAt.Add(a.Result.Duration.Std())), What: fmt.Sprintf("Waiting %s for the retry at %s", shortDuration(n.Delay.Std()), s.stamp(n.At)), Kind: "wait"})
		}
	}
	if st.Round > round {
		out = append(out, timelineItem{At: "–", What: fmt.Sprintf("Replayed: round %d, no attempt yet", st.Round+1), Kind: "replay"})
	}
	switch {
	case st.State == herald.StateDelivered && !st.DeliveredAt.IsZero():
		out = append(out, timelineItem{At: s.stamp(st.DeliveredAt), What: "Delivered", Kind: "delivered"})
	case st.State == herald.StateDeadLetter:
		out = append(out, timelineItem{At: s.stamp(st.DeadAt), What: "Dead letter: parked until " + s.stamp(st.ExpiresAt) + " unless replayed", Kind: "dead"})
	case st.State == herald.StateExpired:
		out = append(out, timelineItem{At: s.stamp(st.ExpiresAt), What: "Expired: the dead letter was not replayed in time", Kind: "dead"})
	case st.State == herald.StateScheduled && !st.DeliverAt.IsZero():
		out = append(out, timelineItem{At: s.stamp(st.DeliverAt), What: "Scheduled: the first attempt goes then", Kind: "wait"})
	case st.State == herald.StateCancelled && st.Cancelled != nil:
		out = append(out, timelineItem{At: s.stamp(st.Cancelled.At), What: "Cancelled" + cancelledWhy(st.Cancelled), Kind: "dead"})
	case st.Waiting != nil:
		out = append(out, timelineItem{At: s.stamp(st.Waiting.Since), What: "Held back: " + st.Waiting.Reason, Kind: "wait"})
	}
	return out
}

// pathEvent returns the tenant and status of the event the request's path names, if p may
// see it (eventFor).
// The "endpoint" query parameter names the endpoint of a delivery of an event sent to the
// tenant (fan-out).
func (s *Server) pathEvent(ctx context.Context, r *http.Request, p principal) (string, starter.Report, error) {
	tenant, err := eventTenant(p, r)
	if err != nil {
		return "", starter.Report{}, err
	}
	rep, err := s.eventFor(ctx, p, tenant, r.URL.Query().Get("endpoint"), r.PathValue("id"))
	return tenant, rep, err
}

// pathDelivery is pathEvent for the pages of one delivery, which it names: an event sent
// to the tenant, named without an endpoint, is not found.
func (s *Server) pathDelivery(ctx context.Context, r *http.Request, p principal) (starter.Ref, herald.Status, error) {
	tenant, rep, err := s.pathEvent(ctx, r, p)
	ref := starter.Ref{Tenant: tenant, EventID: r.PathValue("id"), Endpoint: r.URL.Query().Get("endpoint")}
	if err == nil && rep.Fanout != nil {
		err = notFoundFor("event", ref.EventID)
	}
	return ref, rep.Status, err
}

func (s *Server) eventPage(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	ref, st, err := s.pathDelivery(ctx, r, p)
	if err != nil {
		return err
	}
	tenant, id, fanout := ref.Tenant, ref.EventID, ref.Endpoint
	wfID := herald.DeliveryID(tenant, id)
	if fanout != "" {
		wfID = herald.FanoutDeliveryID(tenant, fanout, id)
	}
	v := s.newView(p, "Event "+id)
	v.Nav = "events"
	v.Flash = flash(r)
	ev := eventView{
		ID: st.Event.ID, TenantQuery: eventQuery(tenant, fanout), EndpointID: st.Event.EndpointID, Type: st.Event.Type, CreatedAt: s.stamp(st.Event.CreatedAt),
		State: string(st.State), Round: st.Round, Dropped: st.Dropped,
		CanReplay: st.State == herald.StateDeadLetter || st.State == herald.StateDelivered || st.State == herald.StateExpired || st.State == herald.StateSkipped || st.State == herald.StateCancelled,
		CanCancel: herald.CancelRefusal(st.State) == "" && st.State != herald.StateAttempting && st.State != herald.StateWaitingKey && st.Busy == nil,
	}
	switch {
	case st.Busy != nil:
		ev.When = fmt.Sprintf("an attempt in flight since %s; its attempts show once it ends", s.stamp(st.Busy.Since))
	case st.State == herald.StateWaitingKey && st.Waiting != nil:
		ev.When = fmt.Sprintf("since %s: %s", s.stamp(st.Waiting.Since), st.Waiting.Reason)
	case st.Waiting != nil:
		ev.When = fmt.Sprintf("held back by the endpoint since %s: %s", s.stamp(st.Waiting.Since), st.Waiting.Reason)
	case !st.NextAttemptAt.IsZero() && st.State != herald.StateDelivered:
		ev.When = "next attempt at " + s.stamp(st.NextAttemptAt)
	case st.State == herald.StateDelivered && !st.DeliveredAt.IsZero():
		ev.When = "delivered at " + s.stamp(st.DeliveredAt)
	case st.State == herald.StateDeadLetter:
		ev.When = fmt.Sprintf("dead letter since %s; expires %s unless replayed", s.stamp(st.DeadAt), s.stamp(st.ExpiresAt))
	case st.State == herald.StateSkipped:
		ev.When = "skipped, no request made"
	case st.State == herald.StateScheduled && !st.DeliverAt.IsZero():
		ev.When = "scheduled: the first attempt goes at " + s.stamp(st.DeliverAt)
	case st.State == herald.StateCancelled && st.Cancelled != nil:
		ev.When = cancelledText(s.stamp(st.Cancelled.At), st.Cancelled)
	}
	if st.Reason != "" {
		ev.When += " (" + st.Reason + ")"
	}
	ev.Ordering = st.Ordering.Text()
	if p.operator() && s.opts.TemporalUI != "" {
		ev.TemporalURL = s.opts.TemporalUI + "/namespaces/" + url.PathEscape(s.opts.Namespace) + "/workflows/" + url.PathEscape(wfID)
	}
	for _, a := range st.Attempts {
		res := a.Result
		av := attemptView{Round: a.Round + 1, Number: a.Number, At: s.stamp(res.StartedAt), OK: res.Delivered(), Result: res.Summary(),
			Latency: shortDuration(res.Duration.Std()), RetryAfter: "–", Next: "–", Snippet: res.Snippet,
			Recorded: res.RequestHeaders != nil, RequestHeaders: res.RequestHeaders, ResponseHeaders: res.ResponseHeaders, Transformed: res.Transformed,
			HeadersCut: res.ResponseHeadersCut, URL: res.URL, Error: res.Error}
		if res.StatusCode != 0 {
			av.Status = fmt.Sprintf("%d %s", res.StatusCode, http.StatusText(res.StatusCode))
		}
		if res.RetryAfterHeader != "" {
			d := res.RetryAfter()
			av.RetryAfter = fmt.Sprintf("%q: %s", res.RetryAfterHeader, d.Reason)
		}
		if n := a.Next; n != nil {
			if n.Retry {
				av.Next = fmt.Sprintf("retry at %s (after %s, from the %s)", s.stamp(n.At), shortDuration(n.Delay.Std()), strings.ReplaceAll(n.Source, "_", "-"))
			} else {
				av.Next = "no retry: the ladder is exhausted"
			}
		}
		ev.Attempts = append(ev.Attempts, av)
	}
	ev.Timeline = s.timeline(st)
	if r.URL.Query().Get("fragment") == "" && st.Busy == nil {
		// The payload does not change: read it for the whole page, not for each refresh.
		// A delivery busy with an attempt answers once it ends: not worth the wait.
		if e, err := s.opts.Starter.EventOf(ctx, tenant, fanout, id); err != nil {
			ev.PayloadNote = "The payload could not be read: " + cleanMessage(err.Error())
		} else {
			ev.Payload, ev.PayloadNote = payload(e.Data)
		}
	} else if st.Busy != nil {
		ev.PayloadNote = "The payload shows once the attempt in flight ends."
	}
	v.Event = ev
	s.render(w, r, http.StatusOK, "event.html", v)
	return nil
}

// replayForm replays the delivery the path names, and goes back to the page the form was
// on (its "back" field) with the replay flashed.
func (s *Server) replayForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	ref, st, err := s.pathDelivery(ctx, r, p)
	if err != nil {
		return err
	}
	if err := s.mayReplay(ctx, p, starter.Report{Status: st}); err != nil {
		return err
	}
	if _, err := s.opts.Starter.Replay(ctx, ref); err != nil {
		return err
	}
	tenant, id, fanout := ref.Tenant, ref.EventID, ref.Endpoint
	back := safeNext(r.PostFormValue("back"), "/events/"+url.PathEscape(id)+eventQuery(tenant, fanout))
	q := url.Values{"done": {"replayed"}, "event": {id}}
	if tenantQuery(tenant) != "" || fanout != "" {
		q.Set("tenant", tenant)
	}
	if fanout != "" && !strings.HasPrefix(back, "/endpoints/") {
		q.Set("endpoint", fanout)
	}
	http.Redirect(w, r, withQuery(back, q), http.StatusSeeOther)
	return nil
}
