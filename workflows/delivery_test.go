package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
)

// testStart is the workflow clock at the start of every test: a fixed instant, so HTTP
// dates and expected times are the same on every run.
var testStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

const (
	testEventID    = "evt_2QkX9"
	testEndpointID = "acme-prod"
)

// newTestEnv returns a time-skipping test environment whose clock starts at testStart and
// that logs only warnings and errors.
func newTestEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(testStart)
	emitted := &tape[herald.Event]{}
	env.OnActivity((&activities.Ops{}).EmitOps, mock.Anything, mock.Anything).Return(
		func(_ context.Context, ev herald.Event) (bool, error) {
			emitted.add(ev)
			return true, nil
		})
	opsEmitted.Store(env, emitted)
	return env
}

// opsEmitted keeps, per test environment, the operational events its workflows emitted.
var opsEmitted sync.Map

// emittedOps returns the operational events env's workflows emitted.
func emittedOps(env *testsuite.TestWorkflowEnvironment) []herald.Event {
	v, _ := opsEmitted.Load(env)
	return v.(*tape[herald.Event]).all()
}

func testEvent() herald.Event {
	return herald.Event{
		ID:         testEventID,
		EndpointID: testEndpointID,
		Type:       "invoice.paid",
		Data:       json.RawMessage(`{"invoice":"in_1","amount":4200}`),
		CreatedAt:  testStart,
	}
}

// defaultPolicy is the policy an endpoint without overrides gets from a worker with the
// built-in defaults.
func defaultPolicy() herald.Settings {
	return herald.DefaultSettings().Apply(herald.Overrides{})
}

// withRetention is the default policy with a dead-letter retention of d.
func withRetention(d time.Duration) herald.Settings {
	return herald.DefaultSettings().Apply(herald.Overrides{Retention: herald.Duration(d)})
}

func failedAttempt(now time.Time, p herald.Settings) herald.Result {
	return herald.Result{
		URL: "https://hooks.acme.test/herald", StartedAt: now, Duration: herald.Duration(120 * time.Millisecond),
		Outcome: herald.OutcomeHTTPStatus, Policy: p, HTTPExchange: herald.HTTPExchange{StatusCode: http.StatusServiceUnavailable},
	}
}

func deliveredAttempt(now time.Time, p herald.Settings) herald.Result {
	return herald.Result{
		URL: "https://hooks.acme.test/herald", StartedAt: now, Duration: herald.Duration(90 * time.Millisecond),
		Outcome: herald.OutcomeDelivered, Policy: p, HTTPExchange: herald.HTTPExchange{StatusCode: http.StatusOK},
	}
}

// attemptCall is one call of the mocked attempt: what it received and when (workflow clock).
type attemptCall struct {
	In activities.AttemptInput
	At time.Time
}

// recorder keeps what the workflow did: attempts, search attribute upserts, timers.
type recorder struct {
	attempts tape[attemptCall]
	upserts  tape[herald.State]
	timers   tape[time.Duration]
}

// wantCalls returns the attempts, failing the test unless there were n ("want" says which).
func (r *recorder) wantCalls(t *testing.T, n int, want string) []attemptCall {
	t.Helper()
	calls := r.calls()
	if len(calls) != n {
		t.Fatalf("%d attempts, want %s", len(calls), want)
	}
	return calls
}

func (r *recorder) calls() []attemptCall            { return r.attempts.all() }
func (r *recorder) statuses() []herald.State        { return r.upserts.all() }
func (r *recorder) timerDurations() []time.Duration { return r.timers.all() }

// script answers one attempt; now is the workflow clock when the attempt runs.
type script func(in activities.AttemptInput, now time.Time) (herald.Result, error)

// newDeliveryEnv returns a test environment running Delivery with the attempt local
// activity mocked by s, and a recorder of attempts, HeraldStatus upserts and timers.
func newDeliveryEnv(t *testing.T, s script) (*testsuite.TestWorkflowEnvironment, *recorder) {
	t.Helper()
	env := newTestEnv()
	env.RegisterWorkflowWithOptions((&DeliveryWorkflow{}).Run, workflow.RegisterOptions{Name: herald.DeliveryWorkflow})
	rec := &recorder{}
	env.OnActivity((&activities.Activities{}).Attempt, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.AttemptInput) (herald.Result, error) {
			now := env.Now()
			rec.attempts.add(attemptCall{In: in, At: now})
			return s(in, now)
		})
	onKeywordUpsert(env, herald.AttrStatus, func(v string) { rec.upserts.add(herald.State(v)) })
	recordTimers(env, &rec.timers)
	return env, rec
}

