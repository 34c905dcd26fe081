package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald"
)

// NudgeWaiting asks the deliveries that r.Endpoint's gates turned away from its full queue
// to come back now (herald.UpdateNudge), for an endpoint workflow whose queue has room
// again. The endpoint cannot name them, so visibility does: the newest r.Window deliveries
// waiting on the endpoint, less those it holds (herald.QueryHolding), oldest first, at most
// r.Limit of them. A delivery that is not waiting for room refuses the nudge, leaving no
// event, so a stale listing costs a round trip and nothing else. Found counts those listed
// and not held; a retried run nudges again, which the deliveries that came back refuse.
func (o *Operator) NudgeWaiting(ctx context.Context, r herald.NudgeRequest) (herald.NudgeCount, error) {
	q := herald.Workflows(herald.DeliveryWorkflow).Is(herald.AttrEndpoint, r.Endpoint).
		Is(herald.AttrStatus, string(herald.StateWaitingEndpoint)).Running()
	var ids []string
	for ex, err := range herald.Executions(ctx, o.Client, q.String(), nudgePage) {
		if err != nil {
			return herald.NudgeCount{}, fmt.Errorf("list the deliveries waiting on %s: %w", r.Endpoint, err)
		}
		ids = append(ids, ex.GetExecution().GetWorkflowId())
		if len(ids) >= r.Window {
			break
		}
	}
	slices.Reverse(ids) // listed newest first
	free, err := o.notHeld(ctx, r.Endpoint, ids)
	if err != nil {
		return herald.NudgeCount{}, err
	}
	c := herald.NudgeCount{Found: len(free)}
	free = free[:min(len(free), r.Limit)]
	var nudged atomic.Int64
	var g errgroup.Group
	g.SetLimit(nudgeConcurrency)
	for i, id := range free {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if o.nudge(ctx, id) {
				nudged.Add(1)
			}
			return nil
		})
		if i%100 == 99 {
			activity.RecordHeartbeat(ctx, i+1)
		}
	}
	_ = g.Wait()
	c.Nudged = int(nudged.Load())
	return c, ctx.Err()
}

// Paging and pace of NudgeWaiting.
const (
	nudgePage        = 1000
	nudgeConcurrency = 32
	nudgeTimeout     = 10 * time.Second
)

// notHeld returns those of ids the endpoint workflow of endpoint does not hold, asking it
// a page at a time. An endpoint run too old to answer holds none of them as far as this
// knows: the deliveries it holds refuse the nudge.
func (o *Operator) notHeld(ctx context.Context, endpoint string, ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	for page := range slices.Chunk(ids, nudgePage) {
		v, err := o.Client.QueryWorkflow(ctx, herald.EndpointWorkflowID(endpoint), "", herald.QueryHolding, page)
		var held []string
		var qf *serviceerror.QueryFailed
		switch {
		case errors.As(err, &qf):
		case err != nil:
			return nil, fmt.Errorf("ask endpoint %s which deliveries it holds: %w", endpoint, err)
		default:
			if err := v.Get(&held); err != nil {
				return nil, fmt.Errorf("read endpoint %s's answer: %w", endpoint, err)
			}
		}
		holds := make(map[string]bool, len(held))
		for _, id := range held {
			holds[id] = true
		}
		for _, id := range page {
			if !holds[id] {
				out = append(out, id)
			}
		}
	}
	return out, nil
}

// nudge sends the nudge update to delivery id and reports whether it took it.
func (o *Operator) nudge(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, nudgeTimeout)
	defer cancel()
	h, err := o.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: herald.UpdateNudge, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	return err == nil
}
