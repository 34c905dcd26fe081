package activities

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

// passClient is the part of a Temporal client WakeWaiters uses: updates answer with
// answer(waiter) once release is closed, and signals are recorded.
type passClient struct {
	client.Client
	release chan struct{}
	answer  func(waiter string) error

	mu              sync.Mutex
	inFlight, most  int
	updates         []string
	signals         []passSignal
	signalled, done chan struct{}
}

type passSignal struct {
	to, name string
	arg      any
}

func (c *passClient) UpdateWorkflow(ctx context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.mu.Lock()
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	c.updates = append(c.updates, o.WorkflowID)
	c.mu.Unlock()
	<-c.release
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
	err := c.answer(o.WorkflowID)
	c.done <- struct{}{}
	if err != nil {
		return nil, err
	}
	return passHandle{}, nil
}

func (c *passClient) SignalWorkflow(_ context.Context, id, _, name string, arg any) error {
	c.mu.Lock()
	c.signals = append(c.signals, passSignal{to: id, name: name, arg: arg})
	c.mu.Unlock()
	c.signalled <- struct{}{}
	if name == herald.SignalPermit && id == "gone" {
		return serviceerror.NewNotFound("workflow execution already completed")
	}
	return nil
}

type passHandle struct{ client.WorkflowUpdateHandle }

func (passHandle) Get(context.Context, any) error { return nil }

// TestWakeWaitersBounds: WakeWaiters has at most wakeInFlight updates in flight and holds
// at most wakePending passes; those past it are declined (the endpoint signals them).
func TestWakeWaitersBounds(t *testing.T) {
	defer func(f int, p int64) { wakeInFlight, wakePending = f, p }(wakeInFlight, wakePending)
	wakeInFlight, wakePending = 2, 5
	c := &passClient{release: make(chan struct{}), answer: func(string) error { return nil },
		signalled: make(chan struct{}, 10), done: make(chan struct{}, 10)}
	o := &Operator{Client: c}
	var grants []policy.Grant
	for _, w := range []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"} {
		grants = append(grants, policy.Grant{Waiter: w, Pass: true})
	}
	out, err := o.WakeWaiters(context.Background(), herald.PassWake{Endpoint: "ep", Grants: grants})
	if err != nil || out.Sent != 5 || !slices.Equal(out.Declined, []string{"w6", "w7"}) {
		t.Fatalf("WakeWaiters: %+v, %v; want 5 sent, w6 and w7 declined", out, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		n := c.inFlight
		c.mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
	}
	close(c.release)
	for range 5 {
		<-c.done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.most != 2 || len(c.updates) != 5 || len(c.signals) != 0 {
		t.Errorf("most in flight %d (want 2), %d updates (want 5), signals %v (want none)", c.most, len(c.updates), c.signals)
	}
}

// TestWakeWaitersFallbacks: a refused pass and a delivery that is gone are told to the
// endpoint as refusals (herald.Done.Refused); an update the delivery's code refuses
// otherwise (a worker of an older release) falls back to the permit signal, and a signal to
// a delivery that is gone is told to the endpoint too; an update with no answer sends
// nothing more (the delivery may have taken the pass).
func TestWakeWaitersFallbacks(t *testing.T) {
	until := time.Date(2026, 12, 5, 10, 0, 30, 0, time.UTC)
	for _, tc := range []struct {
		waiter string
		err    error
		want   []passSignal
	}{
		{"refuses", temporal.NewNonRetryableApplicationError("not waiting", herald.NotWaitingForPermit, nil),
			[]passSignal{{herald.EndpointWorkflowID("ep"), herald.SignalDones, []herald.Done{{Waiter: "refuses", Refused: until}}}}},
		{"completed", serviceerror.NewNotFound("workflow execution already completed"),
			[]passSignal{{herald.EndpointWorkflowID("ep"), herald.SignalDones, []herald.Done{{Waiter: "completed", Refused: until}}}}},
		{"old", temporal.NewApplicationError("unknown update pass", "*errors.errorString"),
			[]passSignal{{"old", herald.SignalPermit, policy.Grant{Waiter: "old", Until: until, Pass: true}}}},
		{"unanswered", context.DeadlineExceeded, nil},
		{"gone", temporal.NewApplicationError("unknown update pass", "*errors.errorString"),
			[]passSignal{{"gone", herald.SignalPermit, policy.Grant{Waiter: "gone", Until: until, Pass: true}},
				{herald.EndpointWorkflowID("ep"), herald.SignalDones, []herald.Done{{Waiter: "gone", Refused: until}}}}},
	} {
		t.Run(tc.waiter, func(t *testing.T) {
			release := make(chan struct{})
			close(release)
			c := &passClient{release: release, answer: func(string) error { return tc.err },
				signalled: make(chan struct{}, 10), done: make(chan struct{}, 10)}
			o := &Operator{Client: c}
			g := policy.Grant{Waiter: tc.waiter, Until: until, Pass: true}
			if _, err := o.WakeWaiters(context.Background(), herald.PassWake{Endpoint: "ep", Grants: []policy.Grant{g}}); err != nil {
				t.Fatal(err)
			}
			for range tc.want {
				<-c.signalled
			}
			if len(tc.want) == 0 {
				<-c.done
				time.Sleep(50 * time.Millisecond) // room for a signal that must not come
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.signals) != len(tc.want) {
				t.Fatalf("signals %+v, want %+v", c.signals, tc.want)
			}
			for i, s := range c.signals {
				w := tc.want[i]
				if s.to != w.to || s.name != w.name || !equalArg(s.arg, w.arg) {
					t.Errorf("signal %d: %+v, want %+v", i, s, w)
				}
			}
		})
	}
}

// equalArg compares two signal arguments of the kinds WakeWaiters sends.
func equalArg(a, b any) bool {
	switch a := a.(type) {
	case []herald.Done:
		b, ok := b.([]herald.Done)
		return ok && len(a) == 1 && len(b) == 1 && a[0].Waiter == b[0].Waiter && a[0].Refused.Equal(b[0].Refused) && a[0].Outcome == nil
	case policy.Grant:
		b, ok := b.(policy.Grant)
		return ok && a.Waiter == b.Waiter && a.Until.Equal(b.Until) && a.Pass == b.Pass
	}
	return false
}
