package starter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// DefaultEventTypeCacheTTL is how long Send uses the catalog of event types it read
// before it reads it again (Options.EventTypeCacheTTL): a type or setting put through
// another client binds this one's sends within it.
const DefaultEventTypeCacheTTL = 5 * time.Second

// typeCache is what Send knows of the catalog: the catalog as read, and each schema
// compiled once (keyed by its text, so a changed schema compiles again and an unchanged
// one is reused across reads). One read at a time goes to Temporal; other senders wait
// for it, each as long as its own context allows.
type typeCache struct {
	mu       sync.Mutex
	read     time.Time // zero: read again before use
	catalog  herald.EventTypeCatalog
	compiled map[string]compiledSchema
	// reading is closed when the read in flight ends; nil when none is.
	reading chan struct{}
	// changes counts this client's changes to the catalog: a read that began before one
	// is not kept as fresh.
	changes int
}

// compiledSchema is a schema compiled, or why it did not compile.
type compiledSchema struct {
	s   *policy.Schema
	err error
}

// PutEventType registers an event type in the installation's catalog, or changes it, in
// one round trip that starts the catalog workflow if needed (update-with-start). A bad
// name, description or schema is refused before anything is started.
func (s *Client) PutEventType(ctx context.Context, req herald.PutEventTypeRequest) (herald.EventType, error) {
	var t herald.EventType
	if err := req.Validate(); err != nil {
		return t, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	err := s.updateCatalog(ctx, herald.UpdatePutEventType, req, &t)
	if err != nil {
		return t, fmt.Errorf("put event type %s: %w", req.Name, err)
	}
	return t, nil
}

// SetStrictTypes turns strict types on or off for the installation: when on, Send refuses
// events whose type is not in the catalog.
func (s *Client) SetStrictTypes(ctx context.Context, strict bool) (herald.EventTypeSettings, error) {
	var st herald.EventTypeSettings
	if err := s.updateCatalog(ctx, herald.UpdateEventTypeSettings, herald.EventTypeSettingsChange{StrictTypes: &strict}, &st); err != nil {
		return st, fmt.Errorf("set strict types: %w", err)
	}
	return st, nil
}

// updateCatalog sends an update to the catalog workflow, starting it if need be, and
// forgets the catalog this client read so that its next Send reads the change.
func (s *Client) updateCatalog(ctx context.Context, name string, arg, result any) error {
	_, err := s.updateWithStart(ctx, startUpdate{
		ID: herald.EventTypesID, Type: herald.EventTypesWorkflow, Summary: "the catalog of event types",
		Input: herald.EventTypesInput{}, Name: name, Arg: arg,
	}, result)
	s.types.mu.Lock()
	s.types.read = time.Time{}
	s.types.changes++
	s.types.mu.Unlock()
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return fmt.Errorf("%w: %s", ErrInvalid, appErr.Message())
	}
	return err
}

// EventTypes returns the installation's catalog: the settings and every event type,
// sorted by name, read from the catalog workflow's memo (no worker is asked). An
// installation without a catalog has no types and strict types off.
func (s *Client) EventTypes(ctx context.Context) (herald.EventTypeCatalog, error) {
	var cat herald.EventTypeCatalog
	d, err := s.c.DescribeWorkflow(ctx, herald.EventTypesID, "")
	if err != nil {
		if isNotFound(err) {
			return cat, nil
		}
		return cat, fmt.Errorf("read the catalog of event types: %w", err)
	}
	if _, ok := d.Memo.GetFields()[herald.MemoEventTypes]; !ok {
		return cat, nil // started, and nothing put yet
	}
	if err := d.GetMemoValue(herald.MemoEventTypes, &cat); err != nil {
		return cat, fmt.Errorf("read the catalog of event types: %w", err)
	}
	return cat, nil
}

// GetEventType returns one event type of the catalog.
func (s *Client) GetEventType(ctx context.Context, name string) (herald.EventType, error) {
	if err := herald.ValidateEventTypeName(name); err != nil {
		return herald.EventType{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	cat, err := s.EventTypes(ctx)
	if err != nil {
		return herald.EventType{}, err
	}
	t, ok := cat.Find(name)
	if !ok {
		return t, fmt.Errorf("%w: event type %s is not registered (herald event-type list shows those that are)", ErrNotFound, name)
	}
	return t, nil
}

// checkType checks an event against the catalog (read at most Options.EventTypeCacheTTL
// ago): its type must be registered when strict types are on, and its data must match
// its type's schema when it has one.
func (s *Client) checkType(ctx context.Context, ev Event) error {
	cat, sch, err := s.typeOf(ctx, ev.Type)
	if err != nil {
		return err
	}
	if _, ok := cat.Find(ev.Type); !ok {
		if cat.StrictTypes {
			return fmt.Errorf("%w: event type %q is not registered, and this installation accepts only registered types (strict types): register it first (herald event-type put %s, or PUT /v1/event-types/%s), or turn strict types off (herald event-type strict off, or PUT /v1/settings {\"strict_types\": false})",
				ErrInvalid, ev.Type, ev.Type, ev.Type)
		}
		return nil
	}
	if sch.err != nil {
		return fmt.Errorf("event type %s: its schema cannot be used here: %v", ev.Type, sch.err)
	}
	if sch.s == nil {
		return nil
	}
	if err := sch.s.Check(ev.Data); err != nil {
		return fmt.Errorf("%w: event %s: data does not match the schema of event type %s: %w (herald event-type get %s, or GET /v1/event-types/%s, shows the schema)", ErrInvalid, ev.ID, ev.Type, err, ev.Type, ev.Type)
	}
	return nil
}

// typeOf returns the catalog, reading it again once it is older than the TTL, and the
// compiled schema of type name (zero when it has none).
func (s *Client) typeOf(ctx context.Context, name string) (herald.EventTypeCatalog, compiledSchema, error) {
	c := &s.types
	c.mu.Lock()
	for c.read.IsZero() || s.opts.Now().Sub(c.read) >= s.opts.EventTypeCacheTTL {
		if wait := c.reading; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return herald.EventTypeCatalog{}, compiledSchema{}, fmt.Errorf("read the catalog of event types: %w", ctx.Err())
			}
			c.mu.Lock()
			continue
		}
		done, changes := make(chan struct{}), c.changes
		c.reading = done
		c.mu.Unlock()
		cat, err := s.EventTypes(ctx)
		c.mu.Lock()
		c.reading = nil
		close(done)
		if err != nil {
			c.mu.Unlock()
			return cat, compiledSchema{}, err
		}
		c.catalog = cat
		if c.changes == changes {
			c.read = s.opts.Now()
		}
		// Keep the schemas compiled before that are still in use.
		kept := make(map[string]compiledSchema, len(cat.Types))
		for _, t := range cat.Types {
			if sc, ok := c.compiled[string(t.Schema)]; ok && t.Schema != nil {
				kept[string(t.Schema)] = sc
			}
		}
		c.compiled = kept
		break
	}
	defer c.mu.Unlock()
	t, ok := c.catalog.Find(name)
	if !ok || t.Schema == nil {
		return c.catalog, compiledSchema{}, nil
	}
	sc, ok := c.compiled[string(t.Schema)]
	if !ok {
		sc.s, sc.err = policy.CompileSchema(t.Schema)
		c.compiled[string(t.Schema)] = sc
	}
	return c.catalog, sc, nil
}
