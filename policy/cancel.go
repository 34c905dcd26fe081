package policy

// Cancelling a delivery: a person or a producer stops a delivery that has not reached its
// receiver yet. What may be cancelled depends only on where the delivery stands.

// Phase is where a delivery stands, as a cancel sees it.
type Phase int

// Phases of a delivery.
const (
	// PhaseScheduled: it waits for its deliver_at, no attempt made.
	PhaseScheduled Phase = iota + 1
	// PhaseInFlight: an attempt is being made (or about to be).
	PhaseInFlight
	// PhaseWaitingRetry: an attempt failed; the next waits on the ladder's timer.
	PhaseWaitingRetry
	// PhaseWaitingEndpoint: its endpoint's cap or circuit holds the attempt back.
	PhaseWaitingEndpoint
	// PhaseDeadLetter: the ladder ran out; it waits for a replay.
	PhaseDeadLetter
	// PhaseWaitingTurn: an ordered delivery waits for the one before it in its key, no
	// attempt made.
	PhaseWaitingTurn
	// PhaseDelivered: an attempt got a 2xx.
	PhaseDelivered
	// PhaseEnded: it ended without being delivered (skipped, expired) or was cancelled.
	PhaseEnded
)

// CancelAction is what a cancel does in a phase.
type CancelAction int

// What a cancel does.
const (
	// CancelNow: the delivery stops at once; no further attempt is made.
	CancelNow CancelAction = iota + 1
	// CancelAfterAttempt: an attempt is in flight and finishes first (a request on the
	// wire cannot be taken back); the cancel then applies to what follows, or finds the
	// event delivered.
	CancelAfterAttempt
	// CancelRefused: nothing is left to stop (delivered, or ended).
	CancelRefused
)

// OnCancel says what a cancel does to a delivery in phase p.
func OnCancel(p Phase) CancelAction {
	switch p {
	case PhaseScheduled, PhaseWaitingRetry, PhaseWaitingEndpoint, PhaseDeadLetter, PhaseWaitingTurn:
		return CancelNow
	case PhaseInFlight:
		return CancelAfterAttempt
	default:
		return CancelRefused
	}
}
