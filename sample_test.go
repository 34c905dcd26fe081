package herald

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseSampleEvent(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{`{"type": "order.paid", "data": {"n": 1}}`, ""},
		{`{"type": "order.paid", "id": "evt_9"}`, ""},
		{`{"type": "order paid"}`, "type:"},
		{`{"type": "order.paid", "id": "a b"}`, "id:"},
		{`{"type": "order.paid", "x": 1}`, `unknown field "x"`},
		{`{"type": "order.paid"} {}`, "data after"},
		{"\xff", "not UTF-8"},
		{strings.Repeat(" ", MaxSampleEvent+1), "the limit is"},
	} {
		_, err := ParseSampleEvent(c.in)
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%.40q: %v, want %q", c.in, err, c.err)
		}
	}
}

// FuzzParseSampleEvent: whatever the text, a sample taken has a valid type and id and JSON
// data, and an error never echoes more than a bounded piece of the text.
func FuzzParseSampleEvent(f *testing.F) {
	f.Add(`{"type": "order.paid", "data": {"n": 1}}`)
	f.Add(`{"type": "order.paid", "id": "evt_1", "data": null}`)
	f.Add(`{"type": "a.*"}`)
	f.Add(`{"id": "<script>"}`)
	f.Fuzz(func(t *testing.T, text string) {
		ev, err := ParseSampleEvent(text)
		if err != nil {
			if len(err.Error()) > 2*maxLineError {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if ValidateEventTypeName(ev.Type) != nil || ValidateEventID(ev.ID) != nil || !json.Valid(ev.Data) {
			t.Fatalf("sample taken with type %q, id %q, data %q", ev.Type, ev.ID, ev.Data)
		}
	})
}
