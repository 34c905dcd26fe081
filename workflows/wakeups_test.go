package workflows

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
)

// TestLimiterContinueAsNewKeepsLateWaiters: waiters that reach a rate-limited endpoint
// while its run is ending (after its last drain, while the permit it just sent is on its
// way) are not lost when it continues as new: each is granted or carried, queued, into
// the next run. Before the drain at the end (versionDrainBeforeContinue), such a waiter
// believed it was queued while no run held it, and waited for its 10-minute recheck.
func TestLimiterContinueAsNewKeepsLateWaiters(t *testing.T) {
	env := newEndpointEnv(netguard.Policy{})
	var sent []string
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, herald.SignalPermit, mock.Anything).Return(
		func(_, workflowID, _, _ string, _ any) error {
			sent = append(sent, workflowID)
			if workflowID == waiterID(1) {
				// While w1's permit is on its way, w2 and w3 ask: their signals reach the run
				// after its last drain.
				env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: waiterIDs(2, 3)})
			}
			return nil
		})
	limit := 1
	register(t, env, &herald.Overrides{RateLimit: &limit})
	env.RegisterDelayedCallback(func() {
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 0)
		env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: []string{waiterID(1)}})
	}, 10*time.Second+100*time.Millisecond)
	env.ExecuteWorkflow(herald.EndpointWorkflow, herald.EndpointInput{ID: testEndpointID})

	_, next := continuedAsNew[herald.EndpointInput](t, env)
	if next.Limiter == nil {
		t.Fatal("continues without the limiter")
	}
	for _, w := range waiterIDs(2, 3) {
		if !slices.Contains(sent, w) && !next.Limiter.Ledger.Queued(w) {
			t.Errorf("%s asked to wait before the run ended: it was neither granted (permits sent to %v) nor carried in the queue %v",
				w, sent, next.Limiter.Ledger.Waiting)
		}
	}
	if n := len(next.Limiter.Grants); n > limit {
		t.Errorf("continues with %d grants for a limit of %d per second", n, limit)
	}
}

// TestLimiterFullQueueKeepsLateWaiter: a waiter whose gate saw the queue not yet full and
// sent it is queued past the limit, not dropped: its delivery believes it is queued.
func TestLimiterFullQueueKeepsLateWaiter(t *testing.T) {
	env, _ := newGuardEnv(t)
	limit := 1
	register(t, env, &herald.Overrides{RateLimit: &limit})
	full := policy.DefaultLimiterConfig().MaxQueue
	var st herald.EndpointState
	env.RegisterDelayedCallback(func() {
		// The first is granted at once; the others fill the queue.
		env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: waiterIDs(1, full+1)})
	}, 10*time.Second+100*time.Millisecond)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalWait, herald.WaitRequest{Waiters: []string{waiterID(full + 2)}})
	}, 10*time.Second+200*time.Millisecond)
	env.RegisterDelayedCallback(func() { st = queryState(t, env) }, 10*time.Second+300*time.Millisecond)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, 11*time.Second)
	// The queue drains through the gates' rate shares (versionRateQueuePasses): the first
	// policy.RatePassWindow waiters are woken with passes, which nobody reports used here.
	if want := full + 1 - policy.RatePassWindow(limit); st.Queue != want {
		t.Errorf("queue %d, want %d: the waiter that came to the full queue is dropped", st.Queue, want)
	}
}
