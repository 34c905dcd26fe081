package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
)

// pages are the dashboard's templates, each parsed with the layout.
var pages = func() map[string]*template.Template {
	funcs := template.FuncMap{"pathEscape": url.PathEscape, "stateLabel": stateLabel,
		"pageSizes": pageSizes}
	m := map[string]*template.Template{}
	for _, name := range []string{"signin.html", "endpoints.html", "endpoint.html", "event.html", "error.html", "events.html",
		"register.html", "settings.html", "secret.html", "portal.html"} {
		m[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name))
	}
	return m
}()

// pageHandler is a dashboard handler for a signed-in principal. Its ctx is the request's,
// bounded by Options.RequestTimeout for calls to Temporal.
type pageHandler func(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error

// page requires a session (redirecting to the sign-in form otherwise) and, for a POST, the
// session's CSRF token.
func (s *Server) page(h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		p, ok := s.session(r)
		if !ok {
			if r.Method == http.MethodGet && r.URL.Query().Get("fragment") == "" {
				http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
				return
			}
			s.errorPage(w, r, principal{}, http.StatusUnauthorized, "Your session has ended: sign in again.")
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			if !s.checkCSRF(r, p) {
				s.errorPage(w, r, p, http.StatusForbidden, "This form did not come from this page (CSRF check failed): go back, reload the page and try again.")
				return
			}
		}
		ctx, cancel := s.ctx(r)
		defer cancel()
		if err := h(ctx, w, r, p); err != nil {
			code := errStatus(err)
			msg := cleanMessage(err.Error())
			switch code {
			case http.StatusServiceUnavailable:
				msg = unavailableMessage
			case http.StatusInternalServerError:
				s.opts.Logger.Error("dashboard request failed", "path", r.URL.Path, "error", err)
				msg = "Something went wrong on our side; the server log has the details."
			}
			s.errorPage(w, r, p, code, msg)
		}
	}
}

// view is what every page template gets.
type view struct {
	Title string
	// Nav is the main navigation's current entry: endpoints or events.
	Nav      string
	Who      string
	Operator bool
	SignedIn bool
	CSRF     string
	Refresh  int // milliseconds; 0: the page does not refresh itself
	Flash    string
	Error    string
	Next     string
	Banners  []string
	// Zone names the time zone of the page's times.
	Zone string

	Endpoints   []endpointView
	Endpoint    endpointView
	Deliveries  []deliveryView
	Chart       chartView
	DeadLetters []deadLetterView
	Event       eventView
	Events      eventsView
	// Self is what the self-service pages show (selfservice.go).
	Self *selfView
	// CanRegister is set when the principal may register endpoints (not a session scoped
	// to one endpoint).
	CanRegister bool
}

func (s *Server) newView(p principal, title string) view {
	v := view{Title: title, Refresh: int(s.opts.RefreshInterval / time.Millisecond), Zone: s.opts.Now().In(s.opts.Location).Format("MST")}
	if p.token.ID != "" {
		v.SignedIn, v.Who, v.Operator, v.CSRF = true, p.who(), p.operator(), s.csrfToken(p)
		v.CanRegister = p.endpoint == ""
	}
	return v
}

