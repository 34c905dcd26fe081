// Package testkit starts a whole Herald stack inside the process, for tests and benchmarks:
// the embedded Temporal server (in memory unless told otherwise, on free ports), a Herald
// worker allowed to dial loopback, and a starter.
package testkit

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

// Quiet is a logger that drops everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Loopback is the address policy of test workers: receivers listen on loopback.
var Loopback = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

// Options configure Start; zero values take test defaults.
type Options struct {
	// Server configures the embedded Temporal server; its UI is off unless UIPort is set,
	// and Herald's search attributes are always registered.
	Server devserver.Options
	// Keys, when set, encrypt every payload (as in production).
	Keys *codec.Keyring
	// Worker configures the worker; Net defaults to Loopback, RenewInterval to 200ms,
	// StatsInterval to 1s (tests read counters soon after the attempts).
	Worker worker.Options
	// Client, when set, adjusts the client options before dialing (e.g. a metrics handler).
	Client func(*client.Options)
}

// Stack is a running Herald stack.
type Stack struct {
	Server  *devserver.Server
	Client  client.Client
	Worker  *worker.Worker
	Starter *starter.Client
}

// Start starts a stack; Stop it when done.
func Start(ctx context.Context, o Options) (*Stack, error) {
	if o.Server.UIPort == 0 {
		o.Server.UIPort = -1
	}
	if o.Server.Logger == nil {
		o.Server.Logger = Quiet
	}
	o.Server.SearchAttributes = herald.SearchAttributeTypes()
	srv, err := devserver.Start(ctx, o.Server)
	if err != nil {
		return nil, err
	}
	copts := client.Options{
		HostPort: srv.FrontendAddress(), Namespace: srv.Namespace(), Logger: sdklog.NewStructuredLogger(Quiet),
		DataConverter: codec.DataConverter(o.Keys), FailureConverter: codec.FailureConverter(o.Keys),
		Identity: codec.Identity("", o.Keys), ConnectionOptions: srv.Connection(),
	}
	if o.Client != nil {
		o.Client(&copts)
	}
	c, err := client.DialContext(ctx, copts)
	if err != nil {
		srv.Stop()
		return nil, err
	}
	return startWorker(c, srv, o.Keys, o.Worker)
}

// startWorker starts a worker with wo on c and returns the stack; on an error it closes c
// and stops srv (nil: none).
func startWorker(c client.Client, srv *devserver.Server, keys *codec.Keyring, wo worker.Options) (*Stack, error) {
	o := Options{Keys: keys, Worker: wo}
	stopAll := func() {
		c.Close()
		if srv != nil {
			srv.Stop()
		}
	}
	if o.Worker.Net.Allow == nil {
		o.Worker.Net = Loopback
	}
	if o.Worker.StatsInterval == 0 {
		o.Worker.StatsInterval = time.Second
	}
	if o.Worker.RenewInterval == 0 {
		o.Worker.RenewInterval = 200 * time.Millisecond
	}
	if o.Worker.Logger == nil {
		o.Worker.Logger = Quiet
	}
	w, err := worker.New(c, o.Worker)
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		stopAll()
		return nil, err
	}
	so := starter.Options{TaskQueue: o.Worker.TaskQueue, EagerStart: true, DataConverter: codec.DataConverter(o.Keys),
		OnEndpointRead: w.OfferAdmission}
	if o.Keys != nil {
		so.PayloadKeyID = o.Keys.ActiveKeyID()
	}
	return &Stack{Server: srv, Client: c, Worker: w, Starter: starter.New(c, so)}, nil
}

// Connect is Start against an external Temporal at address, in namespace: no server of its
// own (Stack.Server is nil).
func Connect(ctx context.Context, address, namespace string, keys *codec.Keyring, wo worker.Options) (*Stack, error) {
	c, err := client.DialContext(ctx, client.Options{
		HostPort: address, Namespace: namespace, Logger: sdklog.NewStructuredLogger(Quiet),
		DataConverter: codec.DataConverter(keys), FailureConverter: codec.FailureConverter(keys),
		Identity: codec.Identity("", keys),
	})
	if err != nil {
		return nil, err
	}
	return startWorker(c, nil, keys, wo)
}

// Stop stops the worker, the client and the server.
func (s *Stack) Stop() {
	s.Worker.Stop()
	s.Client.Close()
	if s.Server != nil {
		s.Server.Stop()
	}
}
