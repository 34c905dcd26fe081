package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
)

// eventTypesContinueAsNewEvents: past this many history events the catalog continues as new.
const eventTypesContinueAsNewEvents = 2000

// EventTypesWorkflow is the installation's catalog of event types (herald.EventTypesID):
// it registers and changes types and settings through updates and publishes the catalog
// in its memo (herald.MemoEventTypes) after each change.
func EventTypesWorkflow(ctx workflow.Context, in herald.EventTypesInput) error {
	cat := in.Catalog
	publish := func() error {
		return workflow.UpsertMemo(ctx, map[string]any{herald.MemoEventTypes: cat})
	}
	if err := workflow.SetQueryHandler(ctx, herald.QueryEventTypes, func() (herald.EventTypeCatalog, error) {
		return cat, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, herald.UpdatePutEventType,
		func(ctx workflow.Context, req herald.PutEventTypeRequest) (herald.EventType, error) {
			t := cat.Put(req, workflow.Now(ctx))
			return t, publish()
		},
		// The starter compiled the schema (PutEventTypeRequest.Validate); the validator
		// checks only what is linear in the request's size.
		workflow.UpdateHandlerOptions{Validator: func(req herald.PutEventTypeRequest) error {
			if err := req.ValidateShape(); err != nil {
				return err
			}
			if _, ok := cat.Find(req.Name); !ok && req.ClearSchema {
				return fmt.Errorf("event type %s is not registered: there is no schema to clear", req.Name)
			}
			return cat.CheckPut(req)
		}}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, herald.UpdateEventTypeSettings,
		func(ctx workflow.Context, c herald.EventTypeSettingsChange) (herald.EventTypeSettings, error) {
			if c.StrictTypes != nil {
				cat.StrictTypes = *c.StrictTypes
			}
			cat.UpdatedAt = workflow.Now(ctx)
			return cat.EventTypeSettings, publish()
		}); err != nil {
		return err
	}
	if len(cat.Types) > 0 || cat.StrictTypes {
		// A run continued as new publishes what it carries (the memo carries over too;
		// this keeps the two equal whatever the server does).
		if err := publish(); err != nil {
			return err
		}
	}
	return continueWhenLong(ctx, eventTypesContinueAsNewEvents, herald.EventTypesWorkflow, func() herald.EventTypesInput {
		return herald.EventTypesInput{Catalog: cat}
	})
}
