package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
)

// EndpointInput starts (or continues as new) an endpoint workflow.
type EndpointInput struct {
	ID string `json:"id"`
	// Endpoint is nil until the first put registers it.
	Endpoint *activities.Endpoint `json:"endpoint,omitempty"`
	Counters activities.Report    `json:"counters"`
	Since    time.Time            `json:"since,omitempty"`
	// Guard is the circuit breaker, the concurrency cap, the leases and the queue.
	Guard *policy.Guard `json:"guard,omitempty"`
	// Circuit is the circuit state last written to the HeraldCircuit search attribute.
	Circuit policy.CircuitState `json:"circuit,omitempty"`
}

// PutEndpointRequest registers an endpoint or changes it; empty fields keep what is stored.
type PutEndpointRequest struct {
	ID string `json:"id"`
	// URL is required when registering.
	URL string `json:"url,omitempty"`
	// Tenant sets the customer the endpoint belongs to; empty keeps it ("default" for a new endpoint).
	Tenant string `json:"tenant,omitempty"`
	// Secret replaces the signing secret at once, with no grace period.
	Secret signature.Secret `json:"secret,omitempty"`
	// DefaultSecret is used only when the endpoint has no secret yet (a new endpoint).
	DefaultSecret signature.Secret `json:"default_secret,omitempty"`
	// RotateTo makes a new secret current; the old one keeps signing until RotateGrace has passed.
	RotateTo    signature.Secret `json:"rotate_to,omitempty"`
	RotateGrace time.Duration    `json:"rotate_grace,omitempty"`
	// Overrides sets the policy overrides it gives, keeping the others.
	Overrides *activities.Overrides `json:"overrides,omitempty"`
	// ClearOverrides drops every override first, so the worker's defaults apply.
	ClearOverrides bool `json:"clear_overrides,omitempty"`
}

// PutEndpointResult answers a put.
type PutEndpointResult struct {
	Endpoint activities.Endpoint `json:"endpoint"`
	// Created is true when this put registered the endpoint.
	Created bool `json:"created"`
	// SecretGenerated is true when DefaultSecret became the signing secret.
	SecretGenerated bool `json:"secret_generated"`
}

// EndpointState is what the state query shows of an endpoint: no secrets.
type EndpointState struct {
	ID         string               `json:"id"`
	Tenant     string               `json:"tenant,omitempty"`
	Registered bool                 `json:"registered"`
	URL        string               `json:"url,omitempty"`
	SecretHint string               `json:"secret_hint,omitempty"`
	Rotating   time.Time            `json:"previous_secret_until,omitempty"`
	Overrides  activities.Overrides `json:"overrides"`
	Version    int                  `json:"version"`
	CreatedAt  time.Time            `json:"created_at,omitempty"`
	UpdatedAt  time.Time            `json:"updated_at,omitempty"`
	Counters   activities.Report    `json:"counters"`
	// CountersSince is when the counters started.
	CountersSince time.Time `json:"counters_since,omitempty"`

	// Circuit is the circuit breaker's state.
	Circuit CircuitView `json:"circuit"`
	// InFlight is how many permits are out (attempts running or leased to workers).
	InFlight int `json:"in_flight"`
	// Cap is the current concurrency cap; MaxInFlight the configured one (the cap is
	// lower while the endpoint is slow).
	Cap         int `json:"cap"`
	MaxInFlight int `json:"max_in_flight"`
	// Leases are the blocks of permits held by workers and waiting deliveries.
	Leases []LeaseView `json:"leases,omitempty"`
	// Queue is how many deliveries wait for a permit or for the circuit to close.
	Queue int `json:"queue"`
	// P50 and P99 are attempt latencies over the recent window.
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	// Error is set in a listing when the endpoint's state could not be read.
	Error string `json:"error,omitempty"`
}

