package activities

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald/policy"
)

// Report is a batch of attempt outcomes for one endpoint, sent by a worker to the endpoint
// workflow, which adds it to its counters.
type Report struct {
	Attempts  int `json:"attempts"`
	Successes int `json:"successes"`
	Failures  int `json:"failures"`
	// Retry-After decisions on failed responses.
	RetryAfterHonoured int `json:"retry_after_honoured"`
	RetryAfterCapped   int `json:"retry_after_capped"`
	RetryAfterIgnored  int `json:"retry_after_ignored"`
	// RetryAfterBackpressure counts Retry-After values between 60 and 300 seconds: the sign
	// of a receiver that knows how to shed load.
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
		ra := res.Policy.RetryAfter.Decide(res.RetryAfterHeader, res.DateHeader, res.StartedAt)
		switch ra.Action {
		case policy.RetryAfterHonoured:
			r.RetryAfterHonoured++
		case policy.RetryAfterCapped:
			r.RetryAfterCapped++
		case policy.RetryAfterIgnored:
			r.RetryAfterIgnored++
		}
		if ra.Asked >= time.Minute && ra.Asked <= 5*time.Minute {
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

// Reporter gathers outcomes per endpoint and signals them to the endpoint workflows in
// batches, so that a busy endpoint costs one signal per interval rather than one per attempt.
type Reporter struct {
	client   client.Client
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	pending map[string]*Report
}

// NewReporter returns a Reporter that flushes through c every interval once Run is called.
func NewReporter(c client.Client, interval time.Duration, log *slog.Logger) *Reporter {
	if log == nil {
		log = slog.Default()
	}
	return &Reporter{client: c, interval: interval, log: log, pending: map[string]*Report{}}
}

// Record counts one result for endpoint id.
func (r *Reporter) Record(id string, res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := r.pending[id]
	if rep == nil {
		rep = &Report{}
		r.pending[id] = rep
	}
	rep.Add(res)
}

// Run flushes every interval until ctx ends, then flushes once more.
func (r *Reporter) Run(ctx context.Context) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r.Flush(fctx)
			cancel()
			return
		case <-t.C:
			r.Flush(ctx)
		}
	}
}

// Flush signals every pending report now. A report that cannot be delivered is put back.
func (r *Reporter) Flush(ctx context.Context) {
	r.mu.Lock()
	batch := r.pending
	r.pending = map[string]*Report{}
	r.mu.Unlock()
	ids := make([]string, 0, len(batch))
	for id := range batch {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		err := r.client.SignalWorkflow(ctx, EndpointWorkflowID(id), "", SignalEndpointReport, *batch[id])
		if err == nil {
			continue
		}
		if ctx.Err() == nil && !isNotFound(err) {
			r.mu.Lock()
			if cur := r.pending[id]; cur != nil {
				batch[id].Merge(*cur)
			}
			r.pending[id] = batch[id]
			r.mu.Unlock()
		}
		r.log.Warn("endpoint report not delivered", "endpoint", id, "error", err)
	}
}
