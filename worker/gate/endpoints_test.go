package gate

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// The Temporal Endpoints send each call to the right workflow under the right name, and
// say that an endpoint whose workflow does not exist is not registered.
func TestTemporalEndpoints(t *testing.T) {
	ctx := context.Background()
	c := &mocks.Client{}
	eps := Temporal(c, "herald-endpoints", herald.StatsInput{Capacity: 20})
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
	if err := eps.Wait(ctx, "ep", herald.WaitRequest{Waiters: []string{"d1"}}); err != nil {
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

// The Temporal Endpoints name the run the last read found, and call the current run again
// when that one has ended (the endpoint continued as new), forgetting it until the next read.
func TestTemporalEndpointsNameTheRun(t *testing.T) {
	ctx := context.Background()
	c := &mocks.Client{}
	eps := Temporal(c, "herald-endpoints", herald.StatsInput{Capacity: 20}).(temporalEndpoints)
	wid := herald.EndpointWorkflowID("ep")
	running := func(run string) *client.WorkflowExecutionDescription {
		d := &client.WorkflowExecutionDescription{}
		d.WorkflowExecution = workflow.Execution{ID: wid, RunID: run}
		d.Status = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		return d // no memo: the view is queried, from the run described
	}
	view := &mocks.Value{}
	view.On("Get", mock.Anything).Return(nil)
	c.On("QueryWorkflow", mock.Anything, wid, mock.Anything, herald.QueryAdmission).Return(view, nil)
	c.On("DescribeWorkflow", mock.Anything, wid, "").Return(running("r1"), nil).Once()
	if _, err := eps.Admission(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	if got := eps.runs.get("ep"); got != "r1" {
		t.Fatalf("run remembered %q, want r1", got)
	}
	c.On("SignalWorkflow", mock.Anything, wid, "r1", herald.SignalWait, mock.Anything).Return(nil).Once()
	if err := eps.Wait(ctx, "ep", herald.WaitRequest{Waiters: []string{"d1"}}); err != nil {
		t.Fatal(err)
	}
	// r1 continued as new into r2: the call to r1 is made again to the current run.
	c.On("SignalWorkflow", mock.Anything, wid, "r1", herald.SignalDones, mock.Anything).
		Return(serviceerror.NewNotFound("workflow execution already completed")).Once()
	c.On("SignalWorkflow", mock.Anything, wid, "", herald.SignalDones, mock.Anything).Return(nil).Once()
	if err := eps.Dones(ctx, "ep", []herald.Done{{Waiter: "d1"}}); err != nil {
		t.Fatal(err)
	}
	if got := eps.runs.get("ep"); got != "" {
		t.Fatalf("run remembered %q after it ended, want none", got)
	}
	// The next read finds r2; a describe of a remembered run that has ended reads the current.
	c.On("DescribeWorkflow", mock.Anything, wid, "").Return(running("r2"), nil).Once()
	if _, err := eps.Admission(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	ended := running("r2")
	ended.Status = enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
	c.On("DescribeWorkflow", mock.Anything, wid, "r2").Return(ended, nil).Once()
	c.On("DescribeWorkflow", mock.Anything, wid, "").Return(running("r3"), nil).Once()
	if _, err := eps.Admission(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	if got := eps.runs.get("ep"); got != "r3" {
		t.Fatalf("run remembered %q, want r3", got)
	}
	// An endpoint that is gone is still not registered, run or no run.
	c.On("SignalWorkflow", mock.Anything, wid, "r3", herald.SignalOutcomes, mock.Anything).
		Return(serviceerror.NewNotFound("workflow not found")).Once()
	c.On("SignalWorkflow", mock.Anything, wid, "", herald.SignalOutcomes, mock.Anything).
		Return(serviceerror.NewNotFound("workflow not found")).Once()
	if err := eps.Outcomes(ctx, "ep", herald.OutcomeReport{Holder: "h"}); !errors.Is(err, herald.ErrNoEndpoint) {
		t.Fatalf("report to a missing workflow: %v, want ErrNoEndpoint", err)
	}
	c.AssertExpectations(t)
}

// TestRunsBounded crosses MaxRuns scaled down: never more than max remembered.
func TestRunsBounded(t *testing.T) {
	r := &runs{max: 50}
	for i := range 500 {
		r.set(fmt.Sprint("ep", i), "run")
		if r.size() > 50 {
			t.Fatalf("%d runs remembered after %d set, want at most 50", r.size(), i+1)
		}
	}
	if r.get("ep499") != "run" {
		t.Fatal("the newest run is not remembered")
	}
	r.set("ep499", "")
	if r.get("ep499") != "" {
		t.Fatal("a run set to none is still remembered")
	}
}