// CircuitView is the circuit breaker as people see it.
type CircuitView struct {
	// State is closed, open or half_open.
	State string `json:"state"`
	// Since is when the circuit entered State.
	Since time.Time `json:"since,omitempty"`
	// Reason says what tripped it, e.g. "5 consecutive failures".
	Reason string `json:"reason,omitempty"`
	// TrippedAt is when it last opened.
	TrippedAt time.Time `json:"tripped_at,omitempty"`
	// NextProbeAt is when the next probe may go (open only).
	NextProbeAt time.Time `json:"next_probe_at,omitempty"`
}

// LeaseView is one lease of permits.
type LeaseView struct {
	Holder  string    `json:"holder"`
	Permits int       `json:"permits"`
	Expires time.Time `json:"expires"`
}

// Limits of an endpoint workflow run.
const (
	// endpointContinueAsNewEvents: past this many history events the run continues as new.
	endpointContinueAsNewEvents = 4000
	// unregisteredLifetime is how long a started but never registered endpoint workflow
	// waits for its first put (e.g. after a put was rejected) before it closes.
	unregisteredLifetime = time.Minute
)

// EndpointWorkflow is the per-endpoint workflow, the source of truth for one endpoint's
// configuration and counters. Net is the worker's SSRF policy, used to refuse URLs whose
// host is a literal forbidden address at registration.
type EndpointWorkflow struct {
	Net netguard.Policy
}

// Run is the endpoint workflow's function.
func (w *EndpointWorkflow) Run(ctx workflow.Context, in EndpointInput) error {
	e := &endpointRun{net: w.Net, in: in}
	if e.in.Since.IsZero() {
		e.in.Since = workflow.Now(ctx)
	}
	if err := workflow.SetQueryHandler(ctx, QueryEndpointConfig, e.config); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryEndpointState, func() (EndpointState, error) {
		return e.view(workflow.Now(ctx)), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, activities.QueryAdmission, func() (activities.AdmissionView, error) {
		return e.admission(workflow.Now(ctx))
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdatePutEndpoint, e.put,
		workflow.UpdateHandlerOptions{Validator: e.validate}); err != nil {
		return err
	}
	reports := workflow.GetSignalChannel(ctx, SignalEndpointReport)
	if workflow.GetVersion(ctx, versionEndpointGuard, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return e.runCounters(ctx, reports)
	}
	return e.runGuard(ctx, reports)
}

// runCounters is the endpoint workflow before it held the circuit breaker and the
// concurrency gate: configuration and counters only. Kept so that runs started by that
// version replay.
func (e *endpointRun) runCounters(ctx workflow.Context, reports workflow.ReceiveChannel) error {
	drain := func() {
		var r activities.Report
		for reports.ReceiveAsync(&r) {
			e.in.Counters.Merge(r)
			r = activities.Report{}
		}
	}
	for {
		cond := func() bool { return reports.Len() > 0 || e.continueAsNew(ctx) }
		if e.in.Endpoint == nil {
			ok, err := workflow.AwaitWithTimeout(ctx, unregisteredLifetime, func() bool { return e.in.Endpoint != nil || cond() })
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
		} else if err := workflow.Await(ctx, cond); err != nil {
			return err
		}
		drain()
		if e.continueAsNew(ctx) {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			drain()
			return workflow.NewContinueAsNewError(ctx, EndpointWorkflowName, e.in)
		}
	}
}

type endpointRun struct {
	net netguard.Policy
	in  EndpointInput
	// dirty is set by every message that may let a waiter go.
	dirty bool
	// waking counts the permit signals sent and not yet acknowledged.
	waking int
	// published is the admission view last written to the memo, encoded.
	published []byte
}

// admission answers a gate's snapshot query: the configuration, and what the guard
// allows (everything, for a run of the version before the guard).
func (e *endpointRun) admission(now time.Time) (activities.AdmissionView, error) {
	ep, err := e.config()
	if err != nil {
		return activities.AdmissionView{}, err
	}
	v := activities.AdmissionView{Endpoint: ep}
	if g := e.in.Guard; g != nil {
		v.Snapshot = g.Snapshot(now)
	} else {
		v.Snapshot = policy.Snapshot{Circuit: policy.CircuitClosed, Cap: policy.MaxMaxInFlight, Free: policy.MaxMaxInFlight}
	}
	return v, nil
}

func (e *endpointRun) continueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > endpointContinueAsNewEvents
}

