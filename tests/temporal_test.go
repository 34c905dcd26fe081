package tests

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
)

// signalLikeCLI sends a replay signal to the delivery of eventID as the stock Temporal CLI
// does for `temporal workflow signal --workflow-id delivery:EVT --name replay` without
// --input: a raw SignalWorkflowExecution whose input holds no payload.
func signalLikeCLI(eventID string) error {
	_, err := shared.client.WorkflowService().SignalWorkflowExecution(context.Background(), &workflowservice.SignalWorkflowExecutionRequest{
		Namespace:         shared.srv.Namespace(),
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: herald.DeliveryID(herald.DefaultTenant, eventID)},
		SignalName:        herald.SignalReplay,
		Input:             &commonpb.Payloads{},
		Identity:          "temporal-cli",
	})
	return err
}

// memo returns the string memo field key of eventID's delivery ("" when unset).
func memo(t *testing.T, eventID, key string) string {
	t.Helper()
	d, err := shared.client.DescribeWorkflowExecution(context.Background(), herald.DeliveryID(herald.DefaultTenant, eventID), "")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[key]
	if !ok {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		t.Fatalf("memo %s of %s: %v", key, eventID, err)
	}
	return s
}

// waitMemo waits until eventID's memo field key contains want, and returns it.
func waitMemo(t *testing.T, eventID, key, want string) string {
	t.Helper()
	var got string
	eventually(t, "memo "+key+" of "+eventID+" to say "+want, func() bool {
		got = memo(t, eventID, key)
		return strings.Contains(got, want)
	})
	return got
}

// history returns the events of eventID's delivery (its current run).
func history(t *testing.T, eventID string) []*historypb.HistoryEvent {
	t.Helper()
	return workflowHistory(t, herald.DeliveryID(herald.DefaultTenant, eventID))
}

// recordHistory saves the history of eventID's delivery as name, with -record only.
func recordHistory(t *testing.T, name, eventID string) {
	t.Helper()
	if *record {
		save(t, name, herald.DeliveryID(herald.DefaultTenant, eventID))
	}
}

// summaries returns the summaries (user metadata) of the events of type typ.
func summaries(t *testing.T, evs []*historypb.HistoryEvent, typ enums.EventType) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		if ev.GetEventType() != typ || ev.GetUserMetadata().GetSummary() == nil {
			continue
		}
		var s string
		if err := converter.GetDefaultDataConverter().FromPayload(ev.GetUserMetadata().GetSummary(), &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// attemptSummaries returns the summaries of the attempts' local activity markers.
func attemptSummaries(t *testing.T, evs []*historypb.HistoryEvent) []string {
	t.Helper()
	var out []string
	for _, s := range summaries(t, evs, enums.EVENT_TYPE_MARKER_RECORDED) {
		if strings.HasPrefix(s, "round ") {
			out = append(out, s)
		}
	}
	return out
}

// memoUpserts returns the values of the memo field key in the history's memo upserts.
func memoUpserts(t *testing.T, evs []*historypb.HistoryEvent, key string) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		p, ok := ev.GetWorkflowPropertiesModifiedEventAttributes().GetUpsertedMemo().GetFields()[key]
		if !ok {
			continue
		}
		var s string
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
		out = append(out, s)
	}
	return out
}

func hasEvent(evs []*historypb.HistoryEvent, typ enums.EventType) bool {
	for _, ev := range evs {
		if ev.GetEventType() == typ {
			return true
		}
	}
	return false
}

func contains(list []string, want string) bool {
	for _, s := range list {
		if strings.Contains(s, want) {
			return true
		}
	}
	return false
}

