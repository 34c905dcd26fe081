package herald

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// ReadAdmission reads endpoint id's configuration and limiter snapshot from its workflow's
// memo (MemoAdmission: a describe, served by the server alone however busy the workflow
// is), or, for a workflow that does not publish it yet, asks it with a query
// (QueryAdmission). An endpoint that is not registered is ErrNoEndpoint.
func ReadAdmission(ctx context.Context, c client.Client, id string) (AdmissionView, error) {
	v, _, err := ReadAdmissionRun(ctx, c, id, "")
	return v, err
}

// ReadAdmissionRun is ReadAdmission that describes run run of the endpoint's workflow when
// it is not "" (the server then finds the run in its cache, where a describe by workflow id
// alone reads the id's current run from the database first), and the current run when it
// is "" or that run is no longer running (it continued as new). It returns the run it read.
func ReadAdmissionRun(ctx context.Context, c client.Client, id, run string) (AdmissionView, string, error) {
	var v AdmissionView
	d, err := c.DescribeWorkflow(ctx, EndpointWorkflowID(id), run)
	if run != "" && (err != nil || d.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING) {
		run = ""
		d, err = c.DescribeWorkflow(ctx, EndpointWorkflowID(id), "")
	}
	if err != nil {
		return v, "", EndpointError(id, "describe", err)
	}
	if d.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return v, "", EndpointError(id, "describe", ErrNoEndpoint)
	}
	run = d.WorkflowExecution.RunID
	if err := d.GetMemoValue(MemoAdmission, &v); err == nil {
		return v, run, nil
	}
	res, err := c.QueryWorkflow(ctx, EndpointWorkflowID(id), run, QueryAdmission)
	if err == nil {
		err = res.Get(&v)
	}
	if err != nil {
		return v, "", EndpointError(id, "snapshot", err)
	}
	return v, run, nil
}

// EndpointError names the endpoint and the call to its workflow (what) that failed with
// err. A workflow that does not exist, or that answers that the endpoint is not
// registered, makes it ErrNoEndpoint, with what to do about it.
func EndpointError(id, what string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) || strings.Contains(err.Error(), ErrNoEndpoint.Error()) {
		return fmt.Errorf("endpoint %s: %w: register it first (herald endpoint put, or PUT /v1/endpoints/%s)", id, ErrNoEndpoint, id)
	}
	return fmt.Errorf("endpoint %s: %s: %w", id, what, err)
}