// onKeywordUpsert calls fn with the value of key in every search attribute upsert that
// names it ("<unset>" when it unsets it).
func onKeywordUpsert(env *testsuite.TestWorkflowEnvironment, key temporal.SearchAttributeKeyKeyword, fn func(string)) {
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if !upsertNames(sa, key) {
			return
		}
		v, ok := sa.GetKeyword(key)
		if !ok {
			v = "<unset>"
		}
		fn(v)
	}).Return()
}

// jitterKey is the key the delivery workflow must use for the jitter after failed attempt n.
func jitterKey(eventID string, round, n int) string {
	return policy.JitterKey(eventID, round, n)
}

// ladderDelays is what the default ladder waits after each failed attempt of round,
// without Retry-After: what policy.Next decides with the workflow's jitter key.
func ladderDelays(t *testing.T, p herald.Settings, eventID string, round int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for n := 1; ; n++ {
		next := policy.Next(p.Ladder, n, p.RetryAfter.Decide("", "", testStart), jitterKey(eventID, round, n))
		if !next.Retry {
			return out
		}
		out = append(out, next.Delay.Std())
	}
}

func sum(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}

func queryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) herald.Status {
	t.Helper()
	return mustQuery[herald.Status](t, env, herald.QueryStatus)
}

// runDelivery runs the delivery workflow on testEvent to its end and returns its status.
func runDelivery(t *testing.T, env *testsuite.TestWorkflowEnvironment) herald.Status {
	t.Helper()
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})
	return workflowStatus(t, env)
}

func workflowStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) herald.Status {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var st herald.Status
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	return st
}

// checkInput checks the identity fields of an AttemptInput.
func checkInput(t *testing.T, got activities.AttemptInput, round, number int) {
	t.Helper()
	ev := testEvent()
	if got.Event.ID != ev.ID || got.Event.EndpointID != ev.EndpointID || got.Event.Type != ev.Type ||
		got.Round != round || got.Number != number || string(got.Event.Data) != string(ev.Data) || !got.Event.CreatedAt.Equal(ev.CreatedAt) {
		t.Errorf("attempt input = %+v; want event %s endpoint %s type %s round %d number %d data %s",
			got, ev.ID, ev.EndpointID, ev.Type, round, number, ev.Data)
	}
}

func TestDeliveryFirstTrySuccess(t *testing.T) {
	env, rec := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return deliveredAttempt(now, defaultPolicy()), nil
	})
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})

	st := workflowStatus(t, env)
	if st.State != herald.StateDelivered {
		t.Errorf("state = %q, want %q", st.State, herald.StateDelivered)
	}
	if st.Round != 0 || len(st.Attempts) != 1 {
		t.Fatalf("round %d with %d attempts, want round 0 with 1 attempt", st.Round, len(st.Attempts))
	}
	if a := st.Attempts[0]; a.Number != 1 || a.Round != 0 || a.Next != nil || !a.Result.Delivered() {
		t.Errorf("attempt record = %+v, want number 1, round 0, delivered, no next step", a)
	}
	if want := testStart.Add(90 * time.Millisecond); !st.DeliveredAt.Equal(want) {
		t.Errorf("delivered at %s, want %s (start + duration)", st.DeliveredAt, want)
	}
	if !st.NextAttemptAt.IsZero() || !st.DeadAt.IsZero() {
		t.Errorf("next attempt %s, dead at %s; want both zero", st.NextAttemptAt, st.DeadAt)
	}
	calls := rec.wantCalls(t, 1, "1")
	checkInput(t, calls[0].In, 0, 1)
	if tm := rec.timerDurations(); len(tm) != 0 {
		t.Errorf("timers %v, want none", tm)
	}
	// The fast path costs no search attribute update.
	if up := rec.statuses(); len(up) != 0 {
		t.Errorf("HeraldStatus upserts %v, want none on a first-try success", up)
	}
}

