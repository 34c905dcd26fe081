package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

func newEventTypeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "event-type",
		Short: "Register and list event types (order.paid, ...), with an optional JSON Schema",
		Long: `The catalog of event types says what events this installation sends: a name, a
description and, optionally, a JSON Schema that every event of the type must match.
herald send (and the API, and starter.Send) checks each event against it:

  - data that does not match its type's schema is refused, naming the failing place in
    the data and the rule of the schema, and nothing is sent;
  - a type that is not in the catalog is accepted, unless strict types are on
    (herald event-type strict on), in which case it is refused.

Names are 1 to 255 letters, digits, '.', '_' and '-' (e.g. order.paid). A running
producer reads the catalog again every 5 seconds at most: a change binds every producer
within that time (the one that made it, at once).`,
	}
	cmd.AddCommand(newEventTypePutCmd(g), newEventTypeGetCmd(g), newEventTypeListCmd(g), newEventTypeStrictCmd(g))
	return cmd
}

func newEventTypePutCmd(g *globals) *cobra.Command {
	var description, schema string
	var clearSchema bool
	cmd := &cobra.Command{
		Use:   "put NAME [--description TEXT] [--schema FILE|-]",
		Short: "Register an event type, or change one",
		Long: `Register the event type NAME, or change it. A change keeps what it does not give: a put
with only --description keeps the schema.

--schema takes a JSON Schema (draft 2020-12 unless its $schema names draft 4, 6, 7 or
2019-09) from a file, or - for standard input; at most 64 KiB, objects and arrays nested
at most 64 deep, and at most 20000 subschemas once every $ref is replaced by what it refers
to. It is checked when put: a schema that is not valid or over a bound is refused with the
reason. A schema may refer only inside itself ("$ref": "#/$defs/..."), and never back to a
schema that contains the reference (recursive schemas are refused); nothing is fetched.
"format" is checked ("email", "date-time", ...). --clear-schema removes the schema: any
data is accepted again.

The whole catalog (names, descriptions, schemas) holds at most 1 MiB.`,
		Example: `  herald event-type put order.paid --description "An order was paid in full"
  herald event-type put order.paid --schema order.paid.schema.json
  echo '{"type":"object","required":["order"]}' | herald event-type put order.paid --schema -
  herald event-type put order.paid --clear-schema`,
		Args: exactArgs(1, `give the type's NAME, e.g. herald event-type put order.paid --description "..."`),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := herald.PutEventTypeRequest{Name: args[0], ClearSchema: clearSchema}
			if cmd.Flags().Changed("description") {
				req.Description = &description
			}
			if schema != "" {
				b, err := readSchema(schema, cmd.InOrStdin())
				if err != nil {
					return err
				}
				req.Schema = b
			}
			// Checked before dialing, so that bad input fails fast; PutEventType checks again.
			if err := req.Validate(); err != nil {
				return fmt.Errorf("%w: %v", starter.ErrInvalid, err)
			}
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (herald.EventType, error) {
				return s.PutEventType(ctx, req)
			}, func(w io.Writer, t herald.EventType) error {
				verb := "Updated"
				if t.Version == 1 {
					verb = "Registered"
				}
				schema := "no schema (any data)"
				if t.Schema != nil {
					schema = fmt.Sprintf("a schema of %d bytes", len(t.Schema))
				}
				_, err := fmt.Fprintf(w, "%s event type %s (version %d), %s\n", verb, t.Name, t.Version, schema)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&description, "description", "", "what an event of this type means (at most 1024 bytes)")
	f.StringVar(&schema, "schema", "", "JSON Schema the data must match: a FILE, or - for stdin")
	f.BoolVar(&clearSchema, "clear-schema", false, "remove the type's schema")
	return cmd
}

// readSchema reads --schema: a file, or - for stdin, at most four times the limit (the
// limit counts the schema compacted; PutEventTypeRequest.Validate checks it).
func readSchema(arg string, stdin io.Reader) ([]byte, error) {
	b, err := readBounded("schema", arg, arg, stdin, 4*herald.MaxSchemaBytes, starter.ErrInvalid,
		"a schema may be at most 64 KiB compacted")
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%w: --schema %s is empty: give a JSON Schema, e.g. {\"type\":\"object\"}", starter.ErrInvalid, arg)
	}
	return b, nil
}

func newEventTypeGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "get NAME",
		Short:   "Show an event type: description, versions and schema",
		Example: `  herald event-type get order.paid`,
		Args:    exactArgs(1, "give the type's NAME, e.g. herald event-type get order.paid"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (herald.EventType, error) {
				return s.GetEventType(ctx, args[0])
			}, printEventType)
		},
	}
}

