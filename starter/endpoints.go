package starter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
)

// PutEndpoint registers an endpoint or changes it, in one round trip that starts the
// endpoint workflow if needed (update-with-start). A new endpoint without a secret gets a
// generated one (PutEndpointResult.SecretGenerated; show it to the user once). Bad input
// is refused before anything is started; the worker refuses URLs its SSRF policy forbids.
func (s *Client) PutEndpoint(ctx context.Context, req herald.PutEndpointRequest) (herald.PutEndpointResult, error) {
	if err := refuseReserved(req.ID); err != nil {
		return herald.PutEndpointResult{}, err
	}
	return s.putEndpoint(ctx, req)
}

// refuseReserved refuses a put of the reserved operational endpoint id through the puts of
// ordinary endpoints.
func refuseReserved(id string) error {
	if id == herald.OpsEndpointID {
		return fmt.Errorf("%w: endpoint id %s is reserved for the operational endpoint: register it with herald ops-endpoint put", ErrInvalid, id)
	}
	return nil
}

// PutOpsEndpoint registers the operational endpoint, or changes it: the endpoint that
// receives Herald's operational events (herald.OpsEvent: endpoint.disabled,
// endpoint.circuit_opened, endpoint.circuit_closed, delivery.dead_lettered,
// delivery.recovered), signed like any delivery. req's ID and tenant are set to the
// reserved herald.OpsEndpointID and herald.OpsTenant.
func (s *Client) PutOpsEndpoint(ctx context.Context, req herald.PutEndpointRequest) (herald.PutEndpointResult, error) {
	req.ID, req.Tenant = herald.OpsEndpointID, herald.OpsTenant
	return s.putEndpoint(ctx, req)
}

func (s *Client) putEndpoint(ctx context.Context, req herald.PutEndpointRequest) (herald.PutEndpointResult, error) {
	res, err := s.register(ctx, req, false)
	if err != nil {
		return res, err
	}
	// Read-your-writes for sends to the tenant: the put returns once the tenant's sends find it.
	if err := s.awaitIndexed(ctx, res.Endpoint); err != nil {
		return res, fmt.Errorf("put endpoint %s: the endpoint was saved (version %d), but sends to tenant %s may not find it yet: %w; run the same put again",
			req.ID, res.Endpoint.Version, herald.TenantOrDefault(res.Endpoint.Tenant), err)
	}
	return res, nil
}

// errRegistered is register's error, with onlyNew, for an endpoint whose workflow runs.
var errRegistered = errors.New("the endpoint workflow is running")

// register runs one put on the endpoint workflow (update-with-start) and returns its
// result, without waiting for the tenant's sends to find the endpoint (awaitIndexed).
// With onlyNew, the put is sent only if it starts the workflow: for an endpoint whose
// workflow runs, nothing is sent and the error is errRegistered (the bulk path then checks
// whether the put would change anything, without a visibility read per new endpoint).
func (s *Client) register(ctx context.Context, req herald.PutEndpointRequest, onlyNew bool) (herald.PutEndpointResult, error) {
	var res herald.PutEndpointResult
	// Structural checks here, so that bad input starts nothing; the worker's validator
	// checks again with its own address policy (allowing every address here).
	if err := herald.ValidatePut(req, true, anyAddress); err != nil {
		return res, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if req.Secret == "" && req.RotateTo == "" {
		sec, err := signature.GenerateSecret()
		if err != nil {
			return res, err
		}
		req.DefaultSecret = sec
	}
	// A new endpoint starts with what its first put publishes: its tenant and subscription,
	// and its circuit, closed, in the attribute and in the run's input, so that the run's
	// first workflow task has nothing to upsert but its admission memo. (Any release's run
	// takes the input's circuit as the one written, so this needs no versioned change.) A
	// put to an endpoint that exists does not use the start, and publishes what it changes.
	tenant := herald.TenantOrDefault(req.Tenant)
	start, err := s.updateWithStart(ctx, startUpdate{
		ID: herald.EndpointWorkflowID(req.ID), Type: herald.EndpointWorkflow, Summary: "endpoint " + req.ID,
		Input: herald.EndpointInput{ID: req.ID, Circuit: policy.CircuitClosed},
		Attrs: temporal.NewSearchAttributes(herald.AttrEndpoint.ValueSet(req.ID), herald.AttrTenant.ValueSet(tenant),
			herald.AttrSubscriptions.ValueSet(herald.SubscriptionTokens(tenant, herald.NormalizeTypes(req.Types))),
			herald.AttrCircuit.ValueSet(string(policy.CircuitClosed))),
		OnlyNew: onlyNew, Name: herald.UpdatePutEndpoint, Arg: req,
	}, &res)
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if onlyNew && errors.As(err, &started) {
			return res, errRegistered
		}
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			s.endUnregistered(ctx, req.ID, start, appErr.Message())
			return res, fmt.Errorf("%w: %s", ErrInvalid, appErr.Message())
		}
		return res, fmt.Errorf("put endpoint %s: %w", req.ID, err)
	}
	s.remember(req.ID, res.Endpoint.Tenant)
	return res, nil
}

// endUnregistered ends the endpoint workflow a refused put started, unless it is registered
// (it existed before, or a concurrent put registered it): a refused put leaves nothing
// running. Best effort: an unregistered endpoint workflow also ends by itself after a minute.
func (s *Client) endUnregistered(ctx context.Context, id string, start client.WithStartWorkflowOperation, why string) {
	run, err := start.Get(ctx)
	if err != nil {
		return
	}
	v, err := s.c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), herald.QueryEndpointState)
	if err != nil {
		return
	}
	var st herald.EndpointState
	if v.Get(&st) != nil || st.Registered {
		return
	}
	_ = s.c.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "endpoint put refused: "+why)
}

