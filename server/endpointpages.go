package server

import (
	"context"
	"fmt"
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
	// Auth is the kind of authentication to the receiver (herald.AuthView.Kind), never
	// its secrets.
	Auth string
	// Filter and Transform are the endpoint's CEL expressions (empty: none).
	Filter, Transform string
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
// maxRateCounts bounds the delivery counts kept for rateTTL; past it they are dropped and
// counted again as pages ask.
const maxRateCounts = 10_000

func (s *Server) deliveryRate(ctx context.Context, v *endpointView) {
	now := s.opts.Now()
	key := herald.TenantOrDefault(v.Tenant) + "/" + v.ID // counts are the tenant's (an endpoint may move)
	s.rates.Lock()
	c, ok := s.rates.m[key]
	s.rates.Unlock()
	if !ok || now.Sub(c.at) >= rateTTL || now.Before(c.at) {
		delivered, failed, err := s.opts.Starter.DeliveryCounts(ctx, v.ID, v.Tenant)
		if err != nil {
			s.opts.Logger.Warn("count deliveries", "endpoint", v.ID, "error", err)
			return
		}
		c = rateCount{delivered: delivered, failed: failed, at: now}
		s.rates.Lock()
		if s.rates.m == nil || len(s.rates.m) > maxRateCounts {
			s.rates.m = map[string]rateCount{}
		}
		s.rates.m[key] = c
		s.rates.Unlock()
	}
	delivered, failed := c.delivered, c.failed
	v.Delivered, v.Finished = delivered, delivered+failed
	if v.Finished > 0 {
		v.SuccessRate = percent(delivered, v.Finished)
	}
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
	v.Auth = e.Auth.Kind()
	v.Filter, v.Transform = e.Filter, e.Transform
	v.Types = "*"
	if len(e.Types) > 0 {
		v.Types = strings.Join(e.Types, ", ")
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

// endpointsView is the endpoint list page's listing: its filter and the links to the
// pages around it.
type endpointsView struct {
	Search                     endpointSearch
	States                     []stateOption
	FirstURL, PrevURL, NextURL string
	Paged, Filtered            bool
}

// endpointsPage shows one page of the endpoints p may see (starter.DefaultEndpointPage
// unless limit says otherwise), with the banners and delivery rates of that page's
// endpoints only: its cost is bounded by the page, whatever the number of endpoints.
func (s *Server) endpointsPage(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	es, err := readEndpointSearch(r.URL.Query())
	if err != nil {
		return err
	}
	if es.Limit == 0 {
		es.Limit = starter.DefaultEndpointPage
	}
	eps, next, err := s.listEndpoints(ctx, p, es)
	if err != nil {
		return err
	}
	v := s.newView(p, "Endpoints")
	v.Nav = "endpoints"
	v.Banners = s.banners(p, eps)
	for _, e := range eps {
		v.Endpoints = append(v.Endpoints, s.endpointView(e))
	}
	q := es.query()
	links := pagerLinks("/endpoints", q, r, es.cursor != nil, next)
	lv := endpointsView{Search: es, FirstURL: links.First, PrevURL: links.Prev, NextURL: links.Next, Paged: es.cursor != nil,
		Filtered: es.Tenant != "" || es.State != ""}
	for _, st := range herald.EndpointStates {
		lv.States = append(lv.States, stateOption{st, stateLabel(st)})
	}
	v.Listing = lv
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

// maxRatedEndpoints is how many endpoints a page of the list counts deliveries of (three
// visibility counts each); a larger page (limit) shows "–" and each endpoint's page has it.
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

// recentLimit is how many of an endpoint's deliveries its page shows (and charts).
const recentLimit = 40

// recent lists endpoint id's latest deliveries, newest first, with their status (attempts
// included) when the status query answers.
func (s *Server) recent(ctx context.Context, id, tenant string) ([]deliveryView, []herald.Status, error) {
	resp, err := s.opts.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query:    herald.Workflows(herald.DeliveryWorkflow).Is(herald.AttrEndpoint, id).Is(herald.AttrTenant, herald.TenantOrDefault(tenant)).String(),
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
		_, evID, _ := herald.ParseDeliveryID(rw.wf)
		out[i] = deliveryView{EventID: evID, TenantQuery: deliveryQuery(rw.wf), State: rw.status, SentAt: s.clock(rw.started), Last: "–"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rep, err := s.opts.Starter.Status(ctx, starter.Ref{WorkflowID: rw.wf})
			if err == nil {
				sts[i], ok[i] = rep.Status, true
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
	v, _, err := s.endpointPageView(ctx, r, p)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "endpoint.html", v)
	return nil
}

// endpointPageView is the endpoint page of the request's path, and the endpoint.
func (s *Server) endpointPageView(ctx context.Context, r *http.Request, p principal) (view, herald.EndpointState, error) {
	id, e, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
		return view{}, e, err
	}
	v := s.newView(p, "Endpoint "+id)
	v.Nav = "endpoints"
	v.Endpoint = s.endpointView(e)
	s.deliveryRate(ctx, &v.Endpoint)
	v.Banners = s.banners(p, []herald.EndpointState{e})
	v.Flash = flash(r)
	deliveries, statuses, err := s.recent(ctx, id, e.Tenant)
	if err != nil {
		return view{}, e, err
	}
	v.Deliveries = deliveries
	v.Chart = chartOf(statuses, s.opts.Now(), s.opts.Location)
	if v.DeadLetters, err = s.deadLetterRows(ctx, id, e.Tenant); err != nil {
		return view{}, e, err
	}
	for _, dl := range v.DeadLetters {
		if dl.HoldsKey != "" {
			v.BlockedKeys = append(v.BlockedKeys, dl)
		}
	}
	return v, e, nil
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
	id, _, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
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
	id, _, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
		return err
	}
	types := splitTypes(r.PostFormValue("types"))
	if _, err := s.opts.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, Types: types}); err != nil {
		return err
	}
	http.Redirect(w, r, withQuery(formBack(r, id), url.Values{"done": {"types"}}), http.StatusSeeOther)
	return nil
}
