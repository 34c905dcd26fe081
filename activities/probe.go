package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
)

// Prober sends the probes of endpoints disabled for failing (policy.RecoveryLadder). The
// endpoint workflow runs Probe as a local activity: the endpoint is disabled, so the probe
// goes around the gate, as the only request the endpoint gets.
type Prober struct {
	// Destination takes the probe's signed request to the receiver (NewHTTP).
	Destination Destination
	// Defaults are the settings an endpoint uses unless it overrides them (its timeout).
	Defaults herald.Settings
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ProbeInput is one probe: the endpoint as its workflow holds it (URL, secrets, headers)
// and which probe this is. A local activity's input, never recorded in history.
type ProbeInput struct {
	Endpoint   herald.Endpoint `json:"endpoint"`
	Number     int             `json:"number"`
	DisabledAt time.Time       `json:"disabled_at,omitzero"`
}

// Probe sends probe event number in.Number (herald.ProbeEvent) to the endpoint, signed and
// with its custom headers like any attempt, and returns what happened; Delivered() on the
// result means the endpoint has recovered. A failure of the receiver is a result, not an
// error.
func (p *Prober) Probe(ctx context.Context, in ProbeInput) (herald.Result, error) {
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	ev := herald.ProbeEvent(in.Endpoint.ID, in.Number, in.DisabledAt, now)
	a := Activities{Destination: p.Destination, Defaults: p.Defaults, Now: p.Now}
	// A probe is Herald's own event: the endpoint's transformation, written for its
	// producers' events, is not applied (it could fail or cancel on the probe's data).
	ep := in.Endpoint
	ep.Transform = ""
	res := a.send(ctx, AttemptInput{Event: ev, Number: in.Number}, ep, now)
	res.Policy = herald.Settings{} // a probe follows the recovery ladder, not the endpoint's
	return res, ctx.Err()
}

// ReplayRecovered starts the bulk replay of the dead letters of the endpoint in.Filter
// names, under the workflow id given (herald.RecoveryReplayID): starting it again, as a
// retried workflow task does, starts nothing more. It returns the workflow id.
func (o *Ops) ReplayRecovered(ctx context.Context, id string, in herald.BulkReplayInput) (string, error) {
	_, err := o.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                o.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            "replay of the dead letters of endpoint " + in.Filter.EndpointID + ", recovered",
	}, herald.BulkReplayWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return "", fmt.Errorf("replay the dead letters of %s: %w", in.Filter.EndpointID, err)
	}
	return id, nil
}
