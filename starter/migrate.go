package starter

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
)

// MigrateResult says what Migrate did.
type MigrateResult struct {
	// Endpoints is how many running endpoint workflows were looked at.
	Endpoints int `json:"endpoints"`
	// Published is how many of them were asked to publish their tenant and subscription.
	Published int `json:"published"`
	// Unregistered is how many were skipped for holding no endpoint (a refused put).
	Unregistered int `json:"unregistered"`
	// Directories is how many 0.1.0 subscription directory workflows were ended.
	Directories int `json:"directories"`
}

// Migrate brings an installation registered with Herald 0.1.0 to 0.2.0, once its workers
// run 0.2.0: every registered endpoint that does not publish its tenant and subscription
// in its search attributes yet (HeraldTenant, HeraldSubscriptions) is asked to
// (herald.UpdateIndex), so that sends to its tenant find it, and the per-tenant
// subscription directory workflows 0.1.0 kept are ended. It is safe to run again: an
// endpoint that publishes them already is left alone.
func (s *Client) Migrate(ctx context.Context) (MigrateResult, error) {
	var res MigrateResult
	q := herald.Workflows(herald.EndpointWorkflow).Running()
	var stale []string
	for ex, err := range herald.Executions(ctx, s.c, q.String(), 1000) {
		if err != nil {
			return res, fmt.Errorf("list the endpoints: %w", err)
		}
		id, ok := herald.ParseEndpointWorkflowID(ex.GetExecution().GetWorkflowId())
		if !ok {
			continue
		}
		res.Endpoints++
		if _, tokens := indexed(ex); len(tokens) == 0 {
			stale = append(stale, id)
		}
	}
	errs := make([]error, len(stale))
	unregistered := make([]bool, len(stale))
	eachAtOnce(len(stale), 16, func(i int) {
		err := whenReady(ctx, unreadyPatience, func() error {
			h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
				WorkflowID: herald.EndpointWorkflowID(stale[i]), UpdateName: herald.UpdateIndex,
				WaitForStage: client.WorkflowUpdateStageCompleted,
			})
			if err == nil {
				err = h.Get(ctx, nil)
			}
			return err
		})
		switch {
		case err != nil && strings.Contains(err.Error(), herald.ErrNoEndpoint.Error()), isNotFound(err):
			unregistered[i] = true
		case err != nil && strings.Contains(err.Error(), "unknown update"):
			errs[i] = fmt.Errorf("endpoint %s: its worker runs a Herald older than 0.2.0: upgrade every worker first", stale[i])
		case err != nil:
			errs[i] = fmt.Errorf("endpoint %s: %w", stale[i], err)
		}
	})
	var failed []error
	for i := range stale {
		switch {
		case errs[i] != nil:
			failed = append(failed, errs[i])
		case unregistered[i]:
			res.Unregistered++
		default:
			res.Published++
		}
	}
	if len(failed) > 0 {
		return res, fmt.Errorf("%d of %d endpoints could not publish their subscription (run herald migrate again): %w", len(failed), len(stale), errors.Join(failed[:min(len(failed), 5)]...))
	}
	// The endpoints are found without the directories now: end them.
	dq := herald.Workflows(herald.LegacySubscriptionsWorkflow).Running()
	for ex, err := range herald.Executions(ctx, s.c, dq.String(), 1000) {
		if err != nil {
			return res, fmt.Errorf("list the 0.1.0 subscription directories: %w", err)
		}
		wfID := ex.GetExecution().GetWorkflowId()
		if err := s.c.TerminateWorkflow(ctx, wfID, "", "Herald 0.2.0 finds a tenant's endpoints by their search attributes (herald migrate)"); err != nil && !isNotFound(err) {
			return res, fmt.Errorf("end the 0.1.0 subscription directory %s: %w", wfID, err)
		}
		res.Directories++
	}
	return res, nil
}
