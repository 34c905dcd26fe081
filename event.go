package herald

import (
	"encoding/json"
	"time"
)

// Event is what a producer hands Herald: one message for one endpoint.
type Event struct {
	ID         string          `json:"id"`
	EndpointID string          `json:"endpoint_id"`
	Type       string          `json:"type"`
	Data       json.RawMessage `json:"data"`
	CreatedAt  time.Time       `json:"created_at,omitzero"`
	// OrderingKey, when set, orders the event's delivery after the earlier ones sent to the
	// same endpoint with the same key (see ordering.go; ValidateOrderingKey).
	OrderingKey string `json:"ordering_key,omitempty"`
}

// eventJSON is an Event as Temporal's payloads carry it. The data travels as a JSON string
// (data_text) holding the producer's bytes: Temporal's JSON converter escapes <, > and & in
// a raw JSON value for HTML (\u003c, six bytes each) and the receiver would get those
// escapes, while a string's escapes decode back to exactly the bytes sent. Data (data) is
// the raw form, as producers write an event in JSON.
type eventJSON struct {
	ID          string          `json:"id"`
	EndpointID  string          `json:"endpoint_id"`
	Type        string          `json:"type"`
	DataText    *string         `json:"data_text,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
	CreatedAt   time.Time       `json:"created_at,omitzero"`
	OrderingKey string          `json:"ordering_key,omitempty"`
}

// MarshalJSON writes the event with its data as a string, so that its bytes survive any
// JSON encoder unchanged.
func (e Event) MarshalJSON() ([]byte, error) {
	text := string(e.Data)
	return json.Marshal(eventJSON{ID: e.ID, EndpointID: e.EndpointID, Type: e.Type, DataText: &text, CreatedAt: e.CreatedAt, OrderingKey: e.OrderingKey})
}

// UnmarshalJSON reads what MarshalJSON writes, and an event with its data raw, as
// producers write it.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Event{ID: j.ID, EndpointID: j.EndpointID, Type: j.Type, Data: j.Data, CreatedAt: j.CreatedAt, OrderingKey: j.OrderingKey}
	if j.DataText != nil {
		e.Data = json.RawMessage(*j.DataText)
	}
	return nil
}

// Summary is the event without its payload.
func (e Event) Summary() EventSummary {
	return EventSummary{ID: e.ID, EndpointID: e.EndpointID, Type: e.Type, CreatedAt: e.CreatedAt}
}

// EventSummary is an event without its payload.
type EventSummary struct {
	ID         string    `json:"id"`
	EndpointID string    `json:"endpoint_id"`
	Type       string    `json:"type"`
	CreatedAt  time.Time `json:"created_at,omitzero"`
}
