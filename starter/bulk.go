package starter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/heraldhq/herald"
)

// MaxPutEndpoints is the most puts one PutEndpoints call takes: its results are held in
// memory until it returns, and an HTTP request carries one call. Split larger inputs (the
// CLI does).
const MaxPutEndpoints = 10_000

// indexBatch is how many registered endpoints PutEndpoints waits for at once until the
// tenants' sends find them (awaitIndexed), and indexParallelism how many such waits run at
// once, while registration goes on.
const (
	indexBatch       = 500
	indexParallelism = 4
)

// BulkOutcome is what became of one put of PutEndpoints.
type BulkOutcome string

// The outcomes of a put of PutEndpoints.
const (
	// BulkCreated: the put registered the endpoint.
	BulkCreated BulkOutcome = "created"
	// BulkUpdated: the put changed a registered endpoint.
	BulkUpdated BulkOutcome = "updated"
	// BulkUnchanged: the endpoint was registered already with everything the put gives,
	// and was left alone (putting the same lines again changes nothing).
	BulkUnchanged BulkOutcome = "unchanged"
	// BulkFailed: the put was refused or failed (BulkResult.Err says why).
	BulkFailed BulkOutcome = "failed"
)

// BulkResult is the result of one put of PutEndpoints.
type BulkResult struct {
	Outcome BulkOutcome
	// Result is the put's result; for BulkUnchanged, the endpoint as stored. For a put that
	// failed once the endpoint was saved (sends might not find it yet), the saved endpoint.
	Result herald.PutEndpointResult
	// Err is set when Outcome is BulkFailed, with the text a single put would give.
	Err error
}

// PutEndpoints registers or changes many endpoints: each of reqs as PutEndpoint would,
// Options.BulkParallelism at a time, then waits until the tenants' sends find them in
// batches (so a send right after PutEndpoints returns reaches every endpoint it registered).
// It returns one result per request, in order: a refused or failed request is that
// request's result, never the others'. The reserved operational endpoint id is refused as
// PutEndpoint refuses it, and an id given twice is refused on its second request.
//
// It is idempotent: a request that would change nothing on a registered endpoint (every
// field it gives equal to what is stored) is not sent, and reported BulkUnchanged, so
// putting the same requests again changes nothing. progress, if not nil, is called with
// the number of requests done so far each time some finish (from one goroutine at a time).
// More than MaxPutEndpoints requests are refused as a whole (ErrInvalid).
func (s *Client) PutEndpoints(ctx context.Context, reqs []herald.PutEndpointRequest, progress func(done int)) ([]BulkResult, error) {
	if len(reqs) > MaxPutEndpoints {
		return nil, fmt.Errorf("%w: %d endpoint puts in one call; the limit is %d: split them", ErrInvalid, len(reqs), MaxPutEndpoints)
	}
	out := make([]BulkResult, len(reqs))
	var mu sync.Mutex
	done := 0
	finished := func(k int) {
		mu.Lock()
		defer mu.Unlock()
		done += k
		if progress != nil && k > 0 {
			progress(done)
		}
	}
	fail := func(i int, err error) { out[i] = BulkResult{Outcome: BulkFailed, Result: out[i].Result, Err: err} }

	// Refused before anything is asked: as a single put would refuse them.
	var todo []int
	first := make(map[string]int, len(reqs))
	for i, req := range reqs {
		if j, dup := first[req.ID]; dup {
			fail(i, fmt.Errorf("%w: endpoint %s is put by request %d of this call already: give each endpoint once per call", ErrInvalid, req.ID, j+1))
			continue
		}
		first[req.ID] = i
		if err := checkPut(req); err != nil {
			fail(i, err)
			continue
		}
		todo = append(todo, i)
	}
	finished(len(reqs) - len(todo))
	// Registered ones go to the index waits in batches while the others register.
	registered := make(chan int, s.opts.BulkParallelism)
	go func() {
		defer close(registered)
		eachAtOnce(len(todo), s.opts.BulkParallelism, func(k int) {
			i := todo[k]
			if err := ctx.Err(); err != nil {
				fail(i, fmt.Errorf("put endpoint %s: not sent: %w", reqs[i].ID, err))
				finished(1)
				return
			}
			// Only an endpoint that exists can be left unchanged. One this client saw lately
			// is checked first (a describe); any other is put only if that starts its
			// workflow, and checked when it turns out to exist: a new endpoint costs no
			// read before its put.
			known := s.isKnown(reqs[i].ID)
			if known {
				if ep, ok := s.unchanged(ctx, reqs[i]); ok {
					out[i] = BulkResult{Outcome: BulkUnchanged, Result: herald.PutEndpointResult{Endpoint: ep}}
					registered <- i
					return
				}
			}
			res, err := s.register(ctx, reqs[i], !known)
			if errors.Is(err, errRegistered) {
				if ep, ok := s.unchanged(ctx, reqs[i]); ok {
					out[i] = BulkResult{Outcome: BulkUnchanged, Result: herald.PutEndpointResult{Endpoint: ep}}
					registered <- i
					return
				}
				res, err = s.register(ctx, reqs[i], false)
			}
			if err != nil {
				fail(i, err)
				finished(1)
				return
			}
			out[i] = BulkResult{Outcome: BulkUpdated, Result: res}
			if res.Created {
				out[i].Outcome = BulkCreated
			}
			registered <- i
		})
	}()
	var waits sync.WaitGroup
	slots := make(chan struct{}, indexParallelism)
	await := func(batch []int) {
		slots <- struct{}{}
		waits.Add(1)
		go func() {
			defer waits.Done()
			defer func() { <-slots }()
			eps := make([]herald.Endpoint, len(batch))
			for k, i := range batch {
				eps[k] = out[i].Result.Endpoint
			}
			if err := s.awaitIndexed(ctx, eps...); err != nil {
				for _, i := range batch {
					ep := out[i].Result.Endpoint
					fail(i, fmt.Errorf("put endpoint %s: the endpoint was saved (version %d), but sends to tenant %s may not find it yet: %w; run the same put again",
						ep.ID, ep.Version, herald.TenantOrDefault(ep.Tenant), err))
				}
			}
			finished(len(batch))
		}()
	}
	var batch []int
	for i := range registered {
		batch = append(batch, i)
		if len(batch) == indexBatch {
			await(batch)
			batch = nil
		}
	}
	if len(batch) > 0 {
		await(batch)
	}
	waits.Wait()
	return out, nil
}