// render writes a page, or only its live part when the page polls for it (?fragment=live).
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, v view) {
	t := pages[name]
	which := "layout"
	if r.URL.Query().Get("fragment") == "live" && t.Lookup("live") != nil {
		which = "live"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, which, v); err != nil {
		s.opts.Logger.Error("render page", "page", name, "error", err)
		http.Error(w, "could not render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, p principal, code int, msg string) {
	v := s.newView(p, http.StatusText(code))
	v.Error, v.Refresh = msg, 0
	s.render(w, r, code, "error.html", v)
}

func (s *Server) home(_ context.Context, w http.ResponseWriter, r *http.Request, _ principal) error {
	http.Redirect(w, r, "/endpoints", http.StatusSeeOther)
	return nil
}

// endpointView is an endpoint as the dashboard shows it.
type endpointView struct {
	ID, Tenant, URL string
	State           string // closed, open, half_open
	StateLabel      string // Closed, Circuit open, Half-open (probing)
	// CircuitNote says since when the circuit is in its state and when it probes next, in
	// the banner's clock times (empty while closed).
	CircuitNote   string
	InFlight, Cap int
	Queue         int
	Attempts      int
	Failures      int
	// AttemptRate is the share of attempts that succeeded (Counters).
	AttemptRate string
	// SuccessRate is the share of finished deliveries that were delivered; Delivered and
	// Finished are its counts (see starter.DeliveryCounts). "–" until one finished.
	SuccessRate         string
	Delivered, Finished int
	P50, P99            string
	Honoured            int
	Capped              int
	Ignored             int
	LastOutcome         string
	LastAttemptAt       string
	Ladder              string
	// RateLimit is the endpoint's requests per second (0: no rate limit).
	RateLimit int
	// Disabled is set while the endpoint is disabled; DisabledReason and DisabledAt say
	// why and since when.
	Disabled       bool
	DisabledReason string
	DisabledAt     string
	// Types are the event types the endpoint subscribes to, comma-separated; "*" for all.
	Types string
}

// rateTTL is how long an endpoint's delivery counts are reused.
const rateTTL = 10 * time.Second

// rateCount is an endpoint's delivery counts, as counted at at.
type rateCount struct {
	delivered, failed int
	at                time.Time
}

// percent is n of total as "97.5%".
func percent(n, total int) string {
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))
}

// deliveryRate fills v's success rate by delivery from the visibility store's counts; on
// error it stays "–" (the page still shows everything else).
// The counts are kept for rateTTL, so that pages refreshing themselves do not count again
// every few seconds.
func (s *Server) deliveryRate(ctx context.Context, v *endpointView) {
	now := s.opts.Now()
	s.rates.Lock()
	c, ok := s.rates.m[v.ID]
	s.rates.Unlock()
	if !ok || now.Sub(c.at) >= rateTTL || now.Before(c.at) {
		delivered, failed, err := s.opts.Starter.DeliveryCounts(ctx, v.ID)
		if err != nil {
			s.opts.Logger.Warn("count deliveries", "endpoint", v.ID, "error", err)
			return
		}
		c = rateCount{delivered: delivered, failed: failed, at: now}
		s.rates.Lock()
		if s.rates.m == nil || len(s.rates.m) > 10_000 {
			s.rates.m = map[string]rateCount{}
		}
		s.rates.m[v.ID] = c
		s.rates.Unlock()
	}
	delivered, failed := c.delivered, c.failed
	v.Delivered, v.Finished = delivered, delivered+failed
	if v.Finished > 0 {
		v.SuccessRate = percent(delivered, v.Finished)
	}
}

func circuitState(c policy.CircuitView) string {
	if c.State == "" {
		return string(policy.CircuitClosed)
	}
	return string(c.State)
}

