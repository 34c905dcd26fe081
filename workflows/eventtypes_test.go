package workflows

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
)

// TestEventTypesWorkflow: the catalog refuses bad puts in its validator (without compiling
// a schema), applies good ones, keeps the settings, answers its query, and continues as new
// with everything it holds.
func TestEventTypesWorkflow(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(EventTypesWorkflow, workflow.RegisterOptions{Name: herald.EventTypesWorkflow})
	desc := "An order was paid."
	var (
		badName, badSchema, clearUnknown, put *updateOutcome[herald.EventType]
		strict                                *updateOutcome[herald.EventTypeSettings]
		cat                                   herald.EventTypeCatalog
		queryErr                              error
	)
	env.RegisterDelayedCallback(func() {
		badName = sendUpdate[herald.EventType](env, herald.UpdatePutEventType, herald.PutEventTypeRequest{Name: "order paid"})
		badSchema = sendUpdate[herald.EventType](env, herald.UpdatePutEventType, herald.PutEventTypeRequest{Name: "order.paid", Schema: json.RawMessage(strings.Repeat(`{"not":`, 100) + `{}` + strings.Repeat(`}`, 100))})
		clearUnknown = sendUpdate[herald.EventType](env, herald.UpdatePutEventType, herald.PutEventTypeRequest{Name: "order.paid", ClearSchema: true})
		put = sendUpdate[herald.EventType](env, herald.UpdatePutEventType, herald.PutEventTypeRequest{Name: "order.paid", Description: &desc, Schema: json.RawMessage(`{"type":"object"}`)})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		strict = sendUpdate[herald.EventTypeSettings](env, herald.UpdateEventTypeSettings, herald.EventTypeSettingsChange{StrictTypes: new(true)})
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		cat, queryErr = queryAs[herald.EventTypeCatalog](env, herald.QueryEventTypes)
		env.SetContinueAsNewSuggested(true)
	}, 3*time.Second)
	env.ExecuteWorkflow(herald.EventTypesWorkflow, herald.EventTypesInput{})

	for what, o := range map[string]*updateOutcome[herald.EventType]{"bad name": badName, "bad schema": badSchema, "clear unknown": clearUnknown} {
		if o == nil || o.accepted || o.rejected == nil {
			t.Errorf("%s: want it rejected by the validator, got %+v", what, o)
		}
	}
	// The validator checks a schema's size and depth, never compiles it: the starter did.
	if badSchema != nil && badSchema.rejected != nil && !strings.Contains(badSchema.rejected.Error(), "nests objects and arrays 101 deep") {
		t.Errorf("bad schema rejected with %q, want it to say how deep it nests", badSchema.rejected)
	}
	put.mustSucceed(t, "put")
	if put.result.Name != "order.paid" || put.result.Version != 1 || put.result.Description != desc {
		t.Errorf("put returned %+v", put.result)
	}
	strict.mustSucceed(t, "strict")
	if queryErr != nil || !cat.StrictTypes || len(cat.Types) != 1 || string(cat.Types[0].Schema) != `{"type":"object"}` {
		t.Errorf("query: %+v, %v", cat, queryErr)
	}

	_, next := continuedAsNew[herald.EventTypesInput](t, env)
	if !next.Catalog.StrictTypes || len(next.Catalog.Types) != 1 || !reflect.DeepEqual(next.Catalog, cat) {
		t.Errorf("continued as new with %+v, want %+v", next.Catalog, cat)
	}
}