func TestDeliveryDefaultLadderTiming(t *testing.T) {
	p := defaultPolicy()
	env, rec := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return failedAttempt(now, p), nil
	})
	want := ladderDelays(t, p, testEventID, 0)
	deadAt := testStart.Add(sum(want))
	var parked herald.Status
	env.RegisterDelayedCallback(func() { parked = queryStatus(t, env) }, sum(want)+time.Hour)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})

	calls := rec.wantCalls(t, 8, "8")
	bases := []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour, 8 * time.Hour}
	if len(want) != len(bases) {
		t.Fatalf("policy.Next gives %d retries, want %d", len(want), len(bases))
	}
	jittered := false
	for i, c := range calls {
		checkInput(t, c.In, 0, i+1)
		if i == 0 {
			if !c.At.Equal(testStart) {
				t.Errorf("attempt 1 at %s, want at once (%s)", c.At, testStart)
			}
			continue
		}
		gap := c.At.Sub(calls[i-1].At)
		base := bases[i-1]
		lo, hi := base*8/10, base*12/10
		if gap < lo || gap > hi {
			t.Errorf("gap before attempt %d = %s, want within ±20%% of %s (%s..%s)", i+1, gap, base, lo, hi)
		}
		if gap != want[i-1] {
			t.Errorf("gap before attempt %d = %s, want %s (policy.Next with key %q)", i+1, gap, want[i-1], jitterKey(testEventID, 0, i))
		}
		if gap != base {
			jittered = true
		}
	}
	if !jittered {
		t.Error("every gap equals its un-jittered base delay: no jitter applied")
	}
	// Seven ladder timers, then the dead letter's retention timer.
	tm := rec.timerDurations()
	if len(tm) != 8 {
		t.Fatalf("timers %v, want 7 ladder timers and the retention timer", tm)
	}
	for i, d := range want {
		if tm[i] != d {
			t.Errorf("timer %d = %s, want %s", i+1, tm[i], d)
		}
	}
	if tm[7] != p.Retention.Std() {
		t.Errorf("retention timer = %s, want %s", tm[7], p.Retention)
	}

	if parked.State != herald.StateDeadLetter {
		t.Errorf("state after the ladder = %q, want %q", parked.State, herald.StateDeadLetter)
	}
	if len(parked.Attempts) != 8 {
		t.Fatalf("status shows %d attempts, want 8", len(parked.Attempts))
	}
	for i, a := range parked.Attempts[:7] {
		if a.Next == nil || !a.Next.Retry || a.Next.Delay.Std() != want[i] || a.Next.Source != policy.SourceLadder ||
			a.Next.BaseDelay.Std() != bases[i] || !a.Next.At.Equal(calls[i+1].At) {
			t.Errorf("attempt %d next step = %+v, want retry after %s (base %s) at %s from the ladder", i+1, a.Next, want[i], bases[i], calls[i+1].At)
		}
	}
	if last := parked.Attempts[7]; last.Next == nil || last.Next.Retry {
		t.Errorf("last attempt next step = %+v, want no retry", last.Next)
	}
	if !parked.DeadAt.Equal(deadAt) || !parked.ExpiresAt.Equal(deadAt.Add(p.Retention.Std())) || !parked.NextAttemptAt.IsZero() {
		t.Errorf("dead at %s, expires %s, next attempt %s; want dead at %s, expires %s, no next attempt",
			parked.DeadAt, parked.ExpiresAt, parked.NextAttemptAt, deadAt, deadAt.Add(p.Retention.Std()))
	}

	// Nobody replays it: it expires after the default 30 days.
	st := workflowStatus(t, env)
	if st.State != herald.StateExpired || !env.Now().Equal(deadAt.Add(p.Retention.Std())) {
		t.Errorf("final state %q at %s, want %q at %s", st.State, env.Now(), herald.StateExpired, deadAt.Add(p.Retention.Std()))
	}
	wantUpserts := []herald.State{herald.StateWaitingRetry, herald.StateWaitingRetry, herald.StateWaitingRetry, herald.StateWaitingRetry, herald.StateWaitingRetry,
		herald.StateWaitingRetry, herald.StateWaitingRetry, herald.StateDeadLetter, herald.StateExpired}
	if up := rec.statuses(); !slices.Equal(up, wantUpserts) {
		t.Errorf("HeraldStatus upserts %v, want %v", up, wantUpserts)
	}
}