func (e *endpointRun) config() (activities.Endpoint, error) {
	if e.in.Endpoint == nil {
		return activities.Endpoint{}, fmt.Errorf("endpoint %s: %w", e.in.ID, activities.ErrNoEndpoint)
	}
	return *e.in.Endpoint, nil
}

// view is what the state query shows at now.
func (e *endpointRun) view(now time.Time) EndpointState {
	s := EndpointState{ID: e.in.ID, Counters: e.in.Counters, CountersSince: e.in.Since}
	s.Circuit.State = string(policy.CircuitClosed)
	if g := e.in.Guard; g != nil {
		v := g.View(now)
		s.Circuit = CircuitView{State: string(v.Circuit), Since: v.Since, Reason: v.Reason, TrippedAt: v.TrippedAt, NextProbeAt: v.NextProbeAt}
		s.InFlight, s.Cap, s.MaxInFlight, s.Queue, s.P50, s.P99 = v.InFlight, v.Cap, v.MaxInFlight, v.Queue, v.P50, v.P99
		for _, l := range v.Leases {
			s.Leases = append(s.Leases, LeaseView{Holder: l.Holder, Permits: l.Permits, Expires: l.Expires})
		}
	}
	if ep := e.in.Endpoint; ep != nil {
		s.Registered = true
		s.URL, s.SecretHint, s.Overrides, s.Tenant = ep.URL, ep.Secret.String(), ep.Overrides, ep.Tenant
		s.Version, s.CreatedAt, s.UpdatedAt = ep.Version, ep.CreatedAt, ep.UpdatedAt
		if ep.PreviousSecret != "" {
			s.Rotating = ep.PreviousUntil
		}
	}
	return s
}

// validate refuses a put that would leave the endpoint unusable; a refused update leaves no
// trace in history.
func (e *endpointRun) validate(ctx workflow.Context, req PutEndpointRequest) error {
	if req.ID != e.in.ID {
		return fmt.Errorf("put for endpoint %q sent to endpoint %q", req.ID, e.in.ID)
	}
	if err := ValidatePut(req, e.in.Endpoint != nil, e.net); err != nil {
		return err
	}
	if req.Overrides != nil {
		// The breaker and cap settings the endpoint would have: this put's on top of its
		// own (a breaker change names only some fields).
		var o activities.Overrides
		if e.in.Endpoint != nil && !req.ClearOverrides {
			o = e.in.Endpoint.Overrides
		}
		o.Merge(*req.Overrides)
		if err := guardConfig(o).Validate(); err != nil {
			return fmt.Errorf("endpoint %s: %w", req.ID, err)
		}
	}
	return nil
}