// isKnown reports whether this client registered or saw endpoint id lately
// (Options.EndpointCacheTTL).
func (s *Client) isKnown(id string) bool {
	s.mu.Lock()
	k, ok := s.known[id]
	s.mu.Unlock()
	return ok && s.opts.Now().Sub(k.seen) < s.opts.EndpointCacheTTL
}

// checkPut refuses a request PutEndpoint would refuse before asking anything: the
// reserved operational endpoint, and bad input (the same text as a single put's).
func checkPut(req herald.PutEndpointRequest) error {
	if err := refuseReserved(req.ID); err != nil {
		return err
	}
	if err := herald.ValidatePut(req, true, anyAddress); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// unchanged reports whether req would change nothing on its endpoint as its workflow
// published it (a describe: no worker is asked), and returns the endpoint. Anything it
// cannot tell (not registered, not published, a put that is never a no-op) is a change:
// the put is sent.
func (s *Client) unchanged(ctx context.Context, req herald.PutEndpointRequest) (herald.Endpoint, bool) {
	if req.CreateOnly || req.RotateTo != "" {
		return herald.Endpoint{}, false
	}
	v, err := herald.ReadAdmission(ctx, s.c, req.ID)
	if err != nil {
		return herald.Endpoint{}, false
	}
	ep := v.Endpoint
	if ep.ID != req.ID || ep.Version == 0 || !sameAsStored(ep, req) {
		return herald.Endpoint{}, false
	}
	s.remember(ep.ID, ep.Tenant)
	return ep, true
}

// sameAuth reports whether req leaves ep's authentication as it is.
func sameAuth(ep herald.Endpoint, req herald.PutEndpointRequest) bool {
	if req.Auth == nil && !req.ClearAuth {
		return true
	}
	a := ep.Auth
	if req.ClearAuth {
		a = herald.EndpointAuth{}
	}
	if req.Auth != nil {
		a = a.Merge(*req.Auth)
	}
	was, err1 := json.Marshal(ep.Auth)
	now, err2 := json.Marshal(a)
	return err1 == nil && err2 == nil && string(was) == string(now)
}

// sameAsStored reports whether every field req gives equals ep's: the put would leave ep
// as it is.
func sameAsStored(ep herald.Endpoint, req herald.PutEndpointRequest) bool {
	switch {
	case req.URL != "" && req.URL != ep.URL,
		req.Tenant != "" && req.Tenant != herald.TenantOrDefault(ep.Tenant),
		req.Secret != "" && (req.Secret != ep.Secret || ep.PreviousSecret != ""),
		ep.Secret == "",
		req.Headers != nil && !slices.Equal(*req.Headers, ep.Headers),
		req.Types != nil && !slices.Equal(herald.NormalizeTypes(req.Types), ep.Types),
		!sameAuth(ep, req),
		req.Filter != nil && *req.Filter != ep.Filter,
		req.Transform != nil && *req.Transform != ep.Transform:
		return false
	}
	if req.Overrides == nil && !req.ClearOverrides {
		return true
	}
	var o herald.Overrides
	if !req.ClearOverrides {
		o = ep.Overrides
	}
	if req.Overrides != nil {
		o.Merge(*req.Overrides)
	}
	was, err1 := json.Marshal(ep.Overrides)
	now, err2 := json.Marshal(o)
	return err1 == nil && err2 == nil && string(was) == string(now)
}