func TestDeliveryRetryAfter(t *testing.T) {
	httpDate := func(t time.Time) string { return t.UTC().Format(http.TimeFormat) }
	tests := []struct {
		name       string
		retryAfter string
		date       string
		min, max   time.Duration
		source     string
		action     policy.RetryAfterAction
	}{
		{name: "delta-seconds honoured", retryAfter: "120",
			min: 120 * time.Second, max: 144 * time.Second, source: policy.SourceRetryAfter, action: policy.RetryAfterHonoured},
		{name: "zero retries at once", retryAfter: "0",
			min: 0, max: 0, source: policy.SourceRetryAfter, action: policy.RetryAfterHonoured},
		{name: "10h capped to 4h", retryAfter: "36000",
			min: 4 * time.Hour, max: 4*time.Hour + 48*time.Minute, source: policy.SourceRetryAfter, action: policy.RetryAfterCapped},
		{name: "over 24h ignored", retryAfter: "200000",
			min: 24 * time.Second, max: 36 * time.Second, source: policy.SourceLadder, action: policy.RetryAfterIgnored},
		// The receiver's clock is an hour behind: measured against its Date the ask is 5
		// minutes; measured against the attempt time it would be in the past (ignored).
		{name: "HTTP-date against the Date header", retryAfter: httpDate(testStart.Add(-time.Hour + 5*time.Minute)), date: httpDate(testStart.Add(-time.Hour)),
			min: 5 * time.Minute, max: 6 * time.Minute, source: policy.SourceRetryAfter, action: policy.RetryAfterHonoured},
		{name: "HTTP-date without a Date header", retryAfter: httpDate(testStart.Add(10 * time.Minute)),
			min: 10 * time.Minute, max: 12 * time.Minute, source: policy.SourceRetryAfter, action: policy.RetryAfterHonoured},
		{name: "unparseable ignored", retryAfter: "soon",
			min: 24 * time.Second, max: 36 * time.Second, source: policy.SourceLadder, action: policy.RetryAfterIgnored},
		{name: "no header", retryAfter: "",
			min: 24 * time.Second, max: 36 * time.Second, source: policy.SourceLadder, action: policy.RetryAfterNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := defaultPolicy()
			env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
				if in.Number > 1 {
					return deliveredAttempt(now, p), nil
				}
				r := failedAttempt(now, p)
				r.StatusCode = http.StatusTooManyRequests
				r.RetryAfterHeader, r.DateHeader = tc.retryAfter, tc.date
				return r, nil
			})
			st := runDelivery(t, env)

			ra := p.RetryAfter.Decide(tc.retryAfter, tc.date, testStart)
			if ra.Action != tc.action {
				t.Fatalf("policy decides %s, the case expects %s: fix the test table", ra.Action, tc.action)
			}
			want := policy.Next(p.Ladder, 1, ra, jitterKey(testEventID, 0, 1)).Delay

			calls := rec.wantCalls(t, 2, "2")
			gap := calls[1].At.Sub(calls[0].At)
			if gap < tc.min || gap > tc.max {
				t.Errorf("second attempt after %s, want %s..%s", gap, tc.min, tc.max)
			}
			if gap != want.Std() {
				t.Errorf("second attempt after %s, want %s (policy.Next)", gap, want)
			}
			if st.State != herald.StateDelivered || len(st.Attempts) != 2 {
				t.Fatalf("state %q with %d attempts, want delivered with 2", st.State, len(st.Attempts))
			}
			if n := st.Attempts[0].Next; n == nil || n.Source != tc.source || n.Delay.Std() != gap || n.BaseDelay.Std() != 30*time.Second {
				t.Errorf("next step = %+v, want source %s, delay %s, base 30s", n, tc.source, gap)
			}
		})
	}
}

func TestDeliveryDeadLetterReplay(t *testing.T) {
	p := defaultPolicy()
	env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
		if in.Round == 1 && in.Number == 2 {
			return deliveredAttempt(now, p), nil
		}
		return failedAttempt(now, p), nil
	})
	round0 := ladderDelays(t, p, testEventID, 0)
	deadAt := testStart.Add(sum(round0))
	replayAt := 20 * time.Hour // after the ladder's longest possible run (12h42m30s × 1.2)
	var parked herald.Status
	env.RegisterDelayedCallback(func() {
		parked = queryStatus(t, env)
		env.SignalWorkflow(herald.SignalReplay, nil)
	}, replayAt)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})

	if parked.State != herald.StateDeadLetter || !parked.DeadAt.Equal(deadAt) {
		t.Errorf("before the replay: state %q dead at %s, want %q dead at %s", parked.State, parked.DeadAt, herald.StateDeadLetter, deadAt)
	}
	st := workflowStatus(t, env)
	calls := rec.wantCalls(t, 10, "8 then 2 after the replay")
	for i, c := range calls[:8] {
		checkInput(t, c.In, 0, i+1)
	}
	// The replay runs the ladder again from attempt 1, at once, with the same event id.
	checkInput(t, calls[8].In, 1, 1)
	checkInput(t, calls[9].In, 1, 2)
	if want := testStart.Add(replayAt); !calls[8].At.Equal(want) {
		t.Errorf("first replayed attempt at %s, want at the replay (%s)", calls[8].At, want)
	}
	round1 := ladderDelays(t, p, testEventID, 1)
	if gap := calls[9].At.Sub(calls[8].At); gap != round1[0] {
		t.Errorf("gap in round 1 = %s, want %s (jitter key %q)", gap, round1[0], jitterKey(testEventID, 1, 1))
	}
	if round1[0] == round0[0] {
		t.Errorf("round 0 and round 1 jitter both %s: the round is not in the key", round1[0])
	}
	if st.State != herald.StateDelivered || st.Round != 1 || len(st.Attempts) != 10 {
		t.Errorf("final: state %q round %d with %d attempts, want delivered round 1 with 10", st.State, st.Round, len(st.Attempts))
	}
	if !st.DeadAt.IsZero() || !st.ExpiresAt.IsZero() {
		t.Errorf("replayed delivery still shows dead at %s, expires %s", st.DeadAt, st.ExpiresAt)
	}
	if a := st.Attempts[8]; a.Round != 1 || a.Number != 1 {
		t.Errorf("attempt record 9 = round %d number %d, want round 1 number 1", a.Round, a.Number)
	}
	up := rec.statuses()
	wantTail := []herald.State{herald.StateDeadLetter, herald.StateAttempting, herald.StateWaitingRetry, herald.StateDelivered}
	if len(up) < len(wantTail) || !slices.Equal(up[len(up)-len(wantTail):], wantTail) {
		t.Errorf("HeraldStatus upserts %v, want them to end with %v", up, wantTail)
	}
}

