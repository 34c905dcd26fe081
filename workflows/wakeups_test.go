package workflows

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
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

// TestDeliveryWaitsForItsSecondOnATimer: a delivery handed a rate-limited permit before the
// second it is for waits for that second on a workflow timer, then makes its attempt on
// the permit as the second begins (its local activity waits for nothing); a permit for a
// second that has begun goes at once.
func TestDeliveryWaitsForItsSecondOnATimer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration // the permit's second, from when it comes
		timer  bool
	}{
		{"permit for the next second", 400 * time.Millisecond, true},
		{"permit for the current second", -300 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := defaultPolicy()
			permitAt := 2*time.Minute + 600*time.Millisecond
			window := at(permitAt + tc.window)
			env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
				if in.Permit == nil {
					return herald.Result{Number: in.Number, StartedAt: now, Policy: p,
						Held: &herald.Hold{Queued: true, Brief: true, Reason: "endpoint rate limit of 1 requests per second: each attempt waits for its turn"}}, nil
				}
				return deliveredAttempt(now, p), nil
			})
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(herald.SignalPermit, policy.Grant{Until: at(permitAt + 40*time.Second), Window: window})
			}, permitAt)
			st := runDelivery(t, env)
			calls := rec.wantCalls(t, 2, "the held one and the one on the permit")
			want := at(permitAt)
			if tc.timer {
				want = window
			}
			if !calls[1].At.Equal(want) {
				t.Errorf("attempt on the permit at %s, want %s", calls[1].At.Sub(testStart), want.Sub(testStart))
			}
			tm := rec.timerDurations()
			if got := slices.Contains(tm, tc.window); got != tc.timer {
				t.Errorf("timers %v: a timer of %s is %v, want %v", tm, tc.window, got, tc.timer)
			}
			if st.State != herald.StateDelivered {
				t.Errorf("state %q, want delivered", st.State)
			}
		})
	}
}
