package workflows

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
)

// probeScript answers the probes of one test environment and records them, with the
// bulk replays started.
type probeScript struct {
	mu      sync.Mutex
	ok      func(n int) bool // whether probe n succeeds; nil: none does
	probes  tape[probeCall]
	replays tape[replayCall]
}

type probeCall struct {
	In activities.ProbeInput
	At time.Time
}

type replayCall struct {
	ID string
	In herald.BulkReplayInput
}

// probeScripts holds each test environment's probeScript.
var probeScripts sync.Map

// mockRecovery mocks the probe and the bulk replay of env's endpoint workflows: every probe
// fails unless the test says otherwise (answerProbes).
func mockRecovery(env *testsuite.TestWorkflowEnvironment) {
	s := &probeScript{}
	probeScripts.Store(env, s)
	env.OnActivity((&activities.Prober{}).Probe, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ProbeInput) (herald.Result, error) {
			s.probes.add(probeCall{In: in, At: env.Now()})
			s.mu.Lock()
			ok := s.ok != nil && s.ok(in.Number)
			s.mu.Unlock()
			if ok {
				return deliveredAttempt(env.Now(), herald.Settings{}), nil
			}
			return failedAttempt(env.Now(), herald.Settings{}), nil
		})
	env.OnActivity((&activities.Ops{}).ReplayRecovered, mock.Anything, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string, in herald.BulkReplayInput) (string, error) {
			s.replays.add(replayCall{ID: id, In: in})
			return id, nil
		})
}

// answerProbes makes probe n of env's endpoint succeed when ok(n).
func answerProbes(env *testsuite.TestWorkflowEnvironment, ok func(n int) bool) *probeScript {
	v, _ := probeScripts.Load(env)
	s := v.(*probeScript)
	s.mu.Lock()
	s.ok = ok
	s.mu.Unlock()
	return s
}

// disableForFailing registers the endpoint with the shortest disable-after (1h) and has it
// fail at 1 minute and at 1h1m1s: it is disabled for failing then (returned).
func disableForFailing(t *testing.T, env *testsuite.TestWorkflowEnvironment) time.Duration {
	t.Helper()
	register(t, env, &herald.Overrides{DisableAfter: herald.Duration(policy.MinDisableAfter)})
	report(env, time.Minute, false, false)
	disabledAt := time.Minute + time.Hour + time.Second
	report(env, disabledAt, false, false)
	return disabledAt
}

// TestEndpointRecovers: an endpoint disabled for failing is probed on the default ladder
// (1h, then 3h after, then 6h after); the third probe succeeds: the endpoint is enabled,
// its dead letters are replayed by a bulk replay once every gate knows, and
// endpoint.recovered is emitted, after endpoint.disabled.
func TestEndpointRecovers(t *testing.T) {
	env, disabled, _ := lifecycleEnv(t)
	s := answerProbes(env, func(n int) bool { return n == 3 })
	d := disableForFailing(t, env)
	var between herald.EndpointState
	env.RegisterDelayedCallback(func() { between = queryState(t, env) }, d+2*time.Hour)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, d+12*time.Hour)

	var offsets []time.Duration
	for _, p := range s.probes.all() {
		offsets = append(offsets, p.At.Sub(at(d)))
		if p.In.Endpoint.URL != testURL || p.In.Endpoint.Secret == "" || !p.In.DisabledAt.Equal(at(d)) {
			t.Errorf("probe %d input %+v: want the endpoint's URL and secret, disabled at %s", p.In.Number, p.In, at(d))
		}
	}
	if want := []time.Duration{time.Hour, 4 * time.Hour, 10 * time.Hour}; !slices.Equal(offsets, want) {
		t.Errorf("probes at %v after the disable, want %v", offsets, want)
	}
	if r := between.Disabled; r == nil || r.Recovery == nil || r.Recovery.Probes != 1 || !r.Recovery.NextAt.Equal(at(d+4*time.Hour)) || r.Recovery.Last == "" {
		t.Errorf("between probes: disabled %+v; want probe 1 made and failed, the next at +4h", r)
	}
	recovered := at(d + 10*time.Hour)
	if got, want := disabled.all(), []string{"failing@" + d.String(), "<unset>@" + (d + 10*time.Hour).String()}; !slices.Equal(got, want) {
		t.Errorf("HeraldDisabled upserts %v, want %v", got, want)
	}
	r := s.replays.all()
	if len(r) != 1 || r[0].ID != herald.RecoveryReplayID(testEndpointID, recovered) ||
		r[0].In.Filter.EndpointID != testEndpointID || r[0].In.Filter.Tenant != herald.DefaultTenant {
		t.Errorf("bulk replays %+v, want one of the endpoint's dead letters in its tenant", r)
	}
	evs := wantOps(t, env, []string{herald.OpsEndpointDisabled, herald.OpsEndpointRecovered})
	if len(evs) == 2 {
		var data herald.OpsData
		if err := json.Unmarshal(evs[1].Data, &data); err != nil {
			t.Fatal(err)
		}
		if data.EndpointID != testEndpointID || data.BulkReplayID != r[0].ID || data.Reason == "" {
			t.Errorf("endpoint.recovered data %+v: want the endpoint, the bulk replay and why", data)
		}
	}
}

// TestEndpointRecoveryLadderEnds: probes that keep failing stop 30 days after the disable
// (33 probes); the endpoint stays disabled, its state saying so.
func TestEndpointRecoveryLadderEnds(t *testing.T) {
	env, disabled, _ := lifecycleEnv(t)
	s := answerProbes(env, nil)
	d := disableForFailing(t, env)
	var end herald.EndpointState
	env.RegisterDelayedCallback(func() { end = queryState(t, env) }, d+40*24*time.Hour)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, d+40*24*time.Hour+time.Minute)
	if n := len(s.probes.all()); n != 33 {
		t.Errorf("%d probes, want 33", n)
	}
	if r := end.Disabled; r == nil || r.Recovery == nil || !r.Recovery.Ended || !r.Recovery.NextAt.IsZero() {
		t.Errorf("after 40 days: %+v, want disabled with the probing ended", r)
	}
	if got := disabled.all(); len(got) != 1 {
		t.Errorf("HeraldDisabled upserts %v, want only the disable", got)
	}
}

// TestEndpointDisabledByHandNotProbed: an endpoint disabled by hand, or by hand after it
// was disabled for failing, is never probed.
func TestEndpointDisabledByHandNotProbed(t *testing.T) {
	env, _, _ := lifecycleEnv(t)
	s := answerProbes(env, func(int) bool { return true })
	d := disableForFailing(t, env)
	env.RegisterDelayedCallback(func() {
		sendUpdate[herald.EndpointState](env, herald.UpdateDisable, herald.DisableRequest{Reason: "the customer asked"})
	}, d+30*time.Minute)
	runEndpoint(t, env, herald.EndpointInput{ID: testEndpointID}, d+3*24*time.Hour)
	if p := s.probes.all(); len(p) != 0 {
		t.Errorf("%d probes of an endpoint disabled by hand, want none", len(p))
	}
	if r := s.replays.all(); len(r) != 0 {
		t.Errorf("bulk replays %+v, want none", r)
	}
}
