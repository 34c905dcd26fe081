package herald

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/policy"
)

// The catalog of event types: one workflow per installation (namespace), EventTypesID,
// on the endpoints' task queue. It holds every registered type and the installation's
// settings, and publishes them in its memo (MemoEventTypes) after each change, so that
// senders read it with a describe that no worker serves.
const (
	// EventTypesWorkflow is the workflow type of the catalog of event types.
	EventTypesWorkflow = "EventTypes"
	// EventTypesID is the workflow id of the catalog (one per namespace).
	EventTypesID = "event-types"
	// UpdatePutEventType registers or changes an event type (PutEventTypeRequest → EventType).
	UpdatePutEventType = "put-event-type"
	// UpdateEventTypeSettings changes the installation's settings
	// (EventTypeSettingsChange → EventTypeSettings).
	UpdateEventTypeSettings = "event-type-settings"
	// QueryEventTypes returns the catalog (EventTypeCatalog).
	QueryEventTypes = "event-types"
	// MemoEventTypes is the memo field where the catalog workflow publishes its
	// EventTypeCatalog after every change.
	MemoEventTypes = "event-types"
)

// Limits of the catalog. Everything in it travels in one memo (Temporal refuses one over
// 2 MB); MaxCatalogBytes keeps it well under.
const (
	// MaxEventTypeName is the longest event type name, in bytes.
	MaxEventTypeName = 255
	// MaxEventTypeDescription is the longest description, in bytes.
	MaxEventTypeDescription = 1024
	// MaxSchemaBytes is the largest JSON Schema of one type, compacted.
	MaxSchemaBytes = 64 << 10
	// MaxCatalogBytes is the largest catalog, every type's name, description and schema
	// included, as JSON.
	MaxCatalogBytes = 1 << 20
)

// EventType is one type of event in the catalog.
type EventType struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Schema is the JSON Schema the data of events of this type must match; nil: any data.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Version counts the puts of this type, from 1.
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// EventTypeSettings are the installation's settings kept with the catalog.
type EventTypeSettings struct {
	// StrictTypes refuses to send events whose type is not in the catalog.
	StrictTypes bool      `json:"strict_types"`
	UpdatedAt   time.Time `json:"updated_at,omitzero"`
}

// EventTypeCatalog is the whole catalog: the settings and the types, sorted by name.
type EventTypeCatalog struct {
	EventTypeSettings
	Types []EventType `json:"types"`
}

// Find returns the type named name.
func (c *EventTypeCatalog) Find(name string) (EventType, bool) {
	i, ok := c.search(name)
	if !ok {
		return EventType{}, false
	}
	return c.Types[i], true
}

func (c *EventTypeCatalog) search(name string) (int, bool) {
	return slices.BinarySearchFunc(c.Types, name, func(t EventType, name string) int { return strings.Compare(t.Name, name) })
}

// Put applies a checked request at now and returns the type as stored: a new type gets
// version 1, a change keeps what the request does not name.
func (c *EventTypeCatalog) Put(req PutEventTypeRequest, now time.Time) EventType {
	i, ok := c.search(req.Name)
	if !ok {
		c.Types = slices.Insert(c.Types, i, EventType{Name: req.Name, CreatedAt: now})
	}
	t := &c.Types[i]
	if req.Description != nil {
		t.Description = *req.Description
	}
	switch {
	case req.ClearSchema:
		t.Schema = nil
	case req.Schema != nil:
		t.Schema = req.Schema
	}
	t.Version++
	t.UpdatedAt = now
	return *t
}

// CheckPut checks that req fits in the catalog once applied (MaxCatalogBytes), on a copy.
func (c EventTypeCatalog) CheckPut(req PutEventTypeRequest) error {
	c.Types = slices.Clone(c.Types)
	c.Put(req, time.Time{})
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if len(b) > MaxCatalogBytes {
		return fmt.Errorf("event type %s: the catalog would be %d bytes as JSON; the limit is %d (1 MiB): shorten descriptions or schemas",
			req.Name, len(b), MaxCatalogBytes)
	}
	return nil
}

// PutEventTypeRequest registers an event type or changes it. A field left out keeps what
// is stored.
type PutEventTypeRequest struct {
	Name string `json:"name"`
	// Description, when set, replaces the description ("" clears it).
	Description *string `json:"description,omitempty"`
	// Schema, when set, replaces the JSON Schema (compacted by Validate).
	Schema json.RawMessage `json:"schema,omitempty"`
	// ClearSchema removes the schema: any data is accepted again.
	ClearSchema bool `json:"clear_schema,omitempty"`
}

// Validate checks the request on its own and compacts its schema: the name, the
// description's length, and that the schema is a JSON Schema Herald can use.
func (r *PutEventTypeRequest) Validate() error {
	if err := ValidateEventTypeName(r.Name); err != nil {
		return err
	}
	if d := r.Description; d != nil {
		if len(*d) > MaxEventTypeDescription {
			return fmt.Errorf("event type %s: the description is %d bytes long: use at most %d", r.Name, len(*d), MaxEventTypeDescription)
		}
		if !utf8.ValidString(*d) {
			return fmt.Errorf("event type %s: the description is not valid UTF-8", r.Name)
		}
	}
	if r.Schema == nil {
		return nil
	}
	if r.ClearSchema {
		return fmt.Errorf("event type %s: give a schema or clear it, not both", r.Name)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, r.Schema); err != nil {
		return fmt.Errorf("event type %s: the schema is not valid JSON: %v", r.Name, err)
	}
	if compact.Len() > MaxSchemaBytes {
		return fmt.Errorf("event type %s: the schema is %d bytes compacted; the limit is %d (64 KiB)", r.Name, compact.Len(), MaxSchemaBytes)
	}
	if _, err := policy.CompileSchema(compact.Bytes()); err != nil {
		return fmt.Errorf("event type %s: %w", r.Name, err)
	}
	r.Schema = compact.Bytes()
	return nil
}

// EventTypeSettingsChange changes some of the installation's settings; nil fields keep
// what is stored.
type EventTypeSettingsChange struct {
	StrictTypes *bool `json:"strict_types,omitempty"`
}

// ValidateEventTypeName checks an event type's name against the grammar of types
// (policy.ValidateEventType): 1 to 255 ASCII letters, digits, '-', '_' and '.', e.g.
// order.paid. Sends, catalog entries and search filters all use it.
func ValidateEventTypeName(name string) error { return policy.ValidateEventType(name) }
