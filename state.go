package herald

// State is where a delivery stands, as the status query and the HeraldStatus search
// attribute report it.
type State string

// Delivery states.
const (
	// StateScheduled: the delivery has started and made no attempt yet; a send with a
	// deliver_at waits in this state until then (Status.DeliverAt).
	StateScheduled State = "scheduled"
	// StateAttempting: an attempt is being made.
	StateAttempting State = "attempting"
	// StateWaitingRetry: an attempt failed; the next waits on the ladder's timer.
	StateWaitingRetry State = "waiting_retry"
	// StateWaitingEndpoint: the endpoint's concurrency cap or open circuit holds the
	// attempt back; it waits in the endpoint's queue and uses no attempt.
	StateWaitingEndpoint State = "waiting_endpoint"
	// StateDelivered: an attempt got a 2xx.
	StateDelivered State = "delivered"
	// StateDeadLetter: the ladder is exhausted; the delivery waits for a replay.
	StateDeadLetter State = "dead_letter"
	// StateExpired: a dead letter waited its retention out without a replay.
	StateExpired State = "expired"
	// StateWaitingKey: no worker so far could decrypt the delivery's payload; it waits
	// for a worker that holds its key (reported by the starter, never by the workflow).
	StateWaitingKey State = "waiting_key"
	// StateSkipped: the endpoint was disabled when the delivery reached its first attempt;
	// no request was made (see policy.OnDisabled).
	StateSkipped State = "skipped"
	// StateCancelled: someone cancelled the delivery before it was delivered
	// (UpdateCancel); Status.Cancelled says when, by whom and why.
	StateCancelled State = "cancelled"
	// StateWaitingTurn: an ordered delivery waits for the delivery before it in its
	// ordering key (Status.Ordering says which); it has made no attempt.
	StateWaitingTurn State = "waiting_turn"
)
