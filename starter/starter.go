// Package starter is the Go API producer services and the herald CLI use: send events,
// read a delivery's status, replay dead letters, and register endpoints.
package starter

import (
	"cmp"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/heraldhq/herald"
)

// Event is what a producer sends; see herald.Event.
type Event = herald.Event

// ErrNotFound means the event or endpoint does not exist.
var ErrNotFound = errors.New("not found")

// ErrInvalid marks errors caused by bad input, so callers (the CLI, the HTTP API) can tell
// them from outages.
var ErrInvalid = errors.New("invalid input")

// ErrTooLarge marks event data over herald.MaxDataBytes once compacted. It is an
// ErrInvalid too (errors.Is reports both).
var ErrTooLarge error = tooLarge{}

type tooLarge struct{}

func (tooLarge) Error() string { return "too large" }

func (tooLarge) Is(target error) bool { return target == ErrInvalid }

// ErrConflict means an event id was sent before with another endpoint, type or data.
var ErrConflict = errors.New("conflict")

// Options configure a Client.
type Options struct {
	// TaskQueue Herald's workers poll; default herald.DefaultTaskQueue.
	TaskQueue string
	// EagerStart asks the server to hand new deliveries straight to a worker in this process
	// (effective only when the Temporal client also runs a Herald worker).
	EagerStart bool
	// EndpointCacheTTL is how long Send remembers that an endpoint exists, and its tenant,
	// and which payload keys the workers hold; default 30s.
	EndpointCacheTTL time.Duration
	// EventTypeCacheTTL is how long Send uses the catalog of event types it read (strict
	// types, each type's schema) before reading it again; default DefaultEventTypeCacheTTL.
	// Puts through this client bind its next Send at once.
	EventTypeCacheTTL time.Duration
	// PayloadKeyID is the id of the key this client's data converter encrypts with (empty:
	// plain text). When set, Send refuses it if the workers polling TaskQueue advertise
	// their keys (codec.Identity) and none holds it.
	PayloadKeyID string
	// DataConverter is the client's data converter, to read an earlier event's input back
	// when its id is sent again; nil means the default (plain text) converter.
	DataConverter converter.DataConverter
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// FanoutParallelism bounds the deliveries Publish starts at once, across every Publish
	// call of the client: a burst of starts beyond what the workers take at once only
	// makes every delivery slower. Default 32.
	FanoutParallelism int
	// BulkParallelism bounds the puts PutEndpoints sends at once (each an update-with-start
	// of an endpoint workflow). Default (0 or less) DefaultBulkParallelism.
	BulkParallelism int
	// BeforeFanoutStart, if set, is called before Publish starts each endpoint's delivery,
	// with the endpoint's id: a hook for tests and instrumentation.
	BeforeFanoutStart func(endpointID string)
	// OnFilterRead, if set, is called when a send to a tenant reads an endpoint's filter
	// from the endpoint (its visibility record's memo could not be trusted), with the
	// endpoint's id: a hook for tests and instrumentation.
	OnFilterRead func(endpointID string)
	// OnEndpointRead, if set, is called each time a send reads an endpoint's admission view
	// to accept it (a cold endpoint: not confirmed within EndpointCacheTTL), with the view,
	// the endpoint workflow's run it was read from and when the read was asked (the
	// process's clock). A worker in the same process takes it (worker.Worker.OfferAdmission)
	// so that the delivery's first attempt does not read the endpoint again.
	OnEndpointRead func(endpointID, run string, v herald.AdmissionView, asked time.Time)
}

// DefaultBulkParallelism is how many puts PutEndpoints sends at once unless
// Options.BulkParallelism says otherwise.
const DefaultBulkParallelism = 32

// Client is Herald's producer and operator API over a Temporal client.
type Client struct {
	c    client.Client
	opts Options

	mu         sync.Mutex
	known      map[string]knownEndpoint // endpoint id → its tenant, when last confirmed
	knownCap   int                      // most entries of known (maxKnownEndpoints)
	workerKeys workerKeys
	types      typeCache

	fanout chan struct{} // a slot per fan-out start in progress (Options.FanoutParallelism)

	appendMu  sync.Mutex
	appending map[string]*appendSlots // sequencer id → its appends in flight (appendSlot)
}

// knownEndpoint is what Send remembers of an endpoint.
type knownEndpoint struct {
	tenant string
	seen   time.Time
}

// New returns a Client that talks to Temporal through c.
func New(c client.Client, o Options) *Client {
	o.TaskQueue = cmp.Or(o.TaskQueue, herald.DefaultTaskQueue)
	o.EndpointCacheTTL = cmp.Or(o.EndpointCacheTTL, 30*time.Second)
	o.EventTypeCacheTTL = cmp.Or(o.EventTypeCacheTTL, DefaultEventTypeCacheTTL)
	o.DataConverter = cmp.Or(o.DataConverter, converter.GetDefaultDataConverter())
	o.FanoutParallelism = cmp.Or(o.FanoutParallelism, 32)
	if o.BulkParallelism <= 0 {
		o.BulkParallelism = DefaultBulkParallelism
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Client{c: c, opts: o, known: map[string]knownEndpoint{}, knownCap: maxKnownEndpoints, fanout: make(chan struct{}, o.FanoutParallelism)}
}

// eachAtOnce calls f for every i in [0, n), at most limit at once, and returns when all
// have returned.
func eachAtOnce(n, limit int, f func(i int)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

func keyword(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
