package starter

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
)

// workerKeys is what Send remembers of the keys the workers advertise.
type workerKeys struct {
	ids  map[string]bool // nil: no worker advertises its keys
	seen time.Time
}

// requireWorkerKey refuses to send with a payload key no worker holds, when the workers
// say which keys they hold (codec.Identity): such an event would wait until one does.
func (s *Client) requireWorkerKey(ctx context.Context) error {
	key := s.opts.PayloadKeyID
	if key == "" {
		return nil
	}
	ids, err := s.advertisedKeys(ctx)
	if err != nil || ids == nil {
		return nil // cannot tell: send, and the event waits if need be
	}
	if ids[key] {
		return nil
	}
	have := make([]string, 0, len(ids))
	for id := range ids {
		have = append(have, id)
	}
	sort.Strings(have)
	return fmt.Errorf("%w: no worker on task queue %s holds payload key %s (they hold: %s): give the workers the new key first (a line in their key file), then the producers", ErrInvalid, s.opts.TaskQueue, key, strings.Join(have, ", "))
}

// advertisedKeys returns the set of key ids the workers polling the task queue advertise;
// nil when none advertises its keys.
func (s *Client) advertisedKeys(ctx context.Context) (map[string]bool, error) {
	now := s.opts.Now()
	s.mu.Lock()
	wk := s.workerKeys
	s.mu.Unlock()
	if !wk.seen.IsZero() && now.Sub(wk.seen) < s.opts.EndpointCacheTTL {
		return wk.ids, nil
	}
	resp, err := s.c.DescribeTaskQueue(ctx, s.opts.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return nil, fmt.Errorf("describe task queue %s: %w", s.opts.TaskQueue, err)
	}
	var ids map[string]bool
	for _, p := range resp.GetPollers() {
		keys, ok := codec.IdentityKeyIDs(p.GetIdentity())
		if !ok {
			continue
		}
		if ids == nil {
			ids = map[string]bool{}
		}
		for _, k := range keys {
			ids[k] = true
		}
	}
	s.mu.Lock()
	s.workerKeys = workerKeys{ids: ids, seen: now}
	s.mu.Unlock()
	return ids, nil
}

// waitingForKey reports a running delivery whose payload is encrypted with a key no worker
// advertises (and so none could start it) as StateWaitingKey.
func (s *Client) waitingForKey(ctx context.Context, wfID string) (herald.Status, bool) {
	desc, err := s.c.DescribeWorkflowExecution(ctx, wfID, "")
	if err != nil {
		return herald.Status{}, false
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return herald.Status{}, false
	}
	in, err := s.startInput(ctx, wfID)
	if err != nil || len(in.GetPayloads()) == 0 {
		return herald.Status{}, false
	}
	key := codec.PayloadKeyID(in.GetPayloads()[0])
	if key == "" {
		return herald.Status{}, false
	}
	if ids, err := s.advertisedKeys(ctx); err != nil || ids == nil || ids[key] {
		return herald.Status{}, false
	}
	_, eventID, _ := herald.ParseDeliveryID(wfID)
	sa := info.GetSearchAttributes().GetIndexedFields()
	since := info.GetStartTime().AsTime()
	return herald.Status{
		Event: herald.EventSummary{
			ID:         eventID,
			EndpointID: keyword(sa[herald.AttrEndpoint.GetName()].GetData()),
			Type:       keyword(sa[herald.AttrEventType.GetName()].GetData()),
			CreatedAt:  since,
		},
		State:   herald.StateWaitingKey,
		Waiting: &herald.Waiting{Hold: herald.Hold{Reason: codec.WaitingForKey(key)}, Since: since},
	}, true
}
