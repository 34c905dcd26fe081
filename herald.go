// Package herald is Herald's contract: the words every other package shares. It holds the
// event and the endpoint with its settings, the ids of workflows and their inverses, the
// delivery states, the names of workflows, signals, updates, queries, memo fields and task
// queues, the search attributes and a builder for visibility queries, and the messages that
// cross between a worker's gate, the delivery workflows and the endpoint workflows.
//
// It also holds the workflows' inputs, the check of an endpoint put (ValidatePut) and the
// read of an endpoint's admission view (ReadAdmission): what the producer side needs,
// so that it imports this package and never a worker package.
//
// Everything here is on the wire or in recorded histories: names, JSON field names and id
// formats must never change. Of Herald's packages it imports only the pure leaves policy,
// signature, netguard and duration, so that workflows, activities, the starter, the
// server and the CLI can all import it.
package herald

import (
	"strings"
	"time"
)

// Workflow types, as they appear in the Temporal UI.
const (
	// DeliveryWorkflow is the workflow type of a delivery (one per event).
	DeliveryWorkflow = "Delivery"
	// EndpointWorkflow is the workflow type of an endpoint (one per endpoint).
	EndpointWorkflow = "Endpoint"
	// BulkReplayWorkflow is the workflow type of a bulk replay of dead letters.
	BulkReplayWorkflow = "BulkReplay"
	// StatsWorkflow is the workflow type of a shard of endpoint attempt counts.
	StatsWorkflow = "EndpointStats"
	// LegacySubscriptionsWorkflow is the workflow type of the per-tenant subscription
	// directories of Herald 0.1.0, which endpoints' search attributes replaced (0.2.0):
	// herald migrate ends them.
	LegacySubscriptionsWorkflow = "Subscriptions"
	// NoDestinationWorkflow is the workflow type of the record of an event sent to a tenant
	// when none of its endpoints subscribed to the event's type (NoDestinationID). It
	// completes at once; its input is the event.
	NoDestinationWorkflow = "NoDestination"
	// FanoutEventWorkflow is the workflow type of the record that a tenant's event was
	// sent to the tenant (fan-out). It runs under the id a send to one endpoint would use
	// (DeliveryID), so that the two ways of sending share one set of event ids per tenant:
	// whichever starts first holds the id. It completes at once; its input is the event.
	FanoutEventWorkflow = "FanoutEvent"
)

// Messages of the delivery workflow.
const (
	// SignalReplay asks a delivery to go now (ReplayRequest, or no payload): a dead letter
	// runs its ladder again with the same event id, a retry waiting on the ladder's timer
	// goes at once; a delivery its endpoint holds back, or whose attempt is in flight,
	// ignores it. Each outcome is recorded in the MemoReplay memo field.
	SignalReplay = "replay"
	// SignalPermit, sent by an endpoint workflow to a waiting delivery, hands it a permit (Permit).
	SignalPermit = "permit"
	// UpdateNudge, sent by an endpoint workflow whose queue has room again (through
	// activities.Operator.NudgeWaiting), asks a delivery that its gate turned away from the
	// full queue (Hold.Full) to ask again now rather than at its recheck (no argument, no
	// result). A delivery that is not in such a wait refuses it, leaving no event.
	UpdateNudge = "nudge"
	// UpdatePass, sent by a worker for an endpoint workflow that drains its queue
	// (activities.Operator.WakeWaiters), hands a waiting delivery its pass (policy.Grant with
	// Pass set), as SignalPermit does, in one workflow task and with no event unless taken.
	// A delivery that is not waiting for its endpoint refuses it (NotWaitingForPermit),
	// leaving no event; the worker then tells the endpoint it has no use for the pass.
	UpdatePass = "pass"
	// NotWaitingForPermit is the error type of a pass a delivery refuses (UpdatePass).
	NotWaitingForPermit = "NotWaitingForPermit"
	// QueryStatus returns a delivery's Status.
	QueryStatus = "status"
	// QueryEvent returns a delivery's Event, payload included.
	QueryEvent = "event"
	// MemoDeadLetter is the memo field where a parked dead letter says until when it waits
	// for a replay and why it parked ("dead letter until 2026-12-31T10:00:00Z: ladder
	// exhausted; last: 503 Service Unavailable"); a replay removes it. Memos show in
	// temporal workflow describe and on the workflow's page in the Temporal UI.
	MemoDeadLetter = "dead_letter"
	// MemoReplay is the memo field where a delivery records what became of the last replay
	// signal it received, and when: replayed, its retry sent at once, or ignored and why.
	MemoReplay = "replay"
)

