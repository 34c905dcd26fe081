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
	var v AdmissionView
	d, err := c.DescribeWorkflow(ctx, EndpointWorkflowID(id), "")
	if err != nil {
		return v, EndpointError(id, "describe", err)
	}
	if d.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return v, EndpointError(id, "describe", ErrNoEndpoint)
	}
	if err := d.GetMemoValue(MemoAdmission, &v); err == nil {
		return v, nil
	}
	res, err := c.QueryWorkflow(ctx, EndpointWorkflowID(id), "", QueryAdmission)
	if err == nil {
		err = res.Get(&v)
	}
	if err != nil {
		return v, EndpointError(id, "snapshot", err)
	}
	return v, nil
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
