package workflows

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/internal/metrics"
)

// The delivery workflow counts its dead letter through the SDK's metrics handler, under
// the documented name and with the endpoint as it is spelled.
func TestDeliveryCountsDeadLetter(t *testing.T) {
	rec, err := metrics.NewWithOptions(metrics.Options{NoProcessMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetMetricsHandler(rec.SDKHandler())
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(testStart)
	env.RegisterWorkflowWithOptions((&DeliveryWorkflow{}).Run, workflow.RegisterOptions{Name: herald.DeliveryWorkflow})
	// The dead letter's operational event: nobody listens (no Ops client in this test).
	env.OnActivity((&activities.Ops{}).EmitOps, mock.Anything, mock.Anything).Return(false, nil)
	p := withRetention(time.Hour)
	env.OnActivity((&activities.Activities{}).Attempt, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ activities.AttemptInput) (herald.Result, error) {
			return failedAttempt(env.Now(), p), nil
		})
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})
	if st := workflowStatus(t, env); st.State != herald.StateExpired {
		t.Fatalf("state %q, want %q", st.State, herald.StateExpired)
	}
	if err := rec.Close(); err != nil { // copies the handler's counters into the registry
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	rec.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	var got []string
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if strings.HasPrefix(line, MetricDeadLetters+"{") {
			got = append(got, line)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], `endpoint="`+testEndpointID+`"`) || !strings.HasSuffix(got[0], " 1") {
		t.Errorf("dead letter metric lines %q, want one for endpoint %s at 1", got, testEndpointID)
	}
}
