package starter

import (
	"context"

	"github.com/heraldhq/herald"
)

// awaitIndexed waits until the tenant's sends find each of eps as its put left it.
func (s *Client) awaitIndexed(ctx context.Context, eps ...herald.Endpoint) error {
	for _, ep := range eps {
		if err := s.subscribe(ctx, ep); err != nil {
			return err
		}
	}
	return nil
}
