package herald

import (
	"fmt"
	"time"

	"github.com/heraldhq/herald/policy"
)

// Scheduled sends and cancels: the messages and fields of the delivery workflow for a
// send with a deliver_at, and for stopping a delivery before it reaches its receiver.

const (
	// UpdateCancel stops a delivery that waits (scheduled, for a retry, for its endpoint)
	// or is a dead letter (CancelRequest → Status). An attempt in flight finishes first;
	// a delivered event answers ErrAlreadyDelivered. The request, reason included, is in
	// the delivery's history.
	UpdateCancel = "cancel"
	// MemoCancelled is the memo field where a cancelled delivery says when and why.
	MemoCancelled = "cancelled"
	// MaxCancelReason is the longest reason a cancel may give, in bytes.
	MaxCancelReason = 500
)

// CancelRequest is the payload of UpdateCancel.
type CancelRequest struct {
	// Reason says why, for whoever looks at the delivery later (at most MaxCancelReason bytes).
	Reason string `json:"reason,omitempty"`
	// By names who asked: "operator", or the tenant of a tenant token.
	By string `json:"by,omitempty"`
}

// Validate checks the request's reason.
func (r CancelRequest) Validate() error {
	if len(r.Reason) > MaxCancelReason {
		return fmt.Errorf("the reason is %d bytes long; the limit is %d", len(r.Reason), MaxCancelReason)
	}
	if len(r.By) > MaxCancelReason {
		return fmt.Errorf("by is %d bytes long; the limit is %d", len(r.By), MaxCancelReason)
	}
	return nil
}

// Cancellation says when a delivery was cancelled, by whom and why.
type Cancellation struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	By     string    `json:"by,omitempty"`
	// Phase is what the delivery was doing: scheduled, waiting_retry, waiting_endpoint
	// or dead_letter (its State then), or attempting: the cancel came while an attempt
	// was in flight, which failed, and stopped what would have followed it.
	Phase State `json:"phase"`
}

// ErrAlreadyDelivered is the error of a cancel that comes too late: the event was delivered.
const ErrAlreadyDelivered = "already delivered"

// CancelPhase is where a delivery in state s stands, as a cancel sees it.
func CancelPhase(s State) policy.Phase {
	switch s {
	case StateScheduled:
		return policy.PhaseScheduled
	case StateAttempting:
		return policy.PhaseInFlight
	case StateWaitingRetry:
		return policy.PhaseWaitingRetry
	case StateWaitingEndpoint:
		return policy.PhaseWaitingEndpoint
	case StateDeadLetter:
		return policy.PhaseDeadLetter
	case StateWaitingTurn:
		return policy.PhaseWaitingTurn
	case StateDelivered:
		return policy.PhaseDelivered
	default: // skipped, expired, cancelled
		return policy.PhaseEnded
	}
}

// CancelRefusal says why a delivery in state s cannot be cancelled ("" if it can).
func CancelRefusal(s State) string {
	if policy.OnCancel(CancelPhase(s)) != policy.CancelRefused {
		return ""
	}
	switch s {
	case StateDelivered:
		return ErrAlreadyDelivered
	case StateCancelled:
		return "already cancelled"
	default:
		return "it has ended (" + string(s) + "): nothing is left to stop"
	}
}
