package starter

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	"github.com/heraldhq/herald"
)

// answer is a query's answer, as the client decodes it.
type answer struct{ v any }

func (a answer) HasValue() bool { return a.v != nil }
func (a answer) Get(p any) error {
	b, err := json.Marshal(a.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, p)
}

// GetEndpoint reads the stats shard before the endpoint, adds the shard's entries to the
// endpoint's own counters, and leaves out those the endpoint has merged since (a spill
// that landed between the two reads).
func TestGetEndpointCountsASpillOnce(t *testing.T) {
	c := &mocks.Client{}
	var order []string
	c.On("QueryWorkflow", mock.Anything, herald.StatsWorkflowID("ep"), "", herald.QueryStats, []string{"ep"}).
		Run(func(mock.Arguments) { order = append(order, "shard") }).
		Return(answer{[]herald.EndpointCounts{
			// In flight when the shard answered (spill 100), and counted again since (from 101 on).
			{Endpoint: "ep", Counts: herald.Report{Attempts: 5, Successes: 5}, Spill: 100},
			{Endpoint: "ep", Counts: herald.Report{Attempts: 2, Failures: 2}, Spill: 101},
		}}, nil)
	c.On("QueryWorkflow", mock.Anything, herald.EndpointWorkflowID("ep"), "", herald.QueryEndpointState).
		Run(func(mock.Arguments) { order = append(order, "endpoint") }).
		Return(answer{herald.EndpointState{ID: "ep", Registered: true,
			// Spill 100 has landed: its 5 are here.
			Counters: herald.Report{Attempts: 15, Successes: 15}, CountsSpill: 100}}, nil)
	st, err := New(c, Options{}).GetEndpoint(context.Background(), "ep")
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "shard" {
		t.Errorf("read %v, want the shard first", order)
	}
	if got := st.Counters; got.Attempts != 17 || got.Successes != 15 || got.Failures != 2 || st.CountsSpill != 0 || st.Error != "" {
		t.Errorf("counters %+v (spill %d, error %q), want 17 attempts: 15 the endpoint's, 2 the shard's", got, st.CountsSpill, st.Error)
	}
}
