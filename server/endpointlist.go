package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// endpointSearch is a listing of endpoints as the request gives it.
type endpointSearch struct {
	Tenant, State string
	Limit         int
	cursor        []byte
}

// readEndpointSearch reads a listing of endpoints from a request's query: tenant and state
// checked against their grammar (herald.EndpointFilter.Validate), limit 1 to
// starter.MaxEndpointPage, and a cursor in the form this server gives (its seal is checked
// when the listing runs).
func readEndpointSearch(q url.Values) (endpointSearch, error) {
	es := endpointSearch{Tenant: strings.TrimSpace(q.Get("tenant")), State: strings.TrimSpace(q.Get("state"))}
	if err := (herald.EndpointFilter{Tenant: es.Tenant, State: es.State}).Validate(); err != nil {
		return es, fmt.Errorf("%w: %v", starter.ErrInvalid, err)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > starter.MaxEndpointPage {
			return es, fmt.Errorf("%w: limit %q: give a number from 1 to %d", starter.ErrInvalid, v, starter.MaxEndpointPage)
		}
		es.Limit = n
	}
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || len(b) <= cursorMACLen {
			return es, fmt.Errorf("%w: cursor %q is not one this server gave: start from the first page (leave cursor out)", starter.ErrInvalid, c)
		}
		es.cursor = b
	}
	return es, nil
}

// query is the listing as a URL query (without the cursor), for links.
func (es endpointSearch) query() url.Values {
	q := url.Values{}
	if es.Tenant != "" {
		q.Set("tenant", es.Tenant)
	}
	if es.State != "" {
		q.Set("state", es.State)
	}
	if es.Limit > 0 {
		q.Set("limit", strconv.Itoa(es.Limit))
	}
	return q
}

// endpointCursorKind is what an endpoint listing's cursor is bound to besides the
// principal's scope: the listing's tenant and state (values of their grammar, so
// without the separator), so that a cursor of one tenant's listing is refused for
// another's, an operator's too.
func endpointCursorKind(f herald.EndpointFilter) string {
	return "endpoint-cursor\x00" + f.Tenant + "\x00" + f.State
}

// listEndpoints lists one page of the endpoints p may see and the cursor of the next (""
// on the last). A tenant token's listing selects its tenant in the visibility store
// (HeraldTenant); an operator's may name a tenant. A session scoped to one endpoint (a
// portal link) lists that endpoint only.
func (s *Server) listEndpoints(ctx context.Context, p principal, es endpointSearch) ([]herald.EndpointState, string, error) {
	f := herald.EndpointFilter{Tenant: es.Tenant, State: es.State}
	if !p.operator() {
		if f.Tenant != "" && f.Tenant != p.token.Tenant {
			return nil, "", fmt.Errorf("%w: your token sees only tenant %s: leave tenant out", errForbidden, p.token.Tenant)
		}
		f.Tenant = p.token.Tenant
	}
	if p.endpoint != "" {
		e, err := s.endpointFor(ctx, p, p.endpoint)
		if errors.Is(err, starter.ErrNotFound) || (err == nil && f.State != "" && !inState(e, f.State)) {
			return nil, "", nil
		}
		if err != nil {
			return nil, "", err
		}
		return []herald.EndpointState{e}, "", nil
	}
	var cursor []byte
	if es.cursor != nil {
		var err error
		if cursor, err = s.openCursor(p, endpointCursorKind(f), es.cursor); err != nil {
			return nil, "", err
		}
	}
	page, err := s.opts.Starter.ListEndpoints(ctx, f, cursor, es.Limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]herald.EndpointState, 0, len(page.Endpoints))
	for _, e := range page.Endpoints {
		if p.canSeeEndpoint(e.Tenant, e.ID) { // selected by tenant already: a second lock
			out = append(out, e)
		}
	}
	next := ""
	if len(page.Next) > 0 {
		sealed, err := s.sealCursor(p, endpointCursorKind(f), page.Next)
		if err != nil {
			return nil, "", err
		}
		next = base64.RawURLEncoding.EncodeToString(sealed)
	}
	return out, next, nil
}

// inState reports whether e is in state, a value of herald.EndpointStates.
func inState(e herald.EndpointState, state string) bool {
	if state == "disabled" {
		return e.Disabled != nil
	}
	return circuitState(e.Circuit) == state
}

// endpointList answers GET /v1/endpoints.
type endpointList struct {
	Endpoints []herald.EndpointState `json:"endpoints"`
	// NextCursor is the cursor of the next page; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

func (s *Server) apiListEndpoints(ctx context.Context, _ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	es, err := readEndpointSearch(r.URL.Query())
	if err != nil {
		return 0, nil, err
	}
	list, next, err := s.listEndpoints(ctx, p, es)
	if err != nil {
		return 0, nil, err
	}
	for i := range list {
		list[i] = forViewer(p, list[i])
	}
	if list == nil {
		list = []herald.EndpointState{}
	}
	return http.StatusOK, endpointList{Endpoints: list, NextCursor: next}, nil
}