// TestReplaySignalInEveryState signals replay as the stock CLI does to a delivery in each
// state, and checks its effect and its record in the delivery's history (the replay memo).
// With -record it also saves the histories for the replay test:
//
//	go test ./tests -run 'TestReplaySignalInEveryState$' -record
//
// The delivery_replay_*_before_any_state.json histories came from the same scenarios run
// by the code before versionReplayAnyState, which dropped those signals.
func TestReplaySignalInEveryState(t *testing.T) {
	ctx := context.Background()

	// Waiting for its retry: the retry goes now, the timer is cut short, and the attempt
	// numbers go on. The markers and timers name round and attempt.
	t.Run("waiting_retry", func(t *testing.T) {
		rcv := newReceiver(t, status(http.StatusServiceUnavailable))
		putEndpoint(t, "tmp-retry", rcv.URL, fast(3, time.Hour, time.Hour))
		id := sendOne(t, "tmp-retry")
		waitState(t, id, herald.StateWaitingRetry)
		rcv.setAnswer(status(http.StatusNoContent))
		if err := signalLikeCLI(id); err != nil {
			t.Fatal(err)
		}
		st := waitState(t, id, herald.StateDelivered)
		if n := len(st.Attempts); n != 2 || st.Attempts[1].Number != 2 || st.Round != 0 {
			t.Fatalf("attempts %+v round %d, want attempt 2 of round 0 delivered", st.Attempts, st.Round)
		}
		evs := history(t, id)
		if !hasEvent(evs, enums.EVENT_TYPE_TIMER_CANCELED) {
			t.Error("no TimerCanceled event: the retry timer was not cut short")
		}
		if got := memoUpserts(t, evs, herald.MemoReplay); !contains(got, "round 1: retry 2 goes now, its timer cut short") {
			t.Errorf("replay memo upserts %q, want the retry sent now", got)
		}
		las := attemptSummaries(t, evs)
		if len(las) != 2 || las[0] != "round 1 · attempt 1 → tmp-retry" || las[1] != "round 1 · attempt 2 → tmp-retry" {
			t.Errorf("attempt marker summaries %q, want round 0 · attempt 1 and 2 → tmp-retry", las)
		}
		timers := summaries(t, evs, enums.EVENT_TYPE_TIMER_STARTED)
		if len(timers) != 1 || timers[0] != "round 1 · attempt 1 → 503 Service Unavailable; retry 2 in 1h (ladder 1h ±0%)" {
			t.Errorf("timer summaries %q", timers)
		}
		recordHistory(t, "delivery_replay_waiting_retry.json", id)
	})

	// Held by its endpoint's open circuit: ignored, the endpoint's protection wins.
	t.Run("waiting_endpoint", func(t *testing.T) {
		rcv := newReceiver(t, status(http.StatusBadGateway))
		o := fast(1)
		b := policy.BreakerConfig{ConsecutiveFailures: 1, ConsecutiveWindow: duration.Duration(time.Minute), VolumeFailures: 20,
			VolumeWindow: duration.Duration(5 * time.Minute), ProbeDelay: duration.Duration(time.Hour), MaxProbeDelay: duration.Duration(time.Hour), ProbeTimeout: duration.Duration(time.Minute)}.Override()
		o.Breaker = &b
		putEndpoint(t, "tmp-held", rcv.URL, o)
		waitState(t, sendOne(t, "tmp-held"), herald.StateDeadLetter)
		eventually(t, "the circuit to open", func() bool { return endpointState(t, "tmp-held").Circuit.State == policy.CircuitOpen })
		id := sendOne(t, "tmp-held")
		waitState(t, id, herald.StateWaitingEndpoint)
		if err := signalLikeCLI(id); err != nil {
			t.Fatal(err)
		}
		waitMemo(t, id, herald.MemoReplay, "round 1: ignored: attempt 1 waits for its endpoint")
		if _, err := shared.starter.Replay(ctx, starter.Ref{EventID: id}); !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), "does not override the endpoint's protection") {
			t.Errorf("herald replay of a held delivery: %v, want it refused, saying the endpoint's protection wins", err)
		}
		if st := waitState(t, id, herald.StateWaitingEndpoint); len(st.Attempts) != 0 || len(rcv.requests()) != 1 {
			t.Fatalf("held delivery made %d attempts (receiver saw %d requests), want none: the replay must not force it through", len(st.Attempts), len(rcv.requests()))
		}
		rcv.setAnswer(status(http.StatusNoContent))
		if _, err := shared.starter.ResetCircuit(ctx, "tmp-held"); err != nil {
			t.Fatal(err)
		}
		waitState(t, id, herald.StateDelivered)
		recordHistory(t, "delivery_replay_held.json", id)
	})

	// An attempt in flight: ignored. The receiver holds the request until the replay is
	// recorded, so the attempt is surely in flight (the workflow hears the signal at its
	// next workflow task heartbeat, some seconds in).
	t.Run("attempting", func(t *testing.T) {
		release, arrived := make(chan struct{}), make(chan struct{}, 1)
		rcv := newReceiver(t, func(_ int, w http.ResponseWriter) {
			arrived <- struct{}{}
			<-release
			w.WriteHeader(http.StatusNoContent)
		})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the receiver closes
		o := fast(3, time.Hour)
		o.Timeout = herald.Duration(time.Minute)
		putEndpoint(t, "tmp-inflight", rcv.URL, o)
		id := sendOne(t, "tmp-inflight")
		<-arrived
		if err := signalLikeCLI(id); err != nil {
			t.Fatal(err)
		}
		waitMemo(t, id, herald.MemoReplay, "round 1: ignored: attempt 1 is in flight")
		once.Do(func() { close(release) })
		if st := waitState(t, id, herald.StateDelivered); len(st.Attempts) != 1 {
			t.Fatalf("%d attempts, want 1", len(st.Attempts))
		}
		recordHistory(t, "delivery_replay_in_flight.json", id)
	})

	// A dead letter says until when in its memo, and a replay runs its ladder again.
	t.Run("dead_letter", func(t *testing.T) {
		rcv := newReceiver(t, status(http.StatusServiceUnavailable))
		putEndpoint(t, "tmp-dead", rcv.URL, fast(1))
		id := sendOne(t, "tmp-dead")
		st := waitState(t, id, herald.StateDeadLetter)
		until := st.ExpiresAt.UTC().Format(time.RFC3339)
		if got := waitMemo(t, id, herald.MemoDeadLetter, "dead letter until "); got != "dead letter until "+until+": ladder exhausted; last: 503 Service Unavailable" {
			t.Errorf("dead letter memo %q, want until %s and why", got, until)
		}
		rcv.setAnswer(status(http.StatusNoContent))
		if err := signalLikeCLI(id); err != nil {
			t.Fatal(err)
		}
		st = waitState(t, id, herald.StateDelivered)
		if st.Round != 1 || len(st.Attempts) != 2 {
			t.Fatalf("round %d with %d attempts, want round 1 with 2", st.Round, len(st.Attempts))
		}
		if got := memo(t, id, herald.MemoDeadLetter); got != "" {
			t.Errorf("dead letter memo %q after the replay, want it removed", got)
		}
		waitMemo(t, id, herald.MemoReplay, "round 1: dead letter replayed: round 2 starts")
		las := attemptSummaries(t, history(t, id))
		if len(las) != 2 || las[1] != "round 2 · attempt 1 → tmp-dead" {
			t.Errorf("attempt marker summaries %q, want the replayed attempt as round 1 · attempt 1", las)
		}
		recordHistory(t, "delivery_replay_dead_letter.json", id)
	})

	// Closed: the server refuses the signal (the stock CLI prints its error); herald replay
	// delivers the event again.
	t.Run("delivered", func(t *testing.T) {
		rcv := newReceiver(t, status(http.StatusNoContent))
		putEndpoint(t, "tmp-closed", rcv.URL, fast(1))
		id := sendOne(t, "tmp-closed")
		waitState(t, id, herald.StateDelivered)
		var nf *serviceerror.NotFound
		if err := signalLikeCLI(id); !errors.As(err, &nf) {
			t.Fatalf("signal to a closed delivery: %v, want NotFound (workflow execution already completed)", err)
		}
		if _, err := shared.starter.Replay(ctx, starter.Ref{EventID: id}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the event delivered again", func() bool { return len(rcv.requests()) == 2 })
	})
}
