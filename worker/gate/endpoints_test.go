package gate

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// The Temporal Endpoints send each call to the right workflow under the right name, and
// say that an endpoint whose workflow does not exist is not registered.
func TestTemporalEndpoints(t *testing.T) {
	ctx := context.Background()
	c := &mocks.Client{}
	eps := Temporal(c, "herald-endpoints", 20)
	wid := herald.EndpointWorkflowID("ep")

	handle := &mocks.WorkflowUpdateHandle{}
	handle.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, v any) error {
		*v.(*herald.LeaseReply) = herald.LeaseReply{LeaseReply: policy.LeaseReply{Permits: 3}}
		return nil
	})
	c.On("UpdateWorkflow", mock.Anything, mock.MatchedBy(func(o client.UpdateWorkflowOptions) bool {
		return o.WorkflowID == wid && o.UpdateName == herald.UpdateLease && o.WaitForStage == client.WorkflowUpdateStageCompleted
	})).Return(handle, nil)
	reply, err := eps.Lease(ctx, "ep", herald.LeaseRequest{})
	if err != nil || reply.Permits != 3 {
		t.Fatalf("Lease = %+v, %v; want 3 permits", reply, err)
	}

	c.On("SignalWorkflow", mock.Anything, wid, "", herald.SignalWait, herald.WaitRequest{Waiters: []string{"d1"}}).Return(nil)
	c.On("SignalWorkflow", mock.Anything, wid, "", herald.SignalDones, []herald.Done{{Waiter: "d1"}}).Return(nil)
	c.On("SignalWorkflow", mock.Anything, wid, "", herald.SignalOutcomes, mock.Anything).
		Return(serviceerror.NewNotFound("workflow not found"))
	if err := eps.Wait(ctx, "ep", []string{"d1"}); err != nil {
		t.Fatal(err)
	}
	if err := eps.Dones(ctx, "ep", []herald.Done{{Waiter: "d1"}}); err != nil {
		t.Fatal(err)
	}
	if err := eps.Outcomes(ctx, "ep", herald.OutcomeReport{Holder: "h"}); !errors.Is(err, herald.ErrNoEndpoint) {
		t.Fatalf("report to a missing workflow: %v, want ErrNoEndpoint", err)
	}

	shard := herald.StatsWorkflowID("ep")
	c.On("SignalWithStartWorkflow", mock.Anything, shard, herald.SignalStats, mock.Anything,
		mock.MatchedBy(func(o client.StartWorkflowOptions) bool { return o.ID == shard && o.TaskQueue == "herald-endpoints" }),
		herald.StatsWorkflow, herald.StatsInput{Capacity: 20}).Return(nil, nil)
	if err := eps.Counts(ctx, shard, []herald.EndpointCounts{{Endpoint: "ep"}}); err != nil {
		t.Fatal(err)
	}
	c.AssertExpectations(t)
}
