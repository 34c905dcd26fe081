package herald

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxSampleEvent bounds a sample event (ParseSampleEvent).
const MaxSampleEvent = 64 << 10

// SampleEventID is the id of a sample event that gives none.
const SampleEventID = "evt_sample"

// ParseSampleEvent reads a sample event to test an endpoint's filter and transformation
// against (the dashboard's test form): a JSON object of at most MaxSampleEvent bytes with a
// type in the event type grammar, data (any JSON value; absent is null) and optionally an
// id in the event id grammar (SampleEventID when absent). Nothing else is taken.
func ParseSampleEvent(text string) (Event, error) {
	var s struct {
		ID   string          `json:"id"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if len(text) > MaxSampleEvent {
		return Event{}, fmt.Errorf("the sample is %d bytes long; the limit is %d", len(text), MaxSampleEvent)
	}
	if !utf8.ValidString(text) {
		return Event{}, errors.New("the sample is not UTF-8 text")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Event{}, fmt.Errorf(`not a sample event: %s; give {"type": "order.paid", "data": {...}} and optionally "id"`, clip(err.Error()))
	}
	if dec.More() {
		return Event{}, errors.New("data after the sample event's JSON object")
	}
	if err := ValidateEventTypeName(s.Type); err != nil {
		return Event{}, fmt.Errorf("type: %v", err)
	}
	if s.ID == "" {
		s.ID = SampleEventID
	} else if err := ValidateEventID(s.ID); err != nil {
		return Event{}, fmt.Errorf("id: %v", err)
	}
	if len(bytes.TrimSpace(s.Data)) == 0 {
		s.Data = json.RawMessage("null")
	}
	return Event{ID: s.ID, Type: s.Type, Data: s.Data}, nil
}