func TestDeliveryRetentionExpiry(t *testing.T) {
	p := withRetention(time.Hour)
	env, rec := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return failedAttempt(now, p), nil
	})
	deadAt := testStart.Add(sum(ladderDelays(t, p, testEventID, 0)))
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})

	st := workflowStatus(t, env)
	if st.State != herald.StateExpired {
		t.Errorf("state = %q, want %q", st.State, herald.StateExpired)
	}
	if !st.DeadAt.Equal(deadAt) || !st.ExpiresAt.Equal(deadAt.Add(time.Hour)) {
		t.Errorf("dead at %s expires %s, want %s and %s", st.DeadAt, st.ExpiresAt, deadAt, deadAt.Add(time.Hour))
	}
	if !env.Now().Equal(deadAt.Add(time.Hour)) {
		t.Errorf("workflow closed at %s, want at the end of the 1h retention (%s)", env.Now(), deadAt.Add(time.Hour))
	}
	if n := len(rec.calls()); n != 8 {
		t.Errorf("%d attempts, want 8", n)
	}
	if up := rec.statuses(); len(up) < 2 || up[len(up)-2] != herald.StateDeadLetter || up[len(up)-1] != herald.StateExpired {
		t.Errorf("HeraldStatus upserts %v, want them to end with dead_letter, expired", up)
	}
}

// A replay while a retry waits on the ladder's timer sends that retry at once: the timer
// is cut short, the attempt numbers go on and the ladder keeps its remaining attempts.
func TestDeliveryReplayWhileRetryingGoesNow(t *testing.T) {
	t.Run("then expires", func(t *testing.T) {
		p := withRetention(time.Hour)
		env, rec := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
			return failedAttempt(now, p), nil
		})
		memos := recordMemos(env)
		d := ladderDelays(t, p, testEventID, 0)
		// Between attempt 2 (~30s) and attempt 3 (~2m30s).
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalReplay, nil) }, time.Minute)
		env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})

		st := workflowStatus(t, env)
		if st.State != herald.StateExpired || st.Round != 0 {
			t.Errorf("state %q round %d, want %q round 1: the replay must not start a new round", st.State, st.Round, herald.StateExpired)
		}
		calls := rec.wantCalls(t, 8, "8: the ladder's attempts, none added")
		checkInput(t, calls[2].In, 0, 3)
		if want := testStart.Add(time.Minute); !calls[2].At.Equal(want) {
			t.Errorf("attempt 3 at %s, want %s (when the replay came)", calls[2].At, want)
		}
		deadAt := testStart.Add(time.Minute + sum(d[2:]))
		if want := deadAt.Add(time.Hour); !env.Now().Equal(want) {
			t.Errorf("closed at %s, want %s", env.Now(), want)
		}
		notes := memos.all()
		if len(notes) < 2 || !strings.Contains(fmt.Sprint(notes[0][herald.MemoReplay]), "round 1: retry 3 goes now") {
			t.Errorf("memo upserts %v, want the replay's outcome (retry 3 goes now) first", notes)
		}
		if dl := fmt.Sprint(notes[len(notes)-1][herald.MemoDeadLetter]); !strings.HasPrefix(dl, "dead letter until "+deadAt.Add(time.Hour).UTC().Format(time.RFC3339)) {
			t.Errorf("dead letter memo %q, want it to say until when it waits", dl)
		}
	})
	t.Run("dead letter waits for a new replay", func(t *testing.T) {
		p := defaultPolicy()
		env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
			if in.Round == 1 {
				return deliveredAttempt(now, p), nil
			}
			return failedAttempt(now, p), nil
		})
		memos := recordMemos(env)
		deadAfter := time.Minute + sum(ladderDelays(t, p, testEventID, 0)[2:])
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalReplay, nil) }, time.Minute)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalReplay, nil) }, deadAfter+30*time.Minute)
		env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})

		st := workflowStatus(t, env)
		calls := rec.wantCalls(t, 9, "8 then 1 after the second replay")
		checkInput(t, calls[8].In, 1, 1)
		if want := testStart.Add(deadAfter + 30*time.Minute); !calls[8].At.Equal(want) {
			t.Errorf("replayed attempt at %s, want %s (the second replay), not at the dead letter (%s)",
				calls[8].At, want, testStart.Add(deadAfter))
		}
		if st.State != herald.StateDelivered || st.Round != 1 {
			t.Errorf("state %q round %d, want delivered round 1", st.State, st.Round)
		}
		notes := memos.all()
		last := notes[len(notes)-1]
		if v, ok := last[herald.MemoDeadLetter]; !ok || v != nil || !strings.Contains(fmt.Sprint(last[herald.MemoReplay]), "round 1: dead letter replayed: round 2 starts") {
			t.Errorf("last memo upsert %v, want the replay recorded and the dead letter field removed", last)
		}
	})
}