func (s *Server) endpointView(e herald.EndpointState) endpointView {
	st := circuitState(e.Circuit)
	v := endpointView{
		ID: e.ID, Tenant: e.Tenant, URL: e.URL, State: st,
		StateLabel: stateLabel(st),
		InFlight:   e.InFlight, Cap: e.Cap, Queue: e.Queue, RateLimit: e.RateLimit,
		Attempts: e.Counters.Attempts, Failures: e.Counters.Failures,
		SuccessRate: "–", AttemptRate: "–", P50: "–", P99: "–",
		Honoured: e.Counters.RetryAfterHonoured, Capped: e.Counters.RetryAfterCapped, Ignored: e.Counters.RetryAfterIgnored,
		LastOutcome: e.Counters.LastOutcome, LastAttemptAt: s.clock(e.Counters.LastAttemptAt),
	}
	if d := e.Disabled; d != nil {
		v.Disabled, v.DisabledReason, v.DisabledAt = true, d.Reason, s.stamp(d.At)
	}
	if v.Tenant == "" {
		v.Tenant = herald.DefaultTenant
	}
	v.Types = "*"
	if len(e.Types) > 0 {
		v.Types = strings.Join(e.Types, ", ")
	}
	if v.Cap == 0 {
		v.Cap = e.MaxInFlight
	}
	if e.Counters.Attempts > 0 {
		v.AttemptRate = percent(e.Counters.Successes, e.Counters.Attempts)
	}
	c := e.Circuit
	switch st {
	case string(policy.CircuitOpen):
		since := c.TrippedAt
		if since.IsZero() {
			since = c.Since
		}
		v.CircuitNote = "since " + s.clock(since)
		if !c.NextProbeAt.IsZero() {
			v.CircuitNote += " · next probe " + s.clock(c.NextProbeAt)
		}
	case string(policy.CircuitHalfOpen):
		v.CircuitNote = "since " + s.clock(c.Since)
	}
	if e.P99 > 0 {
		v.P50, v.P99 = shortDuration(e.P50.Std()), shortDuration(e.P99.Std())
	}
	if l := e.Overrides.Ladder; l != nil {
		parts := make([]string, len(l.Delays))
		for i, d := range l.Delays {
			parts[i] = d.String()
		}
		v.Ladder = strings.Join(parts, ", ")
		if l.Attempts > 0 {
			v.Ladder += fmt.Sprintf(" (%d attempts)", l.Attempts)
		}
	}
	return v
}

// Banner is the sentence the dashboard (and the CLI) shows across the top while an
// endpoint is disabled or its circuit is not closed, or "" while it is enabled and closed.
// forTenant words it for the endpoint's owner. Times are clock times in loc.
func Banner(e herald.EndpointState, forTenant bool, loc *time.Location) string {
	c := e.Circuit
	st := circuitState(c)
	clock := func(t time.Time) string { return t.In(loc).Format("15:04:05") }
	who := "your endpoint " + e.ID
	if !forTenant {
		who = fmt.Sprintf("endpoint %s (tenant %s)", e.ID, herald.TenantOrDefault(e.Tenant))
	}
	if d := e.Disabled; d != nil {
		return fmt.Sprintf("%s is disabled since %s: %s. Nothing is sent to it until it is enabled again.",
			upperFirst(who), d.At.In(loc).Format("2006-01-02 15:04"), d.Reason)
	}
	switch st {
	case string(policy.CircuitClosed):
		return ""
	case string(policy.CircuitOpen):
		tripped := c.TrippedAt
		if tripped.IsZero() {
			tripped = c.Since
		}
		msg := "Deliveries to " + who + " are paused"
		if !tripped.IsZero() {
			msg += " since " + clock(tripped)
		}
		if !c.Since.IsZero() && c.Since.After(tripped) {
			msg += fmt.Sprintf(" (circuit open); it opened again at %s after %s.", clock(c.Since), tripReason(c.Reason))
		} else {
			msg += fmt.Sprintf(": its circuit opened after %s.", tripReason(c.Reason))
		}
		if !c.NextProbeAt.IsZero() {
			return msg + " The next probe is at " + clock(c.NextProbeAt) + "."
		}
		return msg + " They resume once a probe succeeds."
	case string(policy.CircuitHalfOpen):
		msg := upperFirst(who) + " is half-open (probing)"
		if !c.Since.IsZero() {
			msg += " since " + clock(c.Since)
		}
		return msg + ": a probe succeeded, and deliveries go through one at a time; the circuit closes once they succeed."
	}
	return fmt.Sprintf("%s is in circuit state %s since %s.", upperFirst(who), st, clock(c.Since))
}

