package server

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// eventSearch is a search of the event list as the request gives it.
type eventSearch struct {
	Type, State, Endpoint, Tenant, EventID, Since, Until string
	Limit                                                int
	cursor                                               []byte
}

// timeLayouts are the forms since and until are read in: RFC 3339, and what a browser's
// datetime-local input sends (read in the dashboard's time zone).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"}

func (s *Server) parseTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, v, s.opts.Location); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %s %q is not a time: use RFC 3339 (2026-05-01T12:00:00Z) or 2026-05-01T12:00", starter.ErrInvalid, name, v)
}

// readEventSearch reads the search from a request's query.
func readEventSearch(q url.Values) (eventSearch, error) {
	es := eventSearch{
		Type: strings.TrimSpace(q.Get("type")), State: q.Get("state"), Endpoint: strings.TrimSpace(q.Get("endpoint")),
		Tenant: strings.TrimSpace(q.Get("tenant")), EventID: strings.TrimSpace(q.Get("event")),
		Since: q.Get("since"), Until: q.Get("until"),
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > starter.MaxEventPage {
			return es, fmt.Errorf("%w: limit %q: give a number from 1 to %d", starter.ErrInvalid, v, starter.MaxEventPage)
		}
		es.Limit = n
	}
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || len(b) == 0 {
			return es, fmt.Errorf("%w: cursor %q is not one this server gave: start from the first page (leave cursor out)", starter.ErrInvalid, c)
		}
		es.cursor = b
	}
	return es, nil
}

// The dashboard's way back through the pages of a search: the back parameter holds the
// cursors of the pages before the current one (the first page has none), joined by
// backSep. Visibility cursors only go forward, so Previous takes the last of them.
const (
	backSep = "."
	// backUnknown says the trail was dropped (too long, or not one this server gave):
	// the page shows no Previous link, only First.
	backUnknown = "-"
	// maxBackTrail bounds the trail carried in links (about 200 pages of cursors).
	maxBackTrail = 32 << 10
)

// readBack reads the back parameter: the cursors of the pages before the current one,
// and whether the way back is known (an absent trail is: the page before is the first).
func readBack(q url.Values) ([]string, bool) {
	v := q.Get("back")
	if v == "" {
		return nil, true
	}
	if v == backUnknown {
		return nil, false
	}
	back := strings.Split(v, backSep)
	for _, c := range back {
		if b, err := base64.RawURLEncoding.DecodeString(c); err != nil || len(b) == 0 {
			return nil, false
		}
	}
	return back, true
}

// pageLinks are the links of a page of a paged list: First is the list without a cursor,
// Prev the page before (empty on the first page, and when the way back is not known),
// Next the page after (empty on the last).
type pageLinks struct{ First, Prev, Next string }

// pagerLinks are the links of the page of list path that request r shows: q is the
// list's query without its cursor, paged says r shows a page past the first, and next is
// the cursor of the page after it ("" on the last). The way back travels in the back
// parameter (readBack).
func pagerLinks(path string, q url.Values, r *http.Request, paged bool, next string) pageLinks {
	at := func(q url.Values) string {
		if len(q) == 0 {
			return path
		}
		return path + "?" + q.Encode()
	}
	l := pageLinks{First: at(q)}
	back, known := readBack(r.URL.Query())
	if paged && known {
		l.Prev = l.First
		if n := len(back); n > 0 {
			pq := maps.Clone(q)
			pq.Set("cursor", back[n-1])
			if n > 1 {
				pq.Set("back", strings.Join(back[:n-1], backSep))
			}
			l.Prev = at(pq)
		}
	}
	if next != "" {
		nq := maps.Clone(q)
		nq.Set("cursor", next)
		if paged {
			// The way back: the cursors of the pages before this one, and this one's.
			if trail := strings.Join(append(back, r.URL.Query().Get("cursor")), backSep); known && len(trail) <= maxBackTrail {
				nq.Set("back", trail)
			} else {
				nq.Set("back", backUnknown)
			}
		}
		l.Next = at(nq)
	}
	return l
}

// query is the search as a URL query (without the cursor), for links.
func (es eventSearch) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"type": es.Type, "state": es.State, "endpoint": es.Endpoint, "tenant": es.Tenant,
		"event": es.EventID, "since": es.Since, "until": es.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if es.Limit > 0 {
		q.Set("limit", strconv.Itoa(es.Limit))
	}
	return q
}