// A bulk replay's signal (DeadBefore set) replays dead letters only: a waiting retry keeps
// its timer and records it as ignored.
func TestDeliveryBulkReplayWhileRetryingIsIgnored(t *testing.T) {
	p := withRetention(time.Hour)
	env, rec := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		return failedAttempt(now, p), nil
	})
	memos := recordMemos(env)
	d := ladderDelays(t, p, testEventID, 0)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(herald.SignalReplay, herald.ReplayRequest{DeadBefore: env.Now()})
	}, time.Minute)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})

	calls := rec.wantCalls(t, 8, "8: the ladder's attempts")
	if want := testStart.Add(d[0] + d[1]); !calls[2].At.Equal(want) {
		t.Errorf("attempt 3 at %s, want %s (its timer, not the bulk replay)", calls[2].At, want)
	}
	notes := memos.all()
	if len(notes) == 0 || !strings.Contains(fmt.Sprint(notes[0][herald.MemoReplay]), "ignored: a bulk replay replays dead letters only; retry 3 waits until") {
		t.Errorf("memo upserts %v, want the bulk replay recorded as ignored", notes)
	}
}

// A replay while the endpoint holds the attempt back is recorded as ignored: the
// endpoint's protection decides when it goes.
func TestDeliveryReplayWhileHeldIsIgnored(t *testing.T) {
	p := defaultPolicy()
	tries := 0
	env, rec := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
		if tries++; tries == 1 {
			return herald.Result{Held: &herald.Hold{Reason: "circuit open after 5 consecutive failures", Recheck: herald.Duration(time.Hour)}}, nil
		}
		return deliveredAttempt(now, p), nil
	})
	memos := recordMemos(env)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalReplay, nil) }, time.Minute)
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})

	st := workflowStatus(t, env)
	calls := rec.wantCalls(t, 2, "2: held, then asked again after its recheck")
	if want := testStart.Add(time.Hour); !calls[1].At.Equal(want) {
		t.Errorf("second try at %s, want %s (the hold's recheck, not the replay)", calls[1].At, want)
	}
	if st.State != herald.StateDelivered || len(st.Attempts) != 1 {
		t.Errorf("state %q with %d attempts, want delivered at attempt 1", st.State, len(st.Attempts))
	}
	notes := memos.all()
	if len(notes) != 1 || !strings.Contains(fmt.Sprint(notes[0][herald.MemoReplay]), "ignored: attempt 1 waits for its endpoint (circuit open after 5 consecutive failures)") {
		t.Errorf("memo upserts %v, want the replay recorded as ignored, with the endpoint's reason", notes)
	}
}

// recordMemos records the workflow's memo upserts.
func recordMemos(env *testsuite.TestWorkflowEnvironment) *tape[map[string]any] {
	var memos tape[map[string]any]
	env.OnUpsertMemo(mock.Anything).Run(func(args mock.Arguments) {
		memos.add(args.Get(0).(map[string]any))
	}).Return(nil)
	return &memos
}

func TestDeliveryAttemptThatNeverRanUsesNoAttempt(t *testing.T) {
	p := defaultPolicy()
	calls := 0
	env, rec := newDeliveryEnv(t, func(in activities.AttemptInput, now time.Time) (herald.Result, error) {
		calls++
		if calls <= 2 { // e.g. no local-activity slot before the timeout, then the worker stopping
			return herald.Result{}, errors.New("worker is shutting down")
		}
		return deliveredAttempt(now, p), nil
	})
	env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})

	st := workflowStatus(t, env)
	got := rec.calls()
	if len(got) != 3 {
		t.Fatalf("%d executions, want 3 (two that never ran, then the attempt)", len(got))
	}
	for i, c := range got {
		if c.In.Number != 1 {
			t.Errorf("execution %d made attempt %d, want attempt 1 each time", i+1, c.In.Number)
		}
	}
	if gap := got[1].At.Sub(got[0].At); gap != policy.NotStartedRecheck {
		t.Errorf("asked again after %s, want %s", gap, policy.NotStartedRecheck)
	}
	if len(st.Attempts) != 1 || st.Attempts[0].Number != 1 || st.State != herald.StateDelivered {
		t.Errorf("attempts %+v state %q, want one attempt, delivered", st.Attempts, st.State)
	}
}

