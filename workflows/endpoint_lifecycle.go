package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// lifecycleHandlers registers the updates that disable and enable the endpoint by hand.
// Each returns once every worker's gate knows (policy.ConfigSettle), so that nothing is
// sent to an endpoint once its disable has returned.
func (e *endpointRun) lifecycleHandlers(ctx workflow.Context) error {
	registered := func(workflow.Context) error {
		if e.in.Endpoint == nil || e.in.Limiter == nil {
			return fmt.Errorf("endpoint %s: %w", e.in.ID, herald.ErrNoEndpoint)
		}
		return nil
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateDisable,
		func(ctx workflow.Context, req herald.DisableRequest) (herald.EndpointState, error) {
			e.in.Limiter.Disable(workflow.Now(ctx), req.Reason)
			return e.settle(ctx)
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req herald.DisableRequest) error {
			if len(req.Reason) > herald.MaxDisableReason {
				return fmt.Errorf("the reason is %d bytes long; the limit is %d", len(req.Reason), herald.MaxDisableReason)
			}
			return registered(ctx)
		}}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdateEnable,
		func(ctx workflow.Context) (herald.EndpointState, error) {
			e.in.Limiter.Enable(workflow.Now(ctx))
			return e.settle(ctx)
		},
		workflow.UpdateHandlerOptions{Validator: registered})
}

// settle lets the main loop publish a change, waits until every worker's gate uses it, and
// returns the endpoint's state.
func (e *endpointRun) settle(ctx workflow.Context) (herald.EndpointState, error) {
	e.dirty = true
	if err := workflow.NewTimerWithOptions(ctx, policy.ConfigSettle, workflow.TimerOptions{
		Summary: "the change reaches every worker",
	}).Get(ctx, nil); err != nil {
		return herald.EndpointState{}, err
	}
	return e.view(workflow.Now(ctx)), nil
}

// showDisabled writes a changed disablement to the HeraldDisabled search attribute: its
// cause while disabled, unset once enabled.
func (e *endpointRun) showDisabled(ctx workflow.Context) {
	var cause policy.DisableCause
	if d := e.in.Limiter.Disabled; d != nil {
		cause = d.Cause
	}
	if cause == e.in.Disabled {
		return
	}
	e.in.Disabled = cause
	if cause == "" {
		_ = workflow.UpsertTypedSearchAttributes(ctx, herald.AttrDisabled.ValueUnset())
		return
	}
	workflow.GetLogger(ctx).Warn("endpoint disabled", "endpoint", e.in.ID, "cause", cause, "reason", e.in.Limiter.Disabled.Reason)
	_ = workflow.UpsertTypedSearchAttributes(ctx, herald.AttrDisabled.ValueSet(string(cause)))
}