// filter turns the search into the filter of the deliveries p may see. none is set when p
// may see no delivery at all (an endpoint filter naming another tenant's endpoint). Every
// value from the request is checked against its grammar first (herald.EventFilter.Validate):
// a value that breaks it is a 400 naming the filter. A tenant's search (a tenant token, or
// an operator's tenant filter) selects by HeraldTenant, the tenant that sent the delivery.
func (s *Server) filter(ctx context.Context, p principal, es eventSearch) (f herald.EventFilter, none bool, err error) {
	if f.Since, err = s.parseTime("since", es.Since); err != nil {
		return f, false, err
	}
	if f.Until, err = s.parseTime("until", es.Until); err != nil {
		return f, false, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return f, false, fmt.Errorf("%w: until (%s) is before since (%s): swap them", starter.ErrInvalid, es.Until, es.Since)
	}
	f.Type, f.State, f.EventID = es.Type, herald.State(es.State), es.EventID
	tenant := es.Tenant
	if tenant != "" {
		f.Tenant = tenant
	}
	if es.Endpoint != "" {
		f.Endpoints = []string{es.Endpoint}
	}
	if err := f.Validate(); err != nil {
		return f, false, fmt.Errorf("%w: %v", starter.ErrInvalid, err)
	}
	if !p.operator() {
		if tenant != "" && tenant != p.token.Tenant {
			return f, false, fmt.Errorf("%w: your token sees only tenant %s: leave tenant out", errForbidden, p.token.Tenant)
		}
		tenant = p.token.Tenant
	}
	f.Tenant, f.Endpoints = tenant, nil
	if p.endpoint != "" && es.Endpoint == "" {
		es.Endpoint = p.endpoint // a session scoped to one endpoint (a portal link) sees its deliveries only
	}
	if es.Endpoint != "" {
		e, err := s.endpointFor(ctx, p, es.Endpoint)
		if err != nil {
			return f, false, err
		}
		if tenant != "" && herald.TenantOrDefault(e.Tenant) != tenant {
			return f, true, nil // the endpoint is another tenant's: nothing matches both
		}
		f.Endpoints = []string{es.Endpoint}
		f.Tenants = []string{herald.TenantOrDefault(e.Tenant)}
		return f, false, f.Validate()
	}
	if tenant != "" {
		f.Tenants = []string{tenant}
		return f, false, f.Validate()
	}
	if f.EventID == "" {
		return f, false, nil // an operator, every tenant
	}
	// An operator, every tenant: a delivery carries its event id in HeraldEventId (since
	// 0.2.0 also one sent to an endpoint by id, and an operational one); one sent so before
	// 0.2.0 is found by its workflow id here in the default and operational tenants, in
	// another tenant by that tenant's search. No listing of endpoints or tenants.
	f.Tenants = []string{herald.DefaultTenant, herald.OpsTenant}
	return f, false, f.Validate()
}

// searchEvents runs the search for p: one page and the cursor of the next ("" on the last).
func (s *Server) searchEvents(ctx context.Context, p principal, es eventSearch) ([]starter.ListedEvent, string, error) {
	var cursor []byte
	if es.cursor != nil {
		var err error
		if cursor, err = s.openCursor(p, eventCursorKind, es.cursor); err != nil {
			return nil, "", err
		}
	}
	f, none, err := s.filter(ctx, p, es)
	if err != nil || none {
		return nil, "", err
	}
	page, err := s.opts.Starter.ListEvents(ctx, f, cursor, es.Limit)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(page.Next) > 0 {
		sealed, err := s.sealCursor(p, eventCursorKind, page.Next)
		if err != nil {
			return nil, "", err
		}
		next = base64.RawURLEncoding.EncodeToString(sealed)
	}
	return page.Events, next, nil
}

// Cursors of paged lists (event search, endpoint listing) are bound to the scope they were
// issued for. The cursor a client sees is a MAC and the visibility store's page token (for
// endpoints, the starter's cursor): the MAC (HMAC-SHA256 with the tokens file's session
// key, cut to cursorMACLen bytes) covers the token, the kind of list (with an endpoint
// listing's tenant and state) and the principal's scope (operator; or tenant, and the one
// endpoint of a portal session). A cursor is honoured only for the same list and scope: an
// operator's is refused from a tenant token, one tenant's from another, one of the event
// search for the endpoint listing, and one made up is refused before the store sees it.
const cursorMACLen = 16

// eventCursorKind is what an event search's cursor is bound to besides the scope.
const eventCursorKind = "event-cursor"

// cursorScope is what a cursor issued to p is bound to.
func cursorScope(p principal) string {
	if p.operator() {
		return "operator"
	}
	return "tenant:" + p.token.Tenant + "/endpoint:" + p.endpoint
}

// cursorKey is the key cursors are sealed with: the tokens file's session key, written
// on first use.
func (s *Server) cursorKey() ([]byte, error) {
	key := s.opts.Tokens.sessionKey()
	if len(key) == 0 {
		if err := s.opts.Tokens.update(func(*tokensFile) error { return nil }); err != nil {
			return nil, fmt.Errorf("list cursor: %w", err)
		}
		key = s.opts.Tokens.sessionKey()
	}
	return key, nil
}

