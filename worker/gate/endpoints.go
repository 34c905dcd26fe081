package gate

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
)

// Endpoints are the calls a gate makes: to the endpoint workflows (a read of the admission
// view, a lease update, three signals) and to the stats shards. Temporal makes them in a
// worker; tests give a fake.
type Endpoints interface {
	// Admission reads endpoint id's configuration and limiter snapshot
	// (herald.ReadAdmission); an endpoint that is not registered is herald.ErrNoEndpoint.
	Admission(ctx context.Context, id string) (herald.AdmissionView, error)
	// Lease sends a lease request to endpoint id's workflow (herald.UpdateLease) and
	// returns its reply.
	Lease(ctx context.Context, id string, req herald.LeaseRequest) (herald.LeaseReply, error)
	// Wait queues waiters, deliveries' workflow ids, at endpoint id (herald.SignalWait).
	Wait(ctx context.Context, id string, waiters []string) error
	// Dones returns deliveries' own permits to endpoint id (herald.SignalDones).
	Dones(ctx context.Context, id string, dones []herald.Done) error
	// Outcomes reports outcomes of attempts admitted without a lease (herald.SignalOutcomes).
	Outcomes(ctx context.Context, id string, r herald.OutcomeReport) error
	// Counts adds attempt counts to the stats shard shard (herald.SignalStats), starting it
	// if needed (with the capacity Temporal was given).
	Counts(ctx context.Context, shard string, counts []herald.EndpointCounts) error
}

// Temporal returns the Endpoints that make the calls through c; queue is the endpoint
// workflows' task queue, where a stats shard starts, and statsCapacity the capacity a
// shard it starts has (herald.StatsInput.Capacity; 0: herald.StatsCapacity).
func Temporal(c client.Client, queue string, statsCapacity int) Endpoints {
	return temporalEndpoints{c: c, queue: queue, statsCapacity: statsCapacity}
}

type temporalEndpoints struct {
	c             client.Client
	queue         string
	statsCapacity int
}

func (t temporalEndpoints) Admission(ctx context.Context, id string) (herald.AdmissionView, error) {
	return herald.ReadAdmission(ctx, t.c, id)
}

func (t temporalEndpoints) Lease(ctx context.Context, id string, req herald.LeaseRequest) (herald.LeaseReply, error) {
	var reply herald.LeaseReply
	h, err := t.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   herald.EndpointWorkflowID(id),
		UpdateName:   herald.UpdateLease,
		Args:         []any{req},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &reply)
	}
	if err != nil {
		return reply, herald.EndpointError(id, "lease", err)
	}
	return reply, nil
}

func (t temporalEndpoints) Wait(ctx context.Context, id string, waiters []string) error {
	return t.c.SignalWorkflow(ctx, herald.EndpointWorkflowID(id), "", herald.SignalWait, herald.WaitRequest{Waiters: waiters})
}

func (t temporalEndpoints) Dones(ctx context.Context, id string, dones []herald.Done) error {
	return t.c.SignalWorkflow(ctx, herald.EndpointWorkflowID(id), "", herald.SignalDones, dones)
}

func (t temporalEndpoints) Outcomes(ctx context.Context, id string, r herald.OutcomeReport) error {
	if err := t.c.SignalWorkflow(ctx, herald.EndpointWorkflowID(id), "", herald.SignalOutcomes, r); err != nil {
		return herald.EndpointError(id, "report", err)
	}
	return nil
}

func (t temporalEndpoints) Counts(ctx context.Context, shard string, counts []herald.EndpointCounts) error {
	_, err := t.c.SignalWithStartWorkflow(ctx, shard, herald.SignalStats, counts, client.StartWorkflowOptions{
		ID: shard, TaskQueue: t.queue, StaticSummary: "attempt counts of the endpoints of " + shard,
	}, herald.StatsWorkflow, herald.StatsInput{Capacity: t.statsCapacity})
	return err
}