// ValidatePut checks a put request; registered says whether the endpoint exists already.
func ValidatePut(req PutEndpointRequest, registered bool, net netguard.Policy) error {
	if err := ValidateEndpointID(req.ID); err != nil {
		return err
	}
	if req.Tenant != "" {
		if err := ValidateTenant(req.Tenant); err != nil {
			return err
		}
	}
	if req.URL == "" && !registered {
		return fmt.Errorf("endpoint %s is not registered yet: give its URL", req.ID)
	}
	if len(req.URL) > MaxURLBytes {
		return fmt.Errorf("endpoint %s: the URL is %d bytes long; the limit is %d", req.ID, len(req.URL), MaxURLBytes)
	}
	if req.URL != "" {
		if _, err := net.CheckURL(req.URL); err != nil {
			return fmt.Errorf("endpoint %s: %w", req.ID, err)
		}
	}
	for _, s := range []signature.Secret{req.Secret, req.DefaultSecret, req.RotateTo} {
		if s == "" {
			continue
		}
		if _, err := signature.ParseSecret(string(s)); err != nil {
			return fmt.Errorf("endpoint %s: %w", req.ID, err)
		}
	}
	if req.Secret == "" && req.DefaultSecret == "" && req.RotateTo == "" && !registered {
		return fmt.Errorf("endpoint %s: a new endpoint needs a signing secret", req.ID)
	}
	if req.Secret != "" && req.RotateTo != "" {
		return errors.New("give either a new secret or a secret to rotate to, not both")
	}
	if req.RotateTo != "" && !registered {
		return fmt.Errorf("endpoint %s is not registered yet: there is no secret to rotate", req.ID)
	}
	if err := policy.ValidateGrace(req.RotateGrace); err != nil {
		return fmt.Errorf("endpoint %s: %w", req.ID, err)
	}
	if o := req.Overrides; o != nil {
		if o.Ladder != nil {
			if err := policy.DefaultLadder().Apply(*o.Ladder).Validate(); err != nil {
				return fmt.Errorf("endpoint %s: ladder: %w", req.ID, err)
			}
		}
		if o.RetryAfter != nil {
			if err := o.RetryAfter.Validate(); err != nil {
				return fmt.Errorf("endpoint %s: retry-after: %w", req.ID, err)
			}
		}
		if o.Timeout != 0 && (o.Timeout < time.Second || o.Timeout > MaxAttemptTimeout) {
			return fmt.Errorf("endpoint %s: timeout %s is outside 1s..%s", req.ID, o.Timeout, MaxAttemptTimeout)
		}
		if o.MaxInFlight != 0 && (o.MaxInFlight < policy.MinMaxInFlight || o.MaxInFlight > policy.MaxMaxInFlight) {
			return fmt.Errorf("endpoint %s: max in-flight %d is outside %d..%d (use at least %d, and ask for at most %d)",
				req.ID, o.MaxInFlight, policy.MinMaxInFlight, policy.MaxMaxInFlight, policy.MinMaxInFlight, policy.MaxMaxInFlight)
		}
		if o.Capacity != nil {
			if err := o.Capacity.Validate(); err != nil {
				return fmt.Errorf("endpoint %s: capacity: %w", req.ID, err)
			}
		}
		if o.Retention != 0 {
			if err := policy.ValidateRetention(o.Retention); err != nil {
				return fmt.Errorf("endpoint %s: %w", req.ID, err)
			}
		}
	}
	return nil
}

func (e *endpointRun) put(ctx workflow.Context, req PutEndpointRequest) (PutEndpointResult, error) {
	now := workflow.Now(ctx)
	var res PutEndpointResult
	ep := e.in.Endpoint
	if ep == nil {
		ep = &activities.Endpoint{ID: e.in.ID, CreatedAt: now}
		res.Created = true
	}
	if req.URL != "" {
		ep.URL = req.URL
	}
	if req.Tenant != "" {
		ep.Tenant = req.Tenant
	} else if ep.Tenant == "" {
		ep.Tenant = DefaultTenant
	}
	switch {
	case req.Secret != "":
		ep.Secret, ep.PreviousSecret, ep.PreviousUntil = req.Secret, "", time.Time{}
	case req.RotateTo != "":
		ep.PreviousSecret, ep.PreviousUntil = ep.Secret, now.Add(req.RotateGrace)
		ep.Secret = req.RotateTo
	case ep.Secret == "" && req.DefaultSecret != "":
		ep.Secret = req.DefaultSecret
		res.SecretGenerated = true
	}
	if ep.PreviousSecret != "" && !now.Before(ep.PreviousUntil) {
		ep.PreviousSecret, ep.PreviousUntil = "", time.Time{}
	}
	if req.ClearOverrides {
		ep.Overrides = activities.Overrides{}
	}
	if req.Overrides != nil {
		ep.Overrides.Merge(*req.Overrides)
	}
	ep.Version++
	ep.UpdatedAt = now
	e.in.Endpoint = ep
	if e.in.Guard != nil {
		e.ensureGuard()
		e.dirty = true
	}
	res.Endpoint = *ep
	if !res.Created && workflow.GetVersion(ctx, versionPutSettles, workflow.DefaultVersion, 1) == 1 {
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
