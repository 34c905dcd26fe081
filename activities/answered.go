package activities

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/heraldhq/herald"
)

// Answered attempts. A local activity's result reaches the history only with the workflow
// task that ran it. When the server refuses that task's completion (a signal came during
// it, UnhandledCommand) or cannot record it (its database failed, or the frontend carrying
// it went away), the task is retried, the workflow replays, and the same local activity
// runs again: without a memory of it, the receiver gets the same request a second time.
// The worker remembers, for a short time, the result of each attempt that made a request,
// keyed by what identifies that local activity in its run; the run again answers from
// memory and sends nothing. It covers a retry that reaches the same worker: the only one,
// or by chance, since the server clears a workflow's sticky worker when a task of it
// fails. One picked up by another worker sends again, and the receiver dedupes by
// webhook-id, as Standard Webhooks asks. A delivery that waited for its endpoint and may
// still get a permit does not depend on it: it records its last attempt before it
// completes (the settle-attempt step).

// Bounds of the memory of answered attempts.
const (
	// AnsweredFor is how long an answered attempt is remembered: a failed completion's
	// retry comes at once (UnhandledCommand) or after the workflow task timeout (10 s by
	// default) and its schedule-to-start on the sticky queue.
	AnsweredFor = time.Minute
	// MaxAnswered is the most answered attempts remembered; past it the oldest is
	// forgotten first (a forgotten one costs at most a repeated request). At 1,000 attempts
	// a second the memory covers 10 s.
	MaxAnswered = 10_000
)

// answered is the memory of answered attempts, safe for concurrent use. Its zero value
// is ready, with the bounds above.
type answered struct {
	mu    sync.Mutex
	max   int           // 0: MaxAnswered
	ttl   time.Duration // 0: AnsweredFor
	byKey map[string]answer
	order []string // keys in the order they were stored; the oldest first
}

type answer struct {
	res herald.Result
	at  time.Time
}

// answeredKey names an attempt's local activity: its workflow run, the local activity's
// id in that run (a counter the replay repeats), and the attempt's round and number (so
// that a replay that took another path never matches). "" outside an activity.
func answeredKey(ctx context.Context, in AttemptInput) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	info := activity.GetInfo(ctx)
	return info.WorkflowExecution.RunID + "/" + info.ActivityID + "/" + strconv.Itoa(in.Round) + "/" + strconv.Itoa(in.Number)
}

// recall returns the result stored under key before now less the time it is kept.
func (m *answered) recall(key string, now time.Time) (herald.Result, bool) {
	if key == "" {
		return herald.Result{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.byKey[key]
	if !ok || now.Sub(a.at) > m.keep() {
		return herald.Result{}, false
	}
	return a.res, true
}

// store remembers res under key, forgetting what has expired and, past the bound, the
// oldest.
func (m *answered) store(key string, res herald.Result, now time.Time) {
	if key == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byKey == nil {
		m.byKey = make(map[string]answer)
	}
	if _, ok := m.byKey[key]; ok {
		m.byKey[key] = answer{res: res, at: m.byKey[key].at}
		return
	}
	limit := m.max
	if limit <= 0 {
		limit = MaxAnswered
	}
	drop := 0
	for drop < len(m.order) && (len(m.order)-drop >= limit || now.Sub(m.byKey[m.order[drop]].at) > m.keep()) {
		delete(m.byKey, m.order[drop])
		drop++
	}
	m.order = append(m.order[drop:], key)
	m.byKey[key] = answer{res: res, at: now}
}

func (m *answered) keep() time.Duration {
	if m.ttl > 0 {
		return m.ttl
	}
	return AnsweredFor
}

// size is how many answered attempts are remembered.
func (m *answered) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byKey)
}