// tripReason words a circuit's trip reason ("probe failed") for the banner.
func tripReason(r string) string {
	switch r {
	case "":
		return "repeated failures"
	case "probe failed":
		return "its probe failed"
	case "half-open attempt failed":
		return "an attempt failed while it was probing"
	}
	return r
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (s *Server) banners(p principal, eps []herald.EndpointState) []string {
	var out []string
	for _, e := range eps {
		if b := Banner(e, !p.operator(), s.opts.Location); b != "" {
			out = append(out, b)
		}
	}
	return out
}

func (s *Server) endpointsPage(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	eps, err := s.visibleEndpoints(ctx, p)
	if err != nil {
		return err
	}
	v := s.newView(p, "Endpoints")
	v.Nav = "endpoints"
	v.Banners = s.banners(p, eps)
	for _, e := range eps {
		v.Endpoints = append(v.Endpoints, s.endpointView(e))
	}
	if len(v.Endpoints) <= maxRatedEndpoints {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 6)
		for i := range v.Endpoints {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				s.deliveryRate(ctx, &v.Endpoints[i])
			}()
		}
		wg.Wait()
	}
	s.render(w, r, http.StatusOK, "endpoints.html", v)
	return nil
}

// maxRatedEndpoints is how many endpoints the list page counts deliveries of (three
// visibility counts each); beyond it the list shows "–" and each endpoint's page has it.
const maxRatedEndpoints = 50

// deliveryView is one recent delivery of an endpoint.
type deliveryView struct {
	EventID, Type string
	// TenantQuery is "?tenant=T" for another tenant than the default, for links.
	TenantQuery string
	State       string
	Attempts    int
	Last        string
	SentAt      string
}

// deadLetterView is one dead letter on an endpoint's page.
type deadLetterView struct {
	EventID, Type, SentAt string
	// TenantQuery is "?tenant=T" for another tenant than the default, for links.
	TenantQuery string
}

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

// recentLimit is how many of an endpoint's deliveries its page shows (and charts).
const recentLimit = 40

// recent lists endpoint id's latest deliveries, newest first, with their status (attempts
// included) when the status query answers.
func (s *Server) recent(ctx context.Context, id string) ([]deliveryView, []herald.Status, error) {
	resp, err := s.opts.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query:    herald.Workflows(herald.DeliveryWorkflow).Is(herald.AttrEndpoint, id).String(),
		PageSize: recentLimit * 2,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list deliveries of %s: %w", id, err)
	}
	type row struct {
		wf      string
		started time.Time
		status  string
	}
	var rows []row
	seen := map[string]bool{}
	for _, ex := range resp.GetExecutions() {
		wf := ex.GetExecution().GetWorkflowId()
		if seen[wf] {
			continue // an older run of a redelivered event
		}
		seen[wf] = true
		rows = append(rows, row{wf, ex.GetStartTime().AsTime(), strings.ToLower(strings.TrimPrefix(ex.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].started.After(rows[j].started) })
	if len(rows) > recentLimit {
		rows = rows[:recentLimit]
	}
	out := make([]deliveryView, len(rows))
	sts := make([]herald.Status, len(rows))
	ok := make([]bool, len(rows))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for i, rw := range rows {
		tenant, evID, _ := herald.ParseDeliveryID(rw.wf)
		fanout := "" // the endpoint, for a delivery of an event sent to the tenant
		if _, _, _, ok := herald.ParseFanoutDeliveryID(rw.wf); ok {
			fanout = id
		}
		out[i] = deliveryView{EventID: evID, TenantQuery: deliveryQuery(rw.wf), State: rw.status, SentAt: s.clock(rw.started), Last: "–"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			st, err := s.opts.Starter.DeliveryStatus(ctx, tenant, fanout, evID)
			if err == nil {
				sts[i], ok[i] = st, true
			}
		}()
	}
	wg.Wait()
	var all []herald.Status
	for i := range out {
		if !ok[i] {
			continue
		}
		st := sts[i]
		all = append(all, st)
		out[i].Type, out[i].State, out[i].Attempts = st.Event.Type, string(st.State), len(st.Attempts)+st.Dropped
		if n := len(st.Attempts); n > 0 {
			out[i].Last = st.Attempts[n-1].Result.Summary()
		}
	}
	return out, all, nil
}

func (s *Server) endpointPage(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id := r.PathValue("id")
	e, err := s.endpointFor(ctx, p, id)
	if err != nil {
		return err
	}
	v := s.newView(p, "Endpoint "+id)
	v.Nav = "endpoints"
	v.Endpoint = s.endpointView(e)
	s.deliveryRate(ctx, &v.Endpoint)
	v.Banners = s.banners(p, []herald.EndpointState{e})
	v.Flash = flash(r)
	deliveries, statuses, err := s.recent(ctx, id)
	if err != nil {
		return err
	}
	v.Deliveries = deliveries
	v.Chart = chartOf(statuses, s.opts.Now(), s.opts.Location)
	dls, err := s.opts.Starter.ListDeadLetters(ctx, herald.DeadLetterFilter{EndpointID: id})
	if err != nil {
		return err
	}
	for i := len(dls) - 1; i >= 0; i-- { // newest first
		v.DeadLetters = append(v.DeadLetters, deadLetterView{EventID: dls[i].EventID, TenantQuery: deliveryQuery(dls[i].WorkflowID), Type: dls[i].Type, SentAt: s.clock(dls[i].SentAt)})
	}
	s.render(w, r, http.StatusOK, "endpoint.html", v)
	return nil
}

// flash is the message of a form just submitted, from the redirect's query.
func flash(r *http.Request) string {
	q := r.URL.Query()
	switch q.Get("done") {
	case "replayed":
		return "Replay of " + q.Get("event") + " started: it is being delivered again with the same id."
	case "bulk":
		return "Bulk replay started (" + q.Get("wf") + "): the dead letters are being delivered again."
	case "reset":
		return "The circuit is closed: deliveries resume."
	case "disabled":
		return "The endpoint is disabled: nothing is sent to it until it is enabled."
	case "enabled":
		return "The endpoint is enabled: new deliveries go to it. Replay the dead letters it parked while disabled."
	case "types":
		return "Subscriptions saved: events sent to the tenant from now on reach this endpoint if their type matches."
	}
	return ""
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
	TemporalURL string
	CanReplay   bool
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
	case st.Waiting != nil:
		out = append(out, timelineItem{At: s.stamp(st.Waiting.Since), What: "Held back: " + st.Waiting.Reason, Kind: "wait"})
	}
	return out
}

