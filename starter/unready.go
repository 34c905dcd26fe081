package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
)

// unreadyPatience is how long an update refused because its workflow task failed is tried
// again. A namespace whose search attributes were just registered is the usual cause: the
// frontend knows them at once, history within its namespace refresh (10 s by default), and
// until then the workflow task that upserts them fails and the server refuses the update.
const unreadyPatience = 30 * time.Second

// whenReady runs update, running it again while the server refuses it with
// WorkflowNotReady (its workflow task failed), backing off from 250 ms to 4 s for at most
// patience. The workflow retries a failed task by itself, so a transient cause heals; a
// persistent one (a worker bug) is returned with what to check.
func whenReady(ctx context.Context, patience time.Duration, update func() error) error {
	deadline := time.Now().Add(patience)
	delay := 250 * time.Millisecond
	for {
		err := update()
		var unready *serviceerror.WorkflowNotReady
		if err == nil || !errors.As(err, &unready) {
			return err
		}
		if time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("%w (still refused after %s: the workflow's task keeps failing, and the worker's log says why; just after herald namespace setup, history may not know the new search attributes yet: try again in a few seconds)", err, patience)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 4*time.Second)
	}
}