// anyAddress lets structural validation pass every literal address; the worker applies its
// own address policy.
var anyAddress = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}

// GetEndpoint returns an endpoint's state (no secrets).
func (s *Client) GetEndpoint(ctx context.Context, id string) (herald.EndpointState, error) {
	var st herald.EndpointState
	if err := herald.ValidateEndpointID(id); err != nil {
		return st, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	// The shard first: a spill that lands between the two reads is then in the endpoint's
	// answer, and the shard's says so (herald.EndpointCounts.IncludedIn).
	counts, cerr := s.shardCounts(ctx, id)
	v, err := s.c.QueryWorkflow(ctx, herald.EndpointWorkflowID(id), "", herald.QueryEndpointState)
	if err != nil {
		if isNotFound(err) {
			return st, fmt.Errorf("%w: endpoint %s is not registered", ErrNotFound, id)
		}
		return st, fmt.Errorf("endpoint %s: %w", id, err)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("endpoint %s: %w", id, err)
	}
	if !st.Registered {
		return st, fmt.Errorf("%w: endpoint %s is not registered", ErrNotFound, id)
	}
	if cerr != nil {
		// The endpoint itself answered: show it, and say the counters are partial.
		st.Error = fmt.Sprintf("attempt counters held by the endpoint's stats shard are missing: %v", cerr)
	}
	addCounts(&st, counts)
	return st, nil
}

// shardCounts reads endpoint id's entries in its stats shard. A shard that does not exist
// yet has counted nothing.
func (s *Client) shardCounts(ctx context.Context, id string) ([]herald.EndpointCounts, error) {
	v, err := s.c.QueryWorkflow(ctx, herald.StatsWorkflowID(id), "", herald.QueryStats, []string{id})
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	var counts []herald.EndpointCounts
	if err := v.Get(&counts); err != nil {
		return nil, err
	}
	return counts, nil
}

// addCounts adds the counts of the endpoint's stats shard, read before the endpoint, to
// those the endpoint workflow holds itself (what the shard handed over when it made room),
// leaving out those the endpoint has merged since the shard answered.
func addCounts(st *herald.EndpointState, counts []herald.EndpointCounts) {
	for _, c := range counts {
		if !c.IncludedIn(st.CountsSpill) {
			st.Counters.Merge(c.Counts)
		}
	}
	st.CountsSpill = 0
}

// ResetCircuit closes an endpoint's circuit by hand and returns its state.
func (s *Client) ResetCircuit(ctx context.Context, id string) (herald.EndpointState, error) {
	return s.updateEndpoint(ctx, id, "reset", herald.UpdateReset)
}

// DisableEndpoint disables an endpoint by hand, saying why, and returns its state. Once it
// has returned, no attempt goes to the endpoint: a delivery that has made no attempt yet
// ends as skipped, one that has parks as a dead letter at its next attempt (replay it
// after EnableEndpoint).
func (s *Client) DisableEndpoint(ctx context.Context, id, reason string) (herald.EndpointState, error) {
	if len(reason) > herald.MaxDisableReason {
		return herald.EndpointState{}, fmt.Errorf("%w: the reason is %d bytes long; the limit is %d", ErrInvalid, len(reason), herald.MaxDisableReason)
	}
	return s.updateEndpoint(ctx, id, "disable", herald.UpdateDisable, herald.DisableRequest{Reason: reason})
}

// EnableEndpoint enables a disabled endpoint again (its circuit closed, its failing spell
// forgotten) and returns its state. Enabling an enabled endpoint changes nothing.
func (s *Client) EnableEndpoint(ctx context.Context, id string) (herald.EndpointState, error) {
	return s.updateEndpoint(ctx, id, "enable", herald.UpdateEnable)
}

// updateEndpoint sends update name to endpoint id's workflow and returns the state it answers.
func (s *Client) updateEndpoint(ctx context.Context, id, verb, name string, args ...any) (herald.EndpointState, error) {
	var st herald.EndpointState
	if err := herald.ValidateEndpointID(id); err != nil {
		return st, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	// The state the update answers with holds the endpoint's own counters: add its shard's,
	// read first (as GetEndpoint does).
	counts, cerr := s.shardCounts(ctx, id)
	err := whenReady(ctx, unreadyPatience, func() error {
		h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID:   herald.EndpointWorkflowID(id),
			UpdateName:   name,
			Args:         args,
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err == nil {
			err = h.Get(ctx, &st)
		}
		return err
	})
	if err != nil {
		if isNotFound(err) || strings.Contains(err.Error(), herald.ErrNoEndpoint.Error()) {
			return st, fmt.Errorf("%w: endpoint %s is not registered", ErrNotFound, id)
		}
		if strings.Contains(err.Error(), "unknown update") {
			return st, fmt.Errorf("%w: %s endpoint %s: its workflow runs a version of Herald from before %s existed; it gains it when it next continues as new", ErrConflict, verb, id, verb)
		}
		return st, fmt.Errorf("%s endpoint %s: %w", verb, id, err)
	}
	if cerr != nil {
		st.Error = fmt.Sprintf("attempt counters held by the endpoint's stats shard are missing: %v", cerr)
	}
	addCounts(&st, counts)
	return st, nil
}
