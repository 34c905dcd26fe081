package codec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// MetricMissingKey counts payloads a worker could not decrypt for want of their key, by key
// id (a counter, reported through the Temporal SDK's metrics handler).
const MetricMissingKey = "herald_payload_key_missing"

// WaitingForKey is the message of a delivery whose payload no worker so far could decrypt.
func WaitingForKey(keyID string) string {
	return fmt.Sprintf("waiting for a worker with payload key %s", keyID)
}

// keyedConverter is the codec data converter. In workflow code, a payload encrypted with
// a key this worker lacks does not fail the workflow: it panics, which (with the SDK's
// default WorkflowPanicPolicy, BlockWorkflow) fails the workflow task instead, so Temporal
// retries it until a worker holding the key picks it up.
type keyedConverter struct {
	converter.DataConverter
}

var _ converter.ContextAware = keyedConverter{}

// WithWorkflowContext returns the converter used by workflow code.
func (k keyedConverter) WithWorkflowContext(ctx converter.WorkflowContext) converter.DataConverter {
	if ctx == nil {
		return k
	}
	return workflowConverter{DataConverter: k.DataConverter, ctx: ctx}
}

// WithContext returns k: activities and clients get the errors as they are.
func (k keyedConverter) WithContext(context.Context) converter.DataConverter { return k }

// workflowConverter blocks the workflow task on a missing key (see keyedConverter).
type workflowConverter struct {
	converter.DataConverter
	ctx workflow.Context
}

func (w workflowConverter) FromPayload(p *commonpb.Payload, valuePtr any) error {
	return w.check(w.DataConverter.FromPayload(p, valuePtr))
}

func (w workflowConverter) FromPayloads(p *commonpb.Payloads, valuePtrs ...any) error {
	return w.check(w.DataConverter.FromPayloads(p, valuePtrs...))
}

func (w workflowConverter) check(err error) error {
	var missing *MissingKeyError
	if !errors.As(err, &missing) {
		return err
	}
	info := workflow.GetInfo(w.ctx)
	workflow.GetLogger(w.ctx).Error(WaitingForKey(missing.KeyID)+": this worker cannot decrypt the workflow's payloads; the workflow task fails and is retried until a worker holding the key picks it up",
		"WorkflowID", info.WorkflowExecution.ID, "key", missing.KeyID, "have", strings.Join(missing.Have, ","))
	workflow.GetMetricsHandler(w.ctx).WithTags(map[string]string{"key": missing.KeyID}).Counter(MetricMissingKey).Inc(1)
	panic(fmt.Errorf("%s: %w", WaitingForKey(missing.KeyID), err))
}

// identityKeys separates a worker's identity from the key ids it advertises.
const identityKeys = " payload-keys="

// Identity returns a Temporal client identity that advertises the ids of the keys k holds
// (none for a nil k): base, or the SDK's usual "pid@host" when base is empty, then
// " payload-keys=" and the ids, comma-separated. Workers show their identity to anyone who
// describes their task queue, so producers can check that the workers hold their key. Key
// ids are no secret: every encrypted payload carries its key's id in the clear.
func Identity(base string, k *Keyring) string {
	if base == "" {
		host, _ := os.Hostname()
		base = fmt.Sprintf("%d@%s", os.Getpid(), host)
	}
	var ids []string
	if k != nil {
		ids = k.KeyIDs()
	}
	return base + identityKeys + strings.Join(ids, ",")
}

// IdentityKeyIDs returns the key ids an Identity advertises; ok is false for an identity
// that advertises nothing (not made by Identity).
func IdentityKeyIDs(identity string) (ids []string, ok bool) {
	_, list, ok := strings.Cut(identity, identityKeys)
	if !ok {
		return nil, false
	}
	if list == "" {
		return []string{}, true
	}
	return strings.Split(list, ","), true
}