// decodeContinueAsNew returns the herald.DeliveryInput a ContinueAsNewError carries.
func decodeContinueAsNew(t *testing.T, err error) herald.DeliveryInput {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want a continue-as-new", err)
	}
	if can.WorkflowType == nil || can.WorkflowType.Name != herald.DeliveryWorkflow {
		t.Errorf("continues as %+v, want %s", can.WorkflowType, herald.DeliveryWorkflow)
	}
	var in herald.DeliveryInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatalf("decode continue-as-new input: %v", err)
	}
	return in
}

func TestDeliveryContinueAsNew(t *testing.T) {
	// The test environment does not count history events: GetCurrentHistoryLength returns
	// what SetCurrentHistoryLength set. Seven ladders, replayed every 20h, stand for a
	// delivery replayed many times; the history crosses the threshold before the 7th replay.
	t.Run("history threshold after many replays", func(t *testing.T) {
		began := time.Now()
		p := defaultPolicy()
		env, rec := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
			return failedAttempt(now, p), nil
		})
		const replays = 7
		for k := 1; k <= replays; k++ {
			env.RegisterDelayedCallback(func() {
				switch k {
				case replays - 1:
					env.SetCurrentHistoryLength(continueAsNewEvents) // at the threshold: not past it
				case replays:
					env.SetCurrentHistoryLength(continueAsNewEvents + 1)
				}
				env.SignalWorkflow(herald.SignalReplay, nil)
			}, time.Duration(k)*20*time.Hour)
		}
		env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})
		if !env.IsWorkflowCompleted() {
			t.Fatal("workflow did not complete")
		}
		next := decodeContinueAsNew(t, env.GetWorkflowError())
		t.Logf("%d replays, %d attempts over %s of workflow time: %s of wall time",
			replays, len(rec.calls()), env.Now().Sub(testStart), time.Since(began))

		if n := len(rec.calls()); n != replays*8 {
			t.Fatalf("%d attempts before continuing as new, want %d", n, replays*8)
		}
		if next.Round != replays || next.Event.ID != testEventID || next.Event.EndpointID != testEndpointID {
			t.Errorf("continues with round %d event %s/%s, want round %d event %s/%s",
				next.Round, next.Event.ID, next.Event.EndpointID, replays, testEventID, testEndpointID)
		}
		if len(next.Attempts) != herald.MaxKeptAttempts || next.Dropped != replays*8-herald.MaxKeptAttempts {
			t.Fatalf("carries %d attempts, %d dropped; want %d and %d", len(next.Attempts), next.Dropped, herald.MaxKeptAttempts, replays*8-herald.MaxKeptAttempts)
		}
		// The newest are kept: round 0 loses attempts 1-6.
		if first, last := next.Attempts[0], next.Attempts[herald.MaxKeptAttempts-1]; first.Round != 0 || first.Number != 7 || last.Round != replays-1 || last.Number != 8 {
			t.Errorf("kept attempts run from round %d #%d to round %d #%d, want round 0 #7 to round %d #8",
				first.Round, first.Number, last.Round, last.Number, replays-1)
		}

		// The next run starts the ladder at once, in the carried round, and keeps the record.
		env2, rec2 := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
			return deliveredAttempt(now, p), nil
		})
		env2.ExecuteWorkflow(herald.DeliveryWorkflow, next)
		st := workflowStatus(t, env2)
		calls := rec2.calls()
		if len(calls) != 1 {
			t.Fatalf("continued run made %d attempts, want 1", len(calls))
		}
		checkInput(t, calls[0].In, replays, 1)
		if !calls[0].At.Equal(testStart) {
			t.Errorf("continued run attempted at %s, want at once", calls[0].At)
		}
		if st.State != herald.StateDelivered || st.Round != replays || len(st.Attempts) != herald.MaxKeptAttempts+1 || st.Dropped != next.Dropped {
			t.Errorf("continued run: state %q round %d, %d attempts, %d dropped; want delivered round %d, %d attempts, %d dropped",
				st.State, st.Round, len(st.Attempts), st.Dropped, replays, herald.MaxKeptAttempts+1, next.Dropped)
		}
		if up := rec2.statuses(); !slices.Equal(up, []herald.State{herald.StateDelivered}) {
			t.Errorf("continued run upserts %v, want [delivered] (a replayed delivery is off the fast path)", up)
		}
	})

	t.Run("suggested by the server", func(t *testing.T) {
		p := defaultPolicy()
		env, _ := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
			return failedAttempt(now, p), nil
		})
		env.SetContinueAsNewSuggested(true)
		carried := make([]herald.AttemptRecord, 43)
		for i := range carried {
			carried[i] = herald.AttemptRecord{Round: i / 8, Number: i%8 + 1, Result: failedAttempt(testStart, p)}
		}
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalReplay, nil) }, 20*time.Hour)
		env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent(), Round: 5, Attempts: carried, Dropped: 4})

		next := decodeContinueAsNew(t, env.GetWorkflowError())
		// 43 carried + 8 new = 51, one past the limit: keep 50, drop 1 more.
		if next.Round != 6 || len(next.Attempts) != herald.MaxKeptAttempts || next.Dropped != 5 {
			t.Errorf("continues with round %d, %d attempts, %d dropped; want round 6, %d attempts, 5 dropped",
				next.Round, len(next.Attempts), next.Dropped, herald.MaxKeptAttempts)
		}
		if last := next.Attempts[len(next.Attempts)-1]; last.Round != 5 || last.Number != 8 {
			t.Errorf("newest kept attempt is round %d #%d, want round 5 #8", last.Round, last.Number)
		}
	})

	t.Run("not before a replay", func(t *testing.T) {
		// A suggestion alone does not end a dead letter: only a replay continues as new.
		p := withRetention(time.Hour)
		env, _ := newDeliveryEnv(t, func(_ activities.AttemptInput, now time.Time) (herald.Result, error) {
			return failedAttempt(now, p), nil
		})
		env.SetContinueAsNewSuggested(true)
		env.SetCurrentHistoryLength(continueAsNewEvents + 1)
		env.ExecuteWorkflow(herald.DeliveryWorkflow, herald.DeliveryInput{Event: testEvent()})
		if st := workflowStatus(t, env); st.State != herald.StateExpired {
			t.Errorf("state = %q, want %q", st.State, herald.StateExpired)
		}
	})
}