// Messages of the endpoint workflow.
const (
	// UpdatePutEndpoint registers or changes an endpoint (PutEndpointRequest → PutEndpointResult).
	UpdatePutEndpoint = "put"
	// UpdateIndex publishes a registered endpoint's tenant and subscription in its search
	// attributes (HeraldTenant, HeraldSubscriptions), where its tenant's sends find it: what
	// herald migrate asks of endpoints registered before 0.2.0 (no argument, no result).
	UpdateIndex = "index"
	// UpdateReset closes an endpoint's circuit by hand (→ EndpointState).
	UpdateReset = "reset"
	// UpdateDisable disables an endpoint by hand (DisableRequest → EndpointState).
	UpdateDisable = "disable"
	// UpdateEnable enables a disabled endpoint again (→ EndpointState).
	UpdateEnable = "enable"
	// UpdateLease asks an endpoint workflow for permits (LeaseRequest → LeaseReply).
	UpdateLease = "lease"
	// QueryEndpointConfig returns the endpoint's Endpoint, secrets included (for the worker).
	QueryEndpointConfig = "config"
	// QueryEndpointState returns the endpoint's EndpointState (no secrets).
	QueryEndpointState = "state"
	// QueryAdmission returns what a gate needs to admit attempts on its own (AdmissionView),
	// for an endpoint workflow that does not publish it in its memo yet.
	QueryAdmission = "admission"
	// QueryHolding returns which of the given waiters ([]string, deliveries' workflow ids)
	// the endpoint workflow holds, queued or granted ([]string).
	QueryHolding = "holding"
	// MemoAdmission is the memo field where an endpoint workflow publishes its
	// AdmissionView (with a coarse snapshot, policy.Snapshot.Coarse) whenever it changes;
	// a gate reads it with a describe, which involves no worker and adds no event.
	MemoAdmission = "admission"
	// SignalDones returns several deliveries' own permits at once ([]Done).
	SignalDones = "dones"
	// SignalWait puts a delivery the gate could not admit in the endpoint's queue (WaitRequest).
	SignalWait = "wait"
	// SignalOutcomes reports the outcomes of attempts a gate admitted without a lease (OutcomeReport).
	SignalOutcomes = "outcomes"
	// SignalCounts, sent by a stats shard that makes room, hands the endpoint's attempt
	// counts to the endpoint's own workflow (SpilledCounts).
	SignalCounts = "spilled-counts"
)

// Messages of the stats workflows.
const (
	// SignalStats adds counts to a stats shard ([]EndpointCounts).
	SignalStats = "counts"
	// QueryStats returns the counts of the endpoints asked for ([]string → []EndpointCounts).
	QueryStats = "counts"
	// StatsShards is how many stats workflows share the endpoints (fixed: it decides ids).
	StatsShards = 8
	// StatsBudget is how many bytes a stats shard's entries take at most, encoded
	// (StatsInput.Budget overrides it): past it, the shard hands the counts of the
	// endpoints it heard from least recently to their endpoint workflows (SignalCounts),
	// so that its state, and the input it continues as new with, stay under 48 KB at any
	// installation size (the singleton limit is 64 KB). Entries of short ids and outcomes
	// take about 100 bytes (some 400 endpoints a shard).
	StatsBudget = 40 << 10
	// StatsCapacity is how many endpoints a stats shard run started before StatsBudget
	// holds at most (versionStatsSpill 1, its input's Capacity 0).
	StatsCapacity = 100
	// MaxStatsOutcome is how many bytes of an endpoint's last outcome (Report.LastOutcome)
	// a stats shard keeps; a longer one is cut at a character boundary.
	MaxStatsOutcome = 120
)

// Task queues and tenants.
const (
	// DefaultTaskQueue is the task queue Herald's workers poll unless told otherwise. The
	// endpoint workflows run on a queue of their own next to it (EndpointTaskQueue).
	DefaultTaskQueue = "herald"
	// DefaultTenant owns endpoints registered without a tenant.
	DefaultTenant = "default"
)

// EndpointTaskQueue is the task queue of the endpoint workflows of Herald's task queue q:
// q + "-endpoints". Endpoint workflows have their own queue, and every worker polls it
// with slots of its own, so that they always get a workflow task promptly, however many
// deliveries wait.
func EndpointTaskQueue(q string) string {
	if strings.HasSuffix(q, endpointQueueSuffix) {
		return q
	}
	return q + endpointQueueSuffix
}

const endpointQueueSuffix = "-endpoints"

// Limits of what producers and operators hand Herald.
const (
	// MaxDataBytes is the largest event payload Herald accepts, counted compacted (as it
	// goes on the wire).
	MaxDataBytes = 256 << 10
	// MaxURLBytes is the longest endpoint URL Herald accepts.
	MaxURLBytes = 2048
	// MaxAttemptTimeout is the longest HTTP timeout an endpoint may set.
	MaxAttemptTimeout = 2 * time.Minute
)
