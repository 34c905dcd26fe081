package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// ErrNoEndpoint means the endpoint is not registered.
var ErrNoEndpoint = errors.New("endpoint is not registered")

// Directory resolves endpoint ids to their configuration by querying the endpoint
// workflows, and keeps each answer for a short time so that a burst of attempts to one
// endpoint costs one query. A change of URL or secret reaches attempts within TTL.
type Directory struct {
	client client.Client
	ttl    time.Duration

	mu      sync.Mutex
	entries map[string]*dirEntry
}

type dirEntry struct {
	mu      sync.Mutex
	ep      Endpoint
	err     error
	fetched time.Time
}

// NewDirectory returns a Directory that queries through c and caches answers for ttl
// (0 means always query).
func NewDirectory(c client.Client, ttl time.Duration) *Directory {
	return &Directory{client: c, ttl: ttl, entries: map[string]*dirEntry{}}
}

// Get returns endpoint id's current configuration, or an error wrapping ErrNoEndpoint.
func (d *Directory) Get(ctx context.Context, id string) (Endpoint, error) {
	d.mu.Lock()
	e := d.entries[id]
	if e == nil {
		e = &dirEntry{}
		d.entries[id] = e
	}
	d.mu.Unlock()

	// One query at a time per endpoint; the others wait for its answer.
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.fetched.IsZero() && time.Since(e.fetched) < d.ttl {
		return e.ep, e.err
	}
	ep, err := d.fetch(ctx, id)
	if ctx.Err() != nil {
		return Endpoint{}, ctx.Err()
	}
	e.ep, e.err, e.fetched = ep, err, time.Now()
	return ep, err
}

// Forget drops the cached configuration of endpoint id.
func (d *Directory) Forget(id string) {
	d.mu.Lock()
	delete(d.entries, id)
	d.mu.Unlock()
}

func (d *Directory) fetch(ctx context.Context, id string) (Endpoint, error) {
	v, err := d.client.QueryWorkflow(ctx, EndpointWorkflowID(id), "", QueryEndpointConfig)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return Endpoint{}, fmt.Errorf("endpoint %s: %w: register it with `herald endpoint put %s --url URL`", id, ErrNoEndpoint, id)
		}
		return Endpoint{}, fmt.Errorf("endpoint %s: read configuration: %w", id, err)
	}
	var ep Endpoint
	if err := v.Get(&ep); err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %s: decode configuration: %w", id, err)
	}
	if ep.URL == "" {
		return Endpoint{}, fmt.Errorf("endpoint %s: %w: register it with `herald endpoint put %s --url URL`", id, ErrNoEndpoint, id)
	}
	return ep, nil
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