func TestBulkReplay(t *testing.T) {
	filter := herald.DeadLetterFilter{EndpointID: testEndpointID, Since: testStart.Add(-24 * time.Hour)}
	tests := []struct {
		name     string
		at       time.Time
		wantCall time.Time
		timers   int
	}{
		{name: "at a later time", at: testStart.Add(2 * time.Hour), wantCall: testStart.Add(2 * time.Hour), timers: 1},
		{name: "now", at: time.Time{}, wantCall: testStart, timers: 0},
		{name: "in the past", at: testStart.Add(-time.Hour), wantCall: testStart, timers: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv()
			env.RegisterWorkflowWithOptions(BulkReplay, workflow.RegisterOptions{Name: herald.BulkReplayWorkflow})
			var mu sync.Mutex
			var calls []time.Time
			var gotFilter herald.DeadLetterFilter
			env.OnActivity((&activities.Operator{}).ReplayDeadLetters, mock.Anything, mock.Anything).Return(
				func(_ context.Context, f herald.DeadLetterFilter) (activities.ReplayCount, error) {
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, env.Now())
					gotFilter = f
					return activities.ReplayCount{Replayed: 17, Gone: 2}, nil
				})
			var timers []time.Duration
			env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
			env.ExecuteWorkflow(herald.BulkReplayWorkflow, herald.BulkReplayInput{Filter: filter, At: tc.at})

			if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
				t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
			}
			var res herald.BulkReplayResult
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(calls) != 1 {
				t.Fatalf("ReplayDeadLetters called %d times, want once", len(calls))
			}
			if !calls[0].Equal(tc.wantCall) {
				t.Errorf("replayed at %s, want %s", calls[0], tc.wantCall)
			}
			if gotFilter.EndpointID != filter.EndpointID || !gotFilter.Since.Equal(filter.Since) || !gotFilter.Until.IsZero() {
				t.Errorf("filter = %+v, want %+v", gotFilter, filter)
			}
			if res.Replayed != 17 || res.Skipped != 2 || res.SkippedWhy != herald.SkippedGone || !res.ReplayedAt.Equal(tc.wantCall) {
				t.Errorf("result = %+v, want 17 replayed and 2 skipped (gone) at %s", res, tc.wantCall)
			}
			if len(timers) != tc.timers || (tc.timers == 1 && timers[0] != tc.wantCall.Sub(testStart)) {
				t.Errorf("timers %v, want %d", timers, tc.timers)
			}
		})
	}
}

// upsertNames reports whether an upsert may set or unset key: every upsert but the one that
// publishes an endpoint's subscription (publishSubscription), which names only its own two.
// (The SDK shows an unset attribute as absent.)
func upsertNames(sa temporal.SearchAttributes, key temporal.SearchAttributeKey) bool {
	return key == herald.AttrSubscriptions || !sa.ContainsKey(herald.AttrSubscriptions)
}
