package starter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/workflows"
)

// PutEndpoint registers an endpoint or changes it, in one round trip that starts the
// endpoint workflow if needed (update-with-start). A new endpoint without a secret gets a
// generated one (PutEndpointResult.SecretGenerated; show it to the user once). Bad input
// is refused before anything is started; the worker refuses URLs its SSRF policy forbids.
func (s *Client) PutEndpoint(ctx context.Context, req workflows.PutEndpointRequest) (workflows.PutEndpointResult, error) {
	var res workflows.PutEndpointResult
	// Structural checks here, so that bad input starts nothing; the worker's validator
	// checks again with its own address policy (allowing every address here).
	if err := workflows.ValidatePut(req, true, anyAddress); err != nil {
		return res, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if req.Secret == "" && req.RotateTo == "" {
		sec, err := signature.GenerateSecret()
		if err != nil {
			return res, err
		}
		req.DefaultSecret = sec
	}
	start := s.c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       workflows.EndpointWorkflowID(req.ID),
		TaskQueue:                s.opts.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.AttrEndpoint.ValueSet(req.ID)),
		StaticSummary:            "endpoint " + req.ID,
	}, workflows.EndpointWorkflowName, workflows.EndpointInput{ID: req.ID})
	h, err := s.c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID:   workflows.EndpointWorkflowID(req.ID),
			UpdateName:   workflows.UpdatePutEndpoint,
			Args:         []any{req},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			return res, fmt.Errorf("%w: %s", ErrInvalid, appErr.Message())
		}
		return res, fmt.Errorf("put endpoint %s: %w", req.ID, err)
	}
	s.mu.Lock()
	s.known[req.ID] = s.opts.Now()
	s.mu.Unlock()
	return res, nil
}

// anyAddress lets structural validation pass every literal address; the worker applies its
// own address policy.
var anyAddress = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}

// GetEndpoint returns an endpoint's state (no secrets).
func (s *Client) GetEndpoint(ctx context.Context, id string) (workflows.EndpointState, error) {
	var st workflows.EndpointState
	if err := workflows.ValidateEndpointID(id); err != nil {
		return st, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	v, err := s.c.QueryWorkflow(ctx, workflows.EndpointWorkflowID(id), "", workflows.QueryEndpointState)
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
	return st, nil
}

// ListEndpoints returns every registered endpoint's state, sorted by id.
func (s *Client) ListEndpoints(ctx context.Context) ([]workflows.EndpointState, error) {
	var ids []string
	var token []byte
	for {
		resp, err := s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         "WorkflowType = 'Endpoint' AND ExecutionStatus = 'Running'",
			PageSize:      500,
			NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list endpoints: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			if id, ok := strings.CutPrefix(ex.GetExecution().GetWorkflowId(), "endpoint:"); ok {
				ids = append(ids, id)
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	sort.Strings(ids)
	out := make([]workflows.EndpointState, 0, len(ids))
	for _, id := range ids {
		st, err := s.GetEndpoint(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}
