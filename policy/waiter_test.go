package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWaiterReplyJSON(t *testing.T) {
	// Replies written before the outcome field: the booleans decide.
	for old, want := range map[string]WaiterOutcome{
		`{"waiter":"w","covered":true}`:                           WaiterCovered,
		`{"waiter":"w","granted":true,"ticket":{"epoch":1}}`:      WaiterGranted,
		`{"waiter":"w","queued":true,"position":2}`:               WaiterQueued,
		`{"waiter":"w","reason":"the queue is full (9 waiting)"}`: WaiterRefused,
	} {
		var r WaiterReply
		if err := json.Unmarshal([]byte(old), &r); err != nil {
			t.Fatal(err)
		}
		if r.Outcome != want || r.Waiter != "w" {
			t.Errorf("%s decodes to %+v, want outcome %s", old, r, want)
		}
	}
	// Replies written now carry the outcome and, for older gates, its boolean.
	for _, o := range []WaiterOutcome{WaiterCovered, WaiterGranted, WaiterQueued, WaiterRefused} {
		b, err := json.Marshal(WaiterReply{Waiter: "w", Outcome: o, Position: 3})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"outcome":"`+string(o)+`"`) ||
			(o != WaiterRefused && !strings.Contains(string(b), `"`+string(o)+`":true`)) {
			t.Errorf("%s encodes to %s", o, b)
		}
		var r WaiterReply
		if err := json.Unmarshal(b, &r); err != nil || r != (WaiterReply{Waiter: "w", Outcome: o, Position: 3}) {
			t.Errorf("%s round-trips to %+v, %v", b, r, err)
		}
	}
}