// sealCursor binds a page token of a list of kind to p's scope.
func (s *Server) sealCursor(p principal, kind string, token []byte) ([]byte, error) {
	key, err := s.cursorKey()
	if err != nil {
		return nil, err
	}
	return append(mac(key, kind, cursorScope(p), string(token))[:cursorMACLen:cursorMACLen], token...), nil
}

// openCursor returns the page token of a cursor sealed for a list of kind and p's scope,
// or an error (400) for any other cursor.
func (s *Server) openCursor(p principal, kind string, cursor []byte) ([]byte, error) {
	key, err := s.cursorKey()
	if err != nil {
		return nil, err
	}
	if len(cursor) > cursorMACLen {
		sum, token := cursor[:cursorMACLen], cursor[cursorMACLen:]
		if hmac.Equal(sum, mac(key, kind, cursorScope(p), string(token))[:cursorMACLen]) {
			return token, nil
		}
	}
	return nil, fmt.Errorf("%w: cursor is not one this server gave you for this list: start from the first page (leave cursor out)", starter.ErrInvalid)
}

// eventList is the body of GET /v1/events.
type eventList struct {
	Events []starter.ListedEvent `json:"events"`
	// NextCursor is the cursor of the next page; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

func (s *Server) apiListEvents(ctx context.Context, _ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	es, err := readEventSearch(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	evs, next, err := s.searchEvents(ctx, p, es)
	if err != nil {
		return 0, nil, err
	}
	if evs == nil {
		evs = []starter.ListedEvent{}
	}
	return http.StatusOK, eventList{Events: evs, NextCursor: next}, nil
}

// eventRow is one row of the event list page.
type eventRow struct {
	EventID, Link, Tenant, EndpointID, Type, State, StateLabel, SentAt, ClosedAt string
}

// eventsView is the event list page.
type eventsView struct {
	Search     eventSearch
	States     []stateOption
	Rows       []eventRow
	NextURL    string
	FirstURL   string
	PrevURL    string // empty on the first page, and when the way back is not known
	Paged      bool   // this is not the first page
	ShowTenant bool
	Filtered   bool
}

// stateOption is one choice of the state filter.
type stateOption struct{ Value, Label string }

func (s *Server) eventsPage(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	v := s.newView(p, "Events")
	v.Nav = "events"
	v.Refresh = 0
	es, err := readEventSearch(r.URL.Query())
	if es.Limit == 0 {
		es.Limit = starter.DefaultEventPage
	}
	ev := eventsView{Search: es, ShowTenant: p.operator(), Paged: es.cursor != nil}
	for _, st := range herald.EventStates {
		ev.States = append(ev.States, stateOption{string(st), stateLabel(string(st))})
	}
	q := es.query()
	ev.Filtered = len(q) > 0 && !(len(q) == 1 && q.Has("limit"))
	var evs []starter.ListedEvent
	next := ""
	if err == nil {
		evs, next, err = s.searchEvents(ctx, p, es)
	}
	if err != nil {
		if code := errStatus(err); code != http.StatusBadRequest && code != http.StatusNotFound && code != http.StatusForbidden {
			return err
		}
		v.Error = cleanMessage(err.Error())
	}
	for _, e := range evs {
		ev.Rows = append(ev.Rows, eventRow{
			EventID: e.EventID, Link: "/events/" + url.PathEscape(e.EventID) + deliveryQuery(e.WorkflowID),
			Tenant: e.Tenant, EndpointID: e.EndpointID, Type: e.Type, State: string(e.State), StateLabel: stateLabel(string(e.State)),
			SentAt: s.stamp(e.SentAt), ClosedAt: s.stamp(e.ClosedAt),
		})
	}
	links := pagerLinks("/events", q, r, es.cursor != nil, next)
	ev.FirstURL, ev.PrevURL, ev.NextURL = links.First, links.Prev, links.Next
	v.Events = ev
	s.render(w, r, http.StatusOK, "events.html", v)
	return nil
}

// stateLabel is a delivery or circuit state in words: "dead_letter" is "Dead letter".
func stateLabel(st string) string {
	switch st {
	case "open":
		return "Circuit open"
	case "half_open":
		return "Half-open (probing)"
	case "closed":
		return "Closed"
	case "waiting_retry":
		return "Waiting to retry"
	case "waiting_endpoint":
		return "Waiting for the endpoint"
	case "waiting_key":
		return "Waiting for a key"
	case "":
		return "–"
	}
	s := strings.ReplaceAll(st, "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// favicon answers browsers that ask for /favicon.ico (pages link the SVG in /static).
func (s *Server) favicon(w http.ResponseWriter, r *http.Request) {
	b, err := staticFS.ReadFile("static/favicon.svg")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "max-age=86400")
	_, _ = w.Write(b)
}

// pageSizes are the choices of the event list's page size, with current among them.
func pageSizes(current int) []int {
	sizes := []int{10, 25, 50, 100}
	if current > 0 && !slices.Contains(sizes, current) {
		sizes = append(sizes, current)
		slices.Sort(sizes)
	}
	return sizes
}
