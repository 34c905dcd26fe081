package starter

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

func TestValidateEventData(t *testing.T) {
	max := herald.MaxDataBytes
	lt := func(n int) string { return `"` + strings.Repeat("<", n-2) + `"` } // n bytes of JSON
	padded := `{"a":` + lt(max-6) + strings.Repeat(" ", 64<<10) + `}`        // max bytes once compacted
	tests := []struct {
		name, data, want string
		err              error
	}{
		{name: "kept as sent", data: `{"x":"<&>"}`, want: `{"x":"<&>"}`},
		{name: "escapes kept", data: `{"x":"\u003c"}`, want: `{"x":"\u003c"}`},
		{name: "compacted", data: " { \"x\" : [ 1 , 2 ] }\n", want: `{"x":[1,2]}`},
		{name: "limit exactly", data: lt(max), want: lt(max)},
		{name: "limit counts compacted bytes", data: padded, want: `{"a":` + lt(max-6) + `}`},
		{name: "over the limit", data: lt(max + 1), err: ErrTooLarge},
		{name: "empty", data: "", err: ErrInvalid},
		{name: "blank", data: "  \n", err: ErrInvalid},
		{name: "not JSON", data: `{"x":`, err: ErrInvalid},
		{name: "not UTF-8", data: "\"\xff\"", err: ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := Event{EndpointID: "acme", Type: "order.paid", Data: json.RawMessage(tc.data)}
			err := ValidateEvent(&ev, time.Now())
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(ev.Data) != tc.want {
				t.Errorf("data = %.60q (%d bytes), want %.60q (%d bytes)", ev.Data, len(ev.Data), tc.want, len(tc.want))
			}
		})
	}
}

// TestValidateEventType: every send needs a type in the grammar of types; none is made up.
func TestValidateEventType(t *testing.T) {
	for typ, says := range map[string]string{
		"":            "event type is empty",
		`a' b\`:       `contains '\''`,
		"a\xffb":      "not valid UTF-8",
		"ordér.paid":  "contains 'é'",
		"order.*":     "contains '*'",
		"order\npaid": `contains '\n'`,
	} {
		ev := Event{EndpointID: "acme", Type: typ, Data: json.RawMessage(`{}`)}
		err := ValidateEvent(&ev, time.Now())
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), says) {
			t.Errorf("type %q: err = %v, want ErrInvalid saying %q", typ, err, says)
		}
		if ev.Type != typ {
			t.Errorf("type %q became %q", typ, ev.Type)
		}
	}
}

// TestEventDataSurvivesJSON checks that an event's data comes out of Temporal's JSON payloads
// byte for byte, and that histories written with raw data still read.
func TestEventDataSurvivesJSON(t *testing.T) {
	for _, data := range []string{`{"x":"<&>"}`, "\"\u2028\"", `{"x":"\u003c"}`, `[1,2]`, `"plain"`} {
		b, err := json.Marshal(herald.DeliveryInput{Event: Event{ID: "evt_1", Data: json.RawMessage(data)}})
		if err != nil {
			t.Fatal(err)
		}
		var in herald.DeliveryInput
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		if string(in.Event.Data) != data || in.Event.ID != "evt_1" {
			t.Errorf("%s came back as %s (payload %s)", data, in.Event.Data, b)
		}
	}
	var old Event
	if err := json.Unmarshal([]byte(`{"id":"evt_1","endpoint_id":"a","type":"t","data":{"order":42},"created_at":"2026-01-02T03:04:05Z"}`), &old); err != nil {
		t.Fatal(err)
	}
	if string(old.Data) != `{"order":42}` || old.EndpointID != "a" || old.CreatedAt.IsZero() {
		t.Errorf("an event of an earlier history reads as %+v", old)
	}
}

func TestBulkReplayBounds(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := New(nil, Options{Now: func() time.Time { return now }}) // refused before any call to Temporal
	tests := []struct {
		name string
		in   herald.BulkReplayInput
		want string
	}{
		{"in 31 days", herald.BulkReplayInput{At: now.Add(31 * 24 * time.Hour)}, "at most 30 days"},
		{"until before since", herald.BulkReplayInput{Filter: herald.DeadLetterFilter{Since: now, Until: now.Add(-time.Hour)}}, "until (2026-11-30T11:00:00Z) is before since"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.BulkReplay(context.Background(), tt.in)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "--") {
				t.Fatalf("error %v, want an invalid-input error containing %q and no flag name", err, tt.want)
			}
		})
	}
}
