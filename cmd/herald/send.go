package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

func newSendCmd(g *globals) *cobra.Command {
	var endpoint, id, typ, data string
	cmd := &cobra.Command{
		Use:   "send --endpoint ID --data JSON",
		Short: "Send an event to an endpoint",
		Long: `Send one event to a registered endpoint. Herald starts its delivery at once and retries
on the ladder until the receiver answers 2xx. Sending the same --id twice is safe: the second
send starts nothing and returns the first delivery.

--data takes JSON inline, @FILE to read a file, or - to read standard input (256 KiB at
most once compacted). The receiver gets the data exactly as given, compacted, never re-escaped.

The event's --type is checked against the catalog of event types (herald event-type
--help): data that does not match its type's JSON Schema is refused, naming where and
which rule, and so is a type that is not registered when strict types are on.`,
		Example: `  herald send --endpoint acme --type order.paid --data '{"order":42}'
  herald send --endpoint acme --id evt_order_42_paid --data @event.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := readData(data, cmd.InOrStdin())
			if err != nil {
				return err
			}
			ev := starter.Event{ID: id, EndpointID: endpoint, Type: typ, Data: json.RawMessage(raw)}
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (starter.SendResult, error) {
				res, err := s.Send(ctx, ev)
				if errors.Is(err, starter.ErrNotFound) {
					err = fmt.Errorf("%w (herald endpoint put %s --url URL)", err, endpoint)
				}
				return res, err
			}, func(w io.Writer, res starter.SendResult) error {
				follow := res.EventID
				if tenant, _, _ := herald.ParseDeliveryID(res.WorkflowID); tenant != herald.DefaultTenant {
					follow += " --tenant " + tenant
				}
				_, err := fmt.Fprintf(w, "Sent %s (workflow %s)\nFollow it: herald status %s\n", res.EventID, res.WorkflowID, follow)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&endpoint, "endpoint", "", "endpoint ID to deliver to (required)")
	f.StringVar(&id, "id", "", "event id (default: a new evt_... id); receivers deduplicate on it")
	f.StringVar(&typ, "type", "event", "event type, e.g. order.paid")
	f.StringVar(&data, "data", "", "event payload: JSON, @FILE or - for stdin (required)")
	_ = cmd.MarkFlagRequired("endpoint")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}

// readData resolves --data: inline JSON, @file or - (stdin), refusing more than the limit.
func readData(arg string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	switch {
	case arg == "-":
		r = stdin
	case strings.HasPrefix(arg, "@"):
		f, err := os.Open(arg[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: --data %s: %v", starter.ErrInvalid, arg, err)
		}
		defer f.Close()
		r = f
	default:
		return []byte(arg), nil
	}
	// The limit counts the data compacted (starter.ValidateEvent checks it); this only
	// bounds what is read, leaving room for whitespace.
	const most = 4 * herald.MaxDataBytes
	b, err := io.ReadAll(io.LimitReader(r, most+1))
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", arg, err)
	}
	if len(b) > most {
		return nil, fmt.Errorf("%w: --data %s is over %d bytes: event data may be at most 256 KiB compacted", starter.ErrTooLarge, arg, most)
	}
	return b, nil
}
