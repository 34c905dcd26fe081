package activities

import (
	"encoding/json"
	"testing"
)

// Histories recorded before ReplayCount hold the bare count as the activity's result.
func TestReplayCountReadsTheOldBareCount(t *testing.T) {
	for in, want := range map[string]ReplayCount{
		`3`:                       {Replayed: 3},
		`{"replayed":2,"gone":1}`: {Replayed: 2, Gone: 1},
		`{"replayed":0}`:          {},
	} {
		var got ReplayCount
		if err := json.Unmarshal([]byte(in), &got); err != nil || got != want {
			t.Errorf("%s: got %+v, %v; want %+v", in, got, err, want)
		}
	}
}