// pathEvent returns the tenant and status of the event the request's path names, if p may
// see it.
// The "endpoint" query parameter names the endpoint of a delivery of an event sent to the
// tenant (fan-out).
func (s *Server) pathEvent(ctx context.Context, r *http.Request, p principal) (string, herald.Status, error) {
	tenant, err := eventTenant(p, r)
	if err != nil {
		return "", herald.Status{}, err
	}
	st, err := s.eventFor(ctx, p, tenant, r.URL.Query().Get("endpoint"), r.PathValue("id"))
	return tenant, st, err
}

func (s *Server) eventPage(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id := r.PathValue("id")
	tenant, st, err := s.pathEvent(ctx, r, p)
	if err != nil {
		return err
	}
	fanout := r.URL.Query().Get("endpoint")
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
		CanReplay: st.State == herald.StateDeadLetter || st.State == herald.StateDelivered || st.State == herald.StateExpired || st.State == herald.StateSkipped,
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
	}
	if st.Reason != "" {
		ev.When += " (" + st.Reason + ")"
	}
	if p.operator() && s.opts.TemporalUI != "" {
		ev.TemporalURL = s.opts.TemporalUI + "/namespaces/" + url.PathEscape(s.opts.Namespace) + "/workflows/" + url.PathEscape(wfID)
	}
	for _, a := range st.Attempts {
		res := a.Result
		av := attemptView{Round: a.Round + 1, Number: a.Number, At: s.stamp(res.StartedAt), OK: res.Delivered(), Result: res.Summary(),
			Latency: shortDuration(res.Duration.Std()), RetryAfter: "–", Next: "–", Snippet: res.Snippet,
			Recorded: res.RequestHeaders != nil, RequestHeaders: res.RequestHeaders, ResponseHeaders: res.ResponseHeaders,
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

func (s *Server) replayForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id := r.PathValue("id")
	tenant, _, err := s.pathEvent(ctx, r, p)
	if err != nil {
		return err
	}
	fanout := r.URL.Query().Get("endpoint")
	if fanout != "" {
		_, err = s.opts.Starter.ReplayEvent(ctx, tenant, id, fanout)
	} else {
		err = s.opts.Starter.ReplayOf(ctx, tenant, id)
	}
	if err != nil {
		return err
	}
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

// sinceChoices are the "Replay all since …" choices of an endpoint's page.
var sinceChoices = map[string]time.Duration{"1h": time.Hour, "6h": 6 * time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "all": 0}

func (s *Server) bulkReplayForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id := r.PathValue("id")
	if _, err := s.endpointFor(ctx, p, id); err != nil {
		return err
	}
	d, ok := sinceChoices[r.PostFormValue("since")]
	if !ok {
		return fmt.Errorf("%w: choose how far back to replay: 1h, 6h, 24h, 7d or all", starter.ErrInvalid)
	}
	f := herald.DeadLetterFilter{EndpointID: id}
	if d > 0 {
		f.Since = s.opts.Now().Add(-d)
	}
	wf, err := s.opts.Starter.BulkReplay(ctx, herald.BulkReplayInput{Filter: f})
	if err != nil {
		return err
	}
	http.Redirect(w, r, withQuery("/endpoints/"+url.PathEscape(id), url.Values{"done": {"bulk"}, "wf": {wf}}), http.StatusSeeOther)
	return nil
}

func (s *Server) resetForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	return s.endpointForm(ctx, w, r, p, "reset", s.opts.Starter.ResetCircuit)
}