func printEventType(w io.Writer, t herald.EventType) error {
	fmt.Fprintf(w, "Event type   %s\n", t.Name)
	if t.Description != "" {
		fmt.Fprintf(w, "Description  %s\n", t.Description)
	}
	fmt.Fprintf(w, "Version      %d, created %s, updated %s\n", t.Version, fmtTime(t.CreatedAt), fmtTime(t.UpdatedAt))
	if t.Schema == nil {
		_, err := fmt.Fprintln(w, "Schema       none: any data is accepted")
		return err
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, t.Schema, "  ", "  "); err != nil {
		pretty.Reset()
		pretty.Write(t.Schema)
	}
	_, err := fmt.Fprintf(w, "Schema\n  %s\n", pretty.String())
	return err
}

// eventTypeList is what event-type list prints with -o json.
type eventTypeList struct {
	StrictTypes bool               `json:"strict_types"`
	EventTypes  []herald.EventType `json:"event_types"`
}

func newEventTypeListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the event types, and whether strict types are on",
		Example: `  herald event-type list
  herald event-type list -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (eventTypeList, error) {
				cat, err := s.EventTypes(ctx)
				out := eventTypeList{StrictTypes: cat.StrictTypes, EventTypes: cat.Types}
				if out.EventTypes == nil {
					out.EventTypes = []herald.EventType{}
				}
				return out, err
			}, func(w io.Writer, l eventTypeList) error {
				fmt.Fprintf(w, "Strict types %s\n", onOff(l.StrictTypes))
				if len(l.EventTypes) == 0 {
					_, err := fmt.Fprintln(w, "No event types yet. Register one: "+g.herald("event-type", "put", "order.paid", "--description", "TEXT"))
					return err
				}
				fmt.Fprintln(w)
				tw := newTable(w, "NAME", "VERSION", "SCHEMA", "UPDATED", "DESCRIPTION")
				for _, t := range l.EventTypes {
					schema := "-"
					if t.Schema != nil {
						schema = fmt.Sprintf("%d B", len(t.Schema))
					}
					tw.row(t.Name, t.Version, schema, fmtTime(t.UpdatedAt), oneLine(t.Description, 60))
				}
				return tw.flush()
			})
		},
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func newEventTypeStrictCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "strict on|off",
		Short: "Refuse (on) or accept (off) events whose type is not registered",
		Long: `With strict types on, herald send, the API and starter.Send refuse an event whose type
is not in the catalog, saying how to register it. Off (the default), any type is
accepted and only registered types with a schema are checked. Producers already running
apply the change within 5 seconds. (herald settings --strict-types does the same.)`,
		Example: `  herald event-type strict on
  herald event-type strict off`,
		Args: exactArgs(1, "say on or off, e.g. herald event-type strict on"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var strict bool
			switch args[0] {
			case "on":
				strict = true
			case "off":
			default:
				return fmt.Errorf("%w: herald event-type strict %q: say on or off", errUsage, args[0])
			}
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (herald.EventTypeSettings, error) {
				return s.SetStrictTypes(ctx, strict)
			}, func(w io.Writer, st herald.EventTypeSettings) error {
				msg := "Strict types off: events of any type are accepted."
				if st.StrictTypes {
					msg = "Strict types on: events whose type is not registered are refused."
				}
				_, err := fmt.Fprintln(w, msg)
				return err
			})
		},
	}
}

func newSettingsCmd(g *globals) *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "settings [--strict-types=true|false]",
		Short: "Show the installation's settings, or change them",
		Long: `Show the installation's settings, or change those given. --strict-types refuses events
whose type is not in the catalog of event types (the same as herald event-type strict on);
--strict-types=false accepts any type again. Producers already running apply a change
within 5 seconds.`,
		Example: `  herald settings
  herald settings --strict-types
  herald settings --strict-types=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			change := cmd.Flags().Changed("strict-types")
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (herald.EventTypeSettings, error) {
				if change {
					return s.SetStrictTypes(ctx, strict)
				}
				cat, err := s.EventTypes(ctx)
				return cat.EventTypeSettings, err
			}, func(w io.Writer, st herald.EventTypeSettings) error {
				_, err := fmt.Fprintf(w, "Strict types  %s\n", onOff(st.StrictTypes))
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&strict, "strict-types", false, "refuse events whose type is not registered (false: accept any type)")
	return cmd
}
