package tests

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/signature"
)

// startShortRuns starts a stack of its own whose server suggests continue-as-new after
// events history events, so that an endpoint workflow continues as new within seconds.
func startShortRuns(t *testing.T, events int) *testkit.Stack {
	t.Helper()
	stk, err := testkit.Start(context.Background(), testkit.Options{Server: devserver.Options{
		DynamicConfig: map[string]any{"limit.historyCount.suggestContinueAsNew": events},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stk.Stop)
	return stk
}

// TestRecordContinuedRateLimitHistory records the first run of a rate-limited endpoint
// that continued as new while deliveries waited for their grants (the server suggests
// continue-as-new after 60 events here), for TestReplayHistories. It runs only with
// -record (endpoint_rate_limited_continued_before_drain.json is one recorded before
// versionDrainBeforeContinue):
//
//	go test ./tests -run TestRecordContinuedRateLimitHistory -record
func TestRecordContinuedRateLimitHistory(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the histories")
	}
	ctx := context.Background()
	stk := startShortRuns(t, 60)
	rcv := newReceiver(t, status(http.StatusNoContent))
	sec, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	o := fast(3, time.Second)
	two := 2
	o.RateLimit = &two
	id := "rec-rated-continued"
	if _, err := stk.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, URL: rcv.URL, Secret: sec, Overrides: o}); err != nil {
		t.Fatal(err)
	}
	ids := sendAll(t, stk.Starter, id, 16, 8)
	for _, ev := range ids {
		waitFor(t, stk.Starter, ev, herald.StateDelivered)
	}
	d, err := stk.Client.DescribeWorkflowExecution(ctx, herald.EndpointWorkflowID(id), "")
	if err != nil {
		t.Fatal(err)
	}
	first := d.GetWorkflowExecutionInfo().GetFirstRunId()
	evs := historyOf(t, stk.Client, herald.EndpointWorkflowID(id), first)
	if last := evs[len(evs)-1]; last.GetEventType() != enums.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		t.Fatalf("the endpoint's first run ended with %s, want continued as new", last.GetEventType())
	}
	const name = "endpoint_rate_limited_continued.json"
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&historypb.History{Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(historyDir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s (%d events)", name, len(evs))
}
