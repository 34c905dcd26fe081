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
	// A page at a time, so that memory stays bounded however many endpoints there are.
	var stale []string
	var failed []error
	publish := func() {
		unregistered, errs := s.publishStale(ctx, stale)
		res.Unregistered += unregistered
		res.Published += len(stale) - unregistered - len(errs)
		failed = append(failed, errs...)
		stale = stale[:0]
	}
	for ex, err := range herald.Executions(ctx, s.c, q.String(), migratePage) {
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
		if len(stale) == migratePage {
			publish()
		}
	}
	publish()
	if len(failed) > 0 {
		return res, fmt.Errorf("%d endpoints could not publish their subscription (run herald migrate again): %w", len(failed), errors.Join(failed[:min(len(failed), 5)]...))
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

// migratePage is how many endpoints Migrate lists, and asks to publish, at a time.
const migratePage = 1000

// publishStale asks each endpoint of ids to publish its tenant and subscription
// (herald.UpdateIndex), 16 at a time, and returns how many hold no endpoint (skipped) and
// the errors of those that failed.
func (s *Client) publishStale(ctx context.Context, ids []string) (unregistered int, failed []error) {
	errs := make([]error, len(ids))
	skipped := make([]bool, len(ids))
	eachAtOnce(len(ids), 16, func(i int) {
		err := whenReady(ctx, unreadyPatience, func() error {
			h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
				WorkflowID: herald.EndpointWorkflowID(ids[i]), UpdateName: herald.UpdateIndex,
				WaitForStage: client.WorkflowUpdateStageCompleted,
			})
			if err == nil {
				err = h.Get(ctx, nil)
			}
			return err
		})
		switch {
		case err != nil && strings.Contains(err.Error(), herald.ErrNoEndpoint.Error()), isNotFound(err):
			skipped[i] = true
		case err != nil && strings.Contains(err.Error(), "unknown update"):
			errs[i] = fmt.Errorf("endpoint %s: its worker runs a Herald older than 0.2.0: upgrade every worker first", ids[i])
		case err != nil:
			errs[i] = fmt.Errorf("endpoint %s: %w", ids[i], err)
		}
	})
	for i := range ids {
		if skipped[i] {
			unregistered++
		}
		if errs[i] != nil {
			failed = append(failed, errs[i])
		}
	}
	return unregistered, failed
}
