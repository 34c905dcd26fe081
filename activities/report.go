package activities

import (
	"time"

	"github.com/heraldhq/herald/policy"
)

// Report counts attempt outcomes for one endpoint: a worker's gate sends the counts since
// its last lease renewal, and the endpoint workflow adds them to its counters.
type Report struct {
	Attempts  int `json:"attempts"`
	Successes int `json:"successes"`
	Failures  int `json:"failures"`
	// Retry-After decisions on failed responses.
	RetryAfterHonoured int `json:"retry_after_honoured"`
	RetryAfterCapped   int `json:"retry_after_capped"`
	RetryAfterIgnored  int `json:"retry_after_ignored"`
	// RetryAfterBackpressure counts Retry-After values of a backpressure-aware receiver
	// (policy.RetryAfter.Backpressure).
	RetryAfterBackpressure int       `json:"retry_after_backpressure"`
	LastAttemptAt          time.Time `json:"last_attempt_at,omitempty"`
	LastOutcome            string    `json:"last_outcome,omitempty"`
}

// Add counts one attempt's result.
func (r *Report) Add(res Result) {
	r.Attempts++
	if res.Delivered() {
		r.Successes++
	} else {
		r.Failures++
		ra := res.RetryAfter()
		switch ra.Action {
		case policy.RetryAfterHonoured:
			r.RetryAfterHonoured++
		case policy.RetryAfterCapped:
			r.RetryAfterCapped++
		case policy.RetryAfterIgnored:
			r.RetryAfterIgnored++
		}
		if ra.Backpressure() {
			r.RetryAfterBackpressure++
		}
	}
	if res.StartedAt.After(r.LastAttemptAt) {
		r.LastAttemptAt = res.StartedAt
		r.LastOutcome = res.Summary()
	}
}

// Merge adds another report's counts.
func (r *Report) Merge(o Report) {
	r.Attempts += o.Attempts
	r.Successes += o.Successes
	r.Failures += o.Failures
	r.RetryAfterHonoured += o.RetryAfterHonoured
	r.RetryAfterCapped += o.RetryAfterCapped
	r.RetryAfterIgnored += o.RetryAfterIgnored
	r.RetryAfterBackpressure += o.RetryAfterBackpressure
	if o.LastAttemptAt.After(r.LastAttemptAt) {
		r.LastAttemptAt, r.LastOutcome = o.LastAttemptAt, o.LastOutcome
	}
}
