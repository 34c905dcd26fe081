package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// maxEventTypeBody bounds the body of an event type put: the schema limit counts the
// schema compacted, so this leaves room for whitespace around it.
const maxEventTypeBody = 4*herald.MaxSchemaBytes + 16<<10

// eventTypeList answers GET /v1/event-types.
type eventTypeList struct {
	StrictTypes bool               `json:"strict_types"`
	EventTypes  []herald.EventType `json:"event_types"`
}

// eventTypeBody is the body of PUT /v1/event-types/{name}; absent fields keep what is stored.
type eventTypeBody struct {
	Description *string         `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	ClearSchema bool            `json:"clear_schema,omitempty"`
}

// newEventTypeBody is the body of POST /v1/event-types: a put with the name in the body.
type newEventTypeBody struct {
	Name string `json:"name"`
	eventTypeBody
}

// settingsBody is the body of PUT /v1/settings.
type settingsBody struct {
	StrictTypes *bool `json:"strict_types"`
}

func (s *Server) apiListEventTypes(ctx context.Context, _ http.ResponseWriter, _ *http.Request, _ principal) (int, any, error) {
	cat, err := s.opts.Starter.EventTypes(ctx)
	if err != nil {
		return 0, nil, err
	}
	out := eventTypeList{StrictTypes: cat.StrictTypes, EventTypes: cat.Types}
	if out.EventTypes == nil {
		out.EventTypes = []herald.EventType{}
	}
	return http.StatusOK, out, nil
}

func (s *Server) apiGetEventType(ctx context.Context, _ http.ResponseWriter, r *http.Request, _ principal) (int, any, error) {
	t, err := s.opts.Starter.GetEventType(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, t, nil
}

func (s *Server) apiPutEventType(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	var body eventTypeBody
	if err := operatorBody(w, r, p, "registering or changing event types", maxEventTypeBody, &body); err != nil {
		return 0, nil, err
	}
	return s.putEventType(ctx, r.PathValue("name"), body)
}

func (s *Server) apiPostEventType(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	var body newEventTypeBody
	if err := operatorBody(w, r, p, "registering or changing event types", maxEventTypeBody, &body); err != nil {
		return 0, nil, err
	}
	if body.Name == "" {
		return 0, nil, fmt.Errorf("%w: name is missing: name the event type, e.g. order.paid", starter.ErrInvalid)
	}
	return s.putEventType(ctx, body.Name, body.eventTypeBody)
}

// putEventType puts an event type and answers 201 when it was registered, 200 when changed.
func (s *Server) putEventType(ctx context.Context, name string, body eventTypeBody) (int, any, error) {
	if string(body.Schema) == "null" {
		return 0, nil, fmt.Errorf("%w: schema is null: to remove the schema send \"clear_schema\": true", starter.ErrInvalid)
	}
	t, err := s.opts.Starter.PutEventType(ctx, herald.PutEventTypeRequest{
		Name: name, Description: body.Description, Schema: body.Schema, ClearSchema: body.ClearSchema,
	})
	if err != nil {
		return 0, nil, err
	}
	if t.Version == 1 {
		return http.StatusCreated, t, nil
	}
	return http.StatusOK, t, nil
}

func (s *Server) apiGetSettings(ctx context.Context, _ http.ResponseWriter, _ *http.Request, _ principal) (int, any, error) {
	cat, err := s.opts.Starter.EventTypes(ctx)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, cat.EventTypeSettings, nil
}

func (s *Server) apiPutSettings(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	var body settingsBody
	if err := operatorBody(w, r, p, "changing the installation's settings", maxBody, &body); err != nil {
		return 0, nil, err
	}
	if body.StrictTypes == nil {
		return 0, nil, fmt.Errorf("%w: strict_types is missing: send {\"strict_types\": true} or false", starter.ErrInvalid)
	}
	st, err := s.opts.Starter.SetStrictTypes(ctx, *body.StrictTypes)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, st, nil
}

// operatorBody decodes the JSON body of a request only operator tokens may make (what
// says what it does, for the refusal) into body, at most limit bytes.
func operatorBody(w http.ResponseWriter, r *http.Request, p principal, what string, limit int64, body any) error {
	if err := operatorOnly(p, what); err != nil {
		return err
	}
	return decode(w, r, limit, body)
}

// operatorOnly refuses what only operator tokens may do.
func operatorOnly(p principal, what string) error {
	if !p.operator() {
		return fmt.Errorf("%w: %s needs an operator token; ask your Herald operator", errForbidden, what)
	}
	return nil
}
