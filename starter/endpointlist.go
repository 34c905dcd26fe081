package starter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/policy"
)

// Limits of a page of ListEndpoints. A page costs one or two visibility reads and, for
// each endpoint on it, a query to its workflow and one to its stats shard, endpointReads
// at a time: its cost is bounded by its size, whatever the size of the installation.
const (
	// DefaultEndpointPage is how many endpoints a page holds unless asked otherwise.
	DefaultEndpointPage = 50
	// MaxEndpointPage is the most a page may hold.
	MaxEndpointPage = 500
	// endpointReads is how many endpoints of a page are asked for their state at once.
	endpointReads = 8
	// endpointReadTimeout bounds the wait for one endpoint's state.
	endpointReadTimeout = 5 * time.Second
	// listingSkew is how long before its first page a listing splits the endpoints it
	// walks first from those it walks last (see ListEndpoints): the split is compared with
	// start times the Temporal server's clock wrote, which may run behind this one.
	listingSkew = time.Minute
)

// EndpointPage is one page of ListEndpoints: Next is the cursor of the next page, empty on
// the last.
type EndpointPage struct {
	Endpoints []herald.EndpointState
	Next      []byte
}

// endpointCursor is where a listing is: the split between its two parts (fixed by its
// first page), the part it is in, and the visibility store's cursor in that part.
type endpointCursor struct {
	Split  time.Time       `json:"split"`
	Recent bool            `json:"recent,omitempty"`
	Token  json.RawMessage `json:"token,omitempty"`
}

// ListEndpoints lists one page of the registered endpoints f selects, from cursor (nil:
// the first page), each with its state as its workflow answers it (an endpoint that does
// not answer, e.g. with no worker polling, is listed with what visibility knows and the
// error). limit is 1 to MaxEndpointPage (0: DefaultEndpointPage). The endpoints are
// selected in the visibility store (a tenant by HeraldTenant): only the endpoints of the
// page are asked anything.
//
// The order is the visibility store's, the endpoint workflows' current runs latest
// started first, in two parts: the runs started before the listing's first page (less
// listingSkew), then those started since, i.e. endpoints registered, or whose workflow
// continued as new, while the listing went on. So every endpoint registered when the
// listing began is listed, whatever continues as new meanwhile; one whose workflow
// continued as new after its page may be listed a second time. A page may hold fewer
// than limit and still have a next one: an endpoint that ended, or moved to another
// tenant since visibility last showed it, is left out.
func (s *Client) ListEndpoints(ctx context.Context, f herald.EndpointFilter, cursor []byte, limit int) (EndpointPage, error) {
	if limit == 0 {
		limit = DefaultEndpointPage
	}
	if limit < 1 || limit > MaxEndpointPage {
		return EndpointPage{}, fmt.Errorf("%w: limit %d is out of range: use 1 to %d", ErrInvalid, limit, MaxEndpointPage)
	}
	if err := f.Validate(); err != nil {
		return EndpointPage{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	at := endpointCursor{Split: s.opts.Now().Add(-listingSkew).UTC()}
	if cursor != nil {
		// Refused here, a cursor the store cannot read is no quick error (see ListEvents).
		at = endpointCursor{}
		if json.Unmarshal(cursor, &at) != nil || at.Split.IsZero() || (len(at.Token) > 0 && !isJSONObject(at.Token)) {
			return EndpointPage{}, fmt.Errorf("%w: the cursor is not one a page of endpoints gave: start from the first page", ErrInvalid)
		}
	}
	listed, next, err := s.listEndpointRecords(ctx, f, at, limit)
	if err != nil {
		return EndpointPage{}, err
	}
	page := EndpointPage{Next: next}
	states, err := s.readEndpoints(ctx, f, listed)
	if err != nil {
		return EndpointPage{}, err
	}
	page.Endpoints = states
	return page, nil
}

// listEndpointRecords reads up to limit endpoints f selects from visibility, from at,
// and returns them as visibility knows them, with the cursor of what follows (nil at the
// end).
func (s *Client) listEndpointRecords(ctx context.Context, f herald.EndpointFilter, at endpointCursor, limit int) ([]herald.EndpointState, []byte, error) {
	var listed []herald.EndpointState
	for {
		q := f.Query()
		if at.Recent {
			q = q.StartedSince(at.Split)
		} else {
			q = q.StartedBefore(at.Split)
		}
		resp, err := s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: q.String(), PageSize: int32(limit - len(listed)), NextPageToken: at.Token,
		})
		if err != nil {
			if len(at.Token) > 0 && strings.Contains(strings.ToLower(err.Error()), "token") {
				return nil, nil, fmt.Errorf("%w: the cursor is not valid for this listing: start from the first page", ErrInvalid)
			}
			return nil, nil, fmt.Errorf("list endpoints: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			id, ok := herald.ParseEndpointWorkflowID(ex.GetExecution().GetWorkflowId())
			if !ok {
				continue
			}
			sa := ex.GetSearchAttributes().GetIndexedFields()
			st := herald.EndpointState{ID: id, Registered: true, Tenant: keyword(sa[herald.AttrTenant.GetName()].GetData())}
			st.Circuit.State = policy.CircuitState(keyword(sa[herald.AttrCircuit.GetName()].GetData()))
			listed = append(listed, st)
		}
		at.Token = resp.GetNextPageToken()
		switch {
		case len(at.Token) == 0 && at.Recent:
			return listed, nil, nil
		case len(at.Token) == 0:
			at.Recent = true // the first part is done: on to the endpoints started since
		case len(resp.GetExecutions()) == 0:
			// A store that ends a part with an empty page: give the caller the cursor.
			next, err := json.Marshal(at)
			return listed, next, err
		}
		if len(listed) >= limit {
			next, err := json.Marshal(at)
			return listed, next, err
		}
	}
}

// readEndpoints asks each listed endpoint for its state, endpointReads at a time, and
// returns them in order, leaving out those no longer registered or no longer in f's
// tenant. One that does not answer is kept with what visibility knows and the error.
func (s *Client) readEndpoints(ctx context.Context, f herald.EndpointFilter, listed []herald.EndpointState) ([]herald.EndpointState, error) {
	out := make([]herald.EndpointState, len(listed))
	keep := make([]bool, len(listed))
	errs := make([]error, len(listed))
	eachAtOnce(len(listed), endpointReads, func(i int) {
		qctx, cancel := context.WithTimeout(ctx, endpointReadTimeout)
		defer cancel()
		st, err := s.GetEndpoint(qctx, listed[i].ID)
		switch {
		case errors.Is(err, ErrNotFound):
			return // ended since visibility listed it
		case err != nil:
			st = listed[i]
			st.Error = err.Error()
			errs[i] = err
		}
		if f.Tenant != "" && herald.TenantOrDefault(st.Tenant) != f.Tenant {
			return // moved to another tenant since visibility showed it
		}
		out[i], keep[i] = st, true
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// Keys that cannot read the endpoints' answers are this client's problem, not the
	// endpoints': listing them all with an error each would look like empty endpoints.
	for _, err := range errs {
		if codec.IsUndecryptable(err) {
			return nil, fmt.Errorf("list endpoints: %w", err)
		}
	}
	kept := make([]herald.EndpointState, 0, len(out))
	for i, st := range out {
		if keep[i] {
			kept = append(kept, st)
		}
	}
	return kept, nil
}
