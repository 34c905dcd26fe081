package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/api/enums/v1"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// trailSample is how many of a phase's last deliveries Trail reads the history of.
const trailSample = 50

// Trail is what the histories of a phase's last deliveries (the stragglers, by first
// arrival at the receiver) show about why they came last: how many attempts each ran (a
// local activity each; all but the last were held back by the gate), how many of their
// workflow tasks timed out (not picked up from the worker's sticky queue within its
// schedule-to-start timeout, then dispatched anew), and how late their durable timers
// fired against the duration they were set for. Timers set for less than a second (the
// 1 ms settle timer after a queued wait) are counted but left out of the lateness: the
// server fires a timer due within its look-ahead (1 s) up to a second late by design.
type Trail struct {
	// Sampled is how many histories were read.
	Sampled int `json:"sampled"`
	// Attempts and MaxAttempts: local activities per delivery, on average and the most.
	Attempts    float64 `json:"attempts_per_delivery"`
	MaxAttempts int     `json:"max_attempts"`
	// TaskTimeouts counts the workflow tasks that timed out, all sampled deliveries together.
	TaskTimeouts int `json:"workflow_task_timeouts"`
	// Timers is how many timers fired; TimerLateP50 and TimerLateMax how late those set for
	// a second or more fired, in seconds.
	Timers       int     `json:"timers"`
	TimerLateP50 Seconds `json:"timer_late_p50"`
	TimerLateMax Seconds `json:"timer_late_max"`
}

// String is the trail in one line of the report.
func (t Trail) String() string {
	if t.Sampled == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f attempts each (most %d); %d workflow tasks timed out; %d timers fired, those set for 1s or more late p50 %.2fs, max %.2fs",
		t.Attempts, t.MaxAttempts, t.TaskTimeouts, t.Timers, float64(t.TimerLateP50), float64(t.TimerLateMax))
}

// lastArrived returns the ids of the n events that reached the receiver last (by first
// arrival), latest first.
func lastArrived(first map[string]time.Time, n int) []string {
	ids := make([]string, 0, len(first))
	for id := range first {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return first[b].Compare(first[a]) })
	return ids[:min(n, len(ids))]
}

// trailWait bounds how long trail waits, all sampled deliveries together, for their runs to
// close (a delivered one may still settle: a short timer the server fires up to a second late).
const trailWait = 30 * time.Second

// trail reads the histories of the deliveries of ids (default tenant), once their runs have
// closed (within trailWait), and sums them up.
func (e *env) trail(ctx context.Context, ids []string) Trail {
	var t Trail
	var late []time.Duration
	wctx, cancel := context.WithTimeout(ctx, trailWait)
	defer cancel()
	for _, id := range ids {
		wf := herald.DeliveryID(herald.DefaultTenant, id)
		_ = e.client.GetWorkflow(wctx, wf, "").Get(wctx, nil) // an open run is read as it is
		it := e.client.GetWorkflowHistory(ctx, wf, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		attempts := 0
		due := map[int64]time.Time{} // timer started event id → when it was due
		ok := true
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				ok = false
				break
			}
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enums.EVENT_TYPE_MARKER_RECORDED:
				if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
					attempts++
				}
			case enums.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				t.TaskTimeouts++
			case enums.EVENT_TYPE_TIMER_STARTED:
				// One within the server's look-ahead is counted, not timed.
				if d := ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration(); d >= policy.RateTimerFloor {
					due[ev.GetEventId()] = at.Add(d)
				}
			case enums.EVENT_TYPE_TIMER_FIRED:
				t.Timers++
				if d, found := due[ev.GetTimerFiredEventAttributes().GetStartedEventId()]; found {
					late = append(late, max(at.Sub(d), 0))
				}
			}
		}
		if !ok {
			continue
		}
		t.Sampled++
		t.Attempts += float64(attempts)
		t.MaxAttempts = max(t.MaxAttempts, attempts)
	}
	if t.Sampled > 0 {
		t.Attempts /= float64(t.Sampled)
	}
	if len(late) > 0 {
		slices.Sort(late)
		t.TimerLateP50, t.TimerLateMax = secs(late[len(late)/2]), secs(late[len(late)-1])
	}
	return t
}