func (s *Server) disableForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		reason = "disabled from the dashboard"
	}
	return s.endpointForm(ctx, w, r, p, "disabled", func(ctx context.Context, id string) (herald.EndpointState, error) {
		return s.opts.Starter.DisableEndpoint(ctx, id, reason)
	})
}

func (s *Server) enableForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	return s.endpointForm(ctx, w, r, p, "enabled", s.opts.Starter.EnableEndpoint)
}

// endpointForm runs act on the endpoint of the form's path, which p must be allowed to see,
// and goes back to the endpoint's page, flashing done (see flash).
func (s *Server) endpointForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal, done string,
	act func(ctx context.Context, id string) (herald.EndpointState, error)) error {
	id := r.PathValue("id")
	if _, err := s.endpointFor(ctx, p, id); err != nil {
		return err
	}
	if _, err := act(ctx, id); err != nil {
		return err
	}
	http.Redirect(w, r, withQuery(formBack(r, id), url.Values{"done": {done}}), http.StatusSeeOther)
	return nil
}

// typesForm changes the event types an endpoint subscribes to. Tenants may change their
// own endpoints' subscriptions, and nothing else of them.
func (s *Server) typesForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id := r.PathValue("id")
	if _, err := s.endpointFor(ctx, p, id); err != nil {
		return err
	}
	types := splitTypes(r.PostFormValue("types"))
	if _, err := s.opts.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, Types: types}); err != nil {
		return err
	}
	http.Redirect(w, r, withQuery(formBack(r, id), url.Values{"done": {"types"}}), http.StatusSeeOther)
	return nil
}

func withQuery(path string, q url.Values) string {
	if strings.Contains(path, "?") {
		path = path[:strings.Index(path, "?")]
	}
	return path + "?" + q.Encode()
}

// clock is a time of day on the dashboard ("12:03:04"), or "–".
func (s *Server) clock(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.In(s.opts.Location).Format("15:04:05")
}

// stamp is a date and time on the dashboard.
func (s *Server) stamp(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.In(s.opts.Location).Format("2006-01-02 15:04:05 MST")
}

// shortDuration rounds d for people: 12ms, 1.2s, 3m0s.
func shortDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
