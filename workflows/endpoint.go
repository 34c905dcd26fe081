package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
)

// Limits of an endpoint workflow run.
const (
	// endpointContinueAsNewEvents: past this many history events the run continues as new.
	endpointContinueAsNewEvents = 4000
	// unregisteredLifetime is how long a started but never registered endpoint workflow
	// waits for its first put (e.g. after a put was rejected) before it closes.
	unregisteredLifetime = time.Minute
)

// EndpointWorkflow is the per-endpoint workflow, the source of truth for one endpoint's
// configuration, circuit, leased permits and queue of waiting deliveries. Net is the worker's SSRF policy, used to refuse URLs whose
// host is a literal forbidden address at registration.
type EndpointWorkflow struct {
	Net netguard.Policy
	// Recovery is the ladder on which an endpoint disabled for failing is probed; the
	// zero value is policy.DefaultRecoveryLadder. A run keeps the ladder it started
	// probing with.
	Recovery policy.RecoveryLadder
}

// Run is the endpoint workflow's function.
func (w *EndpointWorkflow) Run(ctx workflow.Context, in herald.EndpointInput) error {
	e := &endpointRun{net: w.Net, in: in, ladder: w.Recovery}
	if e.in.Since.IsZero() {
		e.in.Since = workflow.Now(ctx)
	}
	if err := workflow.SetQueryHandler(ctx, herald.QueryEndpointConfig, e.config); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, herald.QueryEndpointState, func() (herald.EndpointState, error) {
		return e.view(workflow.Now(ctx)), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, herald.QueryAdmission, func() (herald.AdmissionView, error) {
		return e.admission(workflow.Now(ctx))
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdatePutEndpoint, e.put,
		workflow.UpdateHandlerOptions{Validator: e.validate}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateIndex, func(ctx workflow.Context) error {
		publishSubscription(ctx, *e.in.Endpoint)
		return nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context) error {
		_, err := e.config()
		return err
	}}); err != nil {
		return err
	}
	e.takeCounts(ctx)
	return e.runLimiter(ctx)
}

// takeCounts adds the attempt counts the endpoint's stats shard hands over
// (herald.SignalCounts) to the endpoint's counters as they come, in a coroutine of its own:
// the main loop does not wake for them and no command follows, so runs of any release
// replay alike. The coroutine waits for the channel rather than receiving from it, so a
// signal stays in the channel until taken, and the last ones are taken (drainCounts) when
// the run continues as new.
func (e *endpointRun) takeCounts(ctx workflow.Context) {
	e.counts = workflow.GetSignalChannel(ctx, herald.SignalCounts)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for workflow.Await(ctx, func() bool { return e.counts.Len() > 0 }) == nil {
			e.drainCounts()
		}
	})
}

// drainCounts adds every count received to the endpoint's counters.
func (e *endpointRun) drainCounts() {
	var c herald.SpilledCounts
	for e.counts.ReceiveAsync(&c) {
		e.in.Counts.Merge(c.Counts)
		e.in.CountsSpill = max(e.in.CountsSpill, c.Spill)
		c = herald.SpilledCounts{}
	}
}

type endpointRun struct {
	net netguard.Policy
	in  herald.EndpointInput
	// dirty is set by every message that may let a waiter go.
	dirty bool
	// waking counts the permit signals sent and not yet acknowledged, and the batches of
	// passes being handed to the worker (wakePasses).
	waking int
	// passUpdatesAsked and passUpdates: whether this run hands its passes out by update,
	// from the worker (versionPassUpdates), asked at its first pass.
	passUpdatesAsked, passUpdates bool
	// emitting counts the operational events being emitted.
	emitting int
	// published is the admission view last written to the memo, encoded.
	published []byte
	// counts are the stats shard's spills (herald.SignalCounts).
	counts workflow.ReceiveChannel
	// ladder is the recovery ladder probing starts with (endpoint_recovery.go).
	ladder policy.RecoveryLadder
	// noRecovery is set in a run that took versionEndpointRecovery's old branch.
	noRecovery bool
	// probing is set while a probe is in flight.
	probing bool
	// passesAsked and passes: whether this run drains its queue with passes (endpoint_drain.go).
	passesAsked, passes bool
	// rateDrainAsked: whether this run asked if its rate-limited queue drains through the
	// gates' shares (endpoint_ratelease.go).
	rateDrainAsked bool
}

// admission answers a gate's snapshot query: the configuration, and what the limiter
// allows (everything, in the moment between the first put and the limiter's creation).
func (e *endpointRun) admission(now time.Time) (herald.AdmissionView, error) {
	ep, err := e.config()
	if err != nil {
		return herald.AdmissionView{}, err
	}
	v := herald.AdmissionView{Endpoint: ep}
	if g := e.in.Limiter; g != nil {
		v.Snapshot = g.Snapshot(now)
	} else {
		v.Snapshot = policy.UnlimitedSnapshot()
	}
	return v, nil
}

func (e *endpointRun) continueAsNew(ctx workflow.Context) bool {
	return historyLong(ctx, endpointContinueAsNewEvents)
}

func (e *endpointRun) config() (herald.Endpoint, error) {
	if e.in.Endpoint == nil {
		return herald.Endpoint{}, fmt.Errorf("endpoint %s: %w", e.in.ID, herald.ErrNoEndpoint)
	}
	return *e.in.Endpoint, nil
}

// view is what the state query shows at now.
func (e *endpointRun) view(now time.Time) herald.EndpointState {
	s := herald.EndpointState{ID: e.in.ID, CountersSince: e.in.Since, Counters: e.in.Counts, CountsSpill: e.in.CountsSpill}
	s.Circuit.State = policy.CircuitClosed
	if g := e.in.Limiter; g != nil {
		s.LimiterView = g.View(now)
	}
	if ep := e.in.Endpoint; ep != nil {
		s.Registered = true
		s.URL, s.SecretHint, s.Overrides, s.Tenant, s.Types = ep.URL, ep.Secret.String(), ep.Overrides, ep.Tenant, ep.Types
		s.Filter, s.Transform = ep.Filter, ep.Transform
		s.Version, s.CreatedAt, s.UpdatedAt = ep.Version, ep.CreatedAt, ep.UpdatedAt
		if ep.PreviousSecret != "" {
			s.Rotating = ep.PreviousUntil
		}
		for _, h := range ep.Headers {
			s.HeaderNames = append(s.HeaderNames, h.Name)
		}
		s.Auth = ep.Auth.View()
	}
	return s
}

// validate refuses a put that would leave the endpoint unusable; a refused update leaves no
// trace in history.
func (e *endpointRun) validate(ctx workflow.Context, req herald.PutEndpointRequest) error {
	if req.ID != e.in.ID {
		return fmt.Errorf("put for endpoint %q sent to endpoint %q", req.ID, e.in.ID)
	}
	if err := herald.ValidatePut(req, e.in.Endpoint != nil, e.net); err != nil {
		return err
	}
	if req.CreateOnly && e.in.Endpoint != nil {
		return fmt.Errorf("endpoint id %s is taken: choose another id", req.ID)
	}
	if req.Overrides != nil {
		// The breaker and cap settings the endpoint would have: this put's on top of its
		// own (a breaker change names only some fields).
		var o herald.Overrides
		if e.in.Endpoint != nil && !req.ClearOverrides {
			o = e.in.Endpoint.Overrides
		}
		o.Merge(*req.Overrides)
		if err := o.Validate(); err != nil {
			return fmt.Errorf("endpoint %s: %w", req.ID, err)
		}
	}
	return nil
}

func (e *endpointRun) put(ctx workflow.Context, req herald.PutEndpointRequest) (herald.PutEndpointResult, error) {
	now := workflow.Now(ctx)
	var res herald.PutEndpointResult
	ep := e.in.Endpoint
	if ep == nil {
		ep = &herald.Endpoint{ID: e.in.ID, CreatedAt: now}
		res.Created = true
	}
	if req.URL != "" {
		ep.URL = req.URL
	}
	if req.Tenant != "" {
		ep.Tenant = req.Tenant
	} else if ep.Tenant == "" {
		ep.Tenant = herald.DefaultTenant
	}
	switch {
	case req.Secret != "":
		ep.Secret, ep.PreviousSecret, ep.PreviousUntil = req.Secret, "", time.Time{}
	case req.RotateTo != "":
		ep.PreviousSecret, ep.PreviousUntil = ep.Secret, now.Add(req.RotateGrace.Std())
		ep.Secret = req.RotateTo
	case ep.Secret == "" && req.DefaultSecret != "":
		ep.Secret = req.DefaultSecret
		res.SecretGenerated = true
	}
	if ep.PreviousSecret != "" && !now.Before(ep.PreviousUntil) {
		ep.PreviousSecret, ep.PreviousUntil = "", time.Time{}
	}
	if req.ClearOverrides {
		ep.Overrides = herald.Overrides{}
	}
	if req.Overrides != nil {
		ep.Overrides.Merge(*req.Overrides)
	}
	if req.Headers != nil {
		ep.Headers = *req.Headers
	}
	if req.Types != nil {
		ep.Types = herald.NormalizeTypes(req.Types)
	}
	if req.ClearAuth {
		ep.Auth = herald.EndpointAuth{}
	}
	if req.Auth != nil {
		ep.Auth = ep.Auth.Merge(*req.Auth)
	}
	if req.Filter != nil {
		ep.Filter = *req.Filter
	}
	if req.Transform != nil {
		ep.Transform = *req.Transform
	}
	ep.Version++
	ep.UpdatedAt = now
	e.in.Endpoint = ep
	publishSubscription(ctx, *ep)
	if e.in.Limiter != nil {
		e.ensureLimiter()
		e.dirty = true
	}
	res.Endpoint = *ep
	if !res.Created {
		// Read-your-writes: a worker's gate uses what it knows of an endpoint for at most
		// policy.MaxConfigAge; once that has passed, every attempt that starts uses this.
		if err := workflow.NewTimerWithOptions(ctx, policy.ConfigSettle, workflow.TimerOptions{
			Summary: "the change reaches every worker",
		}).Get(ctx, nil); err != nil {
			return res, err
		}
	}
	return res, nil
}

// publishSubscription sets the endpoint's HeraldTenant and HeraldSubscriptions to its
// tenant and subscription (herald.SubscriptionTokens), where its tenant's sends look for
// it, unless they hold them already (the put that started the workflow set them).
func publishSubscription(ctx workflow.Context, ep herald.Endpoint) {
	tenant := herald.TenantOrDefault(ep.Tenant)
	tokens := herald.SubscriptionTokens(tenant, ep.Types)
	sa := workflow.GetTypedSearchAttributes(ctx)
	heldTenant, _ := sa.GetKeyword(herald.AttrTenant)
	heldTokens, _ := sa.GetKeywordList(herald.AttrSubscriptions)
	if heldTenant == tenant && slices.Equal(heldTokens, tokens) {
		return
	}
	if workflow.GetVersion(ctx, versionSubscriptionAttrs, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	// Fails only for attributes the namespace lacks: herald namespace setup adds them.
	if err := workflow.UpsertTypedSearchAttributes(ctx, herald.AttrTenant.ValueSet(tenant), herald.AttrSubscriptions.ValueSet(tokens)); err != nil {
		workflow.GetLogger(ctx).Error("subscription not published: sends to the tenant do not find this endpoint; run herald namespace setup", "error", err)
	}
}
