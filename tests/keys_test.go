package tests

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/codec"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/worker"
)

// keyed is a stack whose worker encrypts with its own keys.
type keyed struct {
	*testkit.Stack
	keys *codec.Keyring
}

// startKeyed starts a stack (its own server) whose worker and starter hold keys.
func startKeyed(t *testing.T, keys *codec.Keyring) keyed {
	t.Helper()
	stk, err := testkit.Start(context.Background(), testkit.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stk.Stop)
	return keyed{Stack: stk, keys: keys}
}

// producer dials the stack's server with other keys (nil: plain text) and returns a starter.
func (k keyed) producer(t *testing.T, keys *codec.Keyring) (client.Client, *starter.Client) {
	t.Helper()
	c, err := client.DialContext(context.Background(), client.Options{
		HostPort: k.Server.FrontendAddress(), Namespace: k.Server.Namespace(), Logger: sdklog.NewStructuredLogger(quiet),
		DataConverter: codec.DataConverter(keys), FailureConverter: codec.FailureConverter(keys),
		Identity: codec.Identity("test-producer", keys),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, starter.New(c, starter.Options{PayloadKeyID: activeKey(keys)})
}

func activeKey(k *codec.Keyring) string {
	if k == nil {
		return ""
	}
	return k.ActiveKeyID()
}

func newKeys(t *testing.T, name string) *codec.Keyring {
	t.Helper()
	k, err := codec.GenerateKeyFile(t.TempDir() + "/" + name + ".key")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEndpointListWithWrongKey: a client whose keys cannot read the endpoints' answers
// gets an error that says so, not a list of empty rows, once the list shows the endpoint.
func TestEndpointListWithWrongKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stk := startKeyed(t, newKeys(t, "worker"))
	rcv := newReceiver(t, status(200))
	if _, err := stk.Starter.PutEndpoint(ctx, putReq("keys-list", rcv.URL)); err != nil {
		t.Fatal(err)
	}
	// The list comes from Temporal's visibility store, which shows a registration a moment
	// after the put returns (longer on a loaded machine): wait until it lists the endpoint.
	var list []herald.EndpointState
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var page starter.EndpointPage
		page, err = stk.Starter.ListEndpoints(ctx, herald.EndpointFilter{}, nil, 0)
		list = page.Endpoints
		if err == nil && len(list) == 1 && list[0].URL == rcv.URL {
			break
		}
		if time.Now().After(deadline) || len(list) > 1 {
			t.Fatalf("with the worker's keys: %+v, %v", list, err)
		}
	}
	for _, tc := range []struct {
		name string
		keys *codec.Keyring
	}{
		{"another key", newKeys(t, "other")},
		{"no keys", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := stk.producer(t, tc.keys)
			list, err := s.ListEndpoints(ctx, herald.EndpointFilter{}, nil, 0)
			if err == nil {
				t.Fatalf("ListEndpoints = %+v, nil; want an error about the keys", list)
			}
			if !codec.IsUndecryptable(err) {
				t.Fatalf("error %v does not say the payloads cannot be decrypted", err)
			}
			if tc.keys != nil && (!errors.Is(err, codec.ErrUndecryptable) || !strings.Contains(err.Error(), stk.keys.ActiveKeyID())) {
				t.Fatalf("error %v does not name the missing key %s", err, stk.keys.ActiveKeyID())
			}
		})
	}
}

// keyLines returns the key lines of keyrings' files, for a keyring holding several keys.
func keyLines(t *testing.T, paths ...string) *codec.Keyring {
	t.Helper()
	var text string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text += string(b)
	}
	k, err := codec.ParseKeyring(text)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeyRotationOrder follows a key rotation in the documented order, and the wrong one:
//
//  1. A producer that gets the new key before the workers is refused by send (the workers
//     advertise their keys); one that cannot tell sends anyway, and its event is not lost: it
//     waits, reported by status, a log line and a metric, as "waiting for a worker with
//     payload key NEW".
//  2. Workers get the new key (a line in their key file): the waiting event is delivered,
//     and send accepts the new key.
//  3. Producers and workers encrypt with the new key; the old key stays for old histories.
func TestKeyRotationOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	oldPath, newPath := dir+"/old.key", dir+"/new.key"
	oldKey, err := codec.GenerateKeyFile(oldPath)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // key ids carry the time; keep them apart
	newKey, err := codec.GenerateKeyFile(newPath)
	if err != nil {
		t.Fatal(err)
	}
	if oldKey.ActiveKeyID() == newKey.ActiveKeyID() {
		t.Fatalf("two keys share id %s", oldKey.ActiveKeyID())
	}
	rec, err := metrics.NewWithOptions(metrics.Options{SDKReportInterval: 100 * time.Millisecond, NoProcessMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	logs := &testkit.Buffer{}
	stk, err := testkit.Start(ctx, testkit.Options{Keys: oldKey, Client: func(o *client.Options) {
		o.MetricsHandler = rec.SDKHandler()
		o.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(logs, nil)))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer stk.Stop()
	rcv := newReceiver(t, status(http.StatusOK))
	if _, err := stk.Starter.PutEndpoint(ctx, putReq("rotating", rcv.URL)); err != nil {
		t.Fatal(err)
	}

	// Producers with the new key first (and the old one, to read what workers write).
	producerKeys := keyLines(t, newPath, oldPath)
	pc, err := client.DialContext(ctx, client.Options{
		HostPort: stk.Server.FrontendAddress(), Namespace: stk.Server.Namespace(), Logger: sdklog.NewStructuredLogger(quiet),
		DataConverter: codec.DataConverter(producerKeys), FailureConverter: codec.FailureConverter(producerKeys),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	producer := func(tell bool) *starter.Client {
		o := starter.Options{DataConverter: codec.DataConverter(producerKeys), EndpointCacheTTL: time.Nanosecond}
		if tell {
			o.PayloadKeyID = producerKeys.ActiveKeyID()
		}
		return starter.New(pc, o)
	}
	ev := starter.Event{Type: "test.event", ID: "evt_rotation", EndpointID: "rotating", Data: json.RawMessage(`{"k":"new"}`)}
	_, err = producer(true).Send(ctx, ev)
	if !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), newKey.ActiveKeyID()) {
		t.Fatalf("send with a key no worker holds = %v; want it refused, naming the key", err)
	}

	// A producer that cannot tell (an older client) sends anyway: the event waits.
	if _, err := producer(false).Send(ctx, ev); err != nil {
		t.Fatal(err)
	}
	want := codec.WaitingForKey(newKey.ActiveKeyID())
	var st starter.Report
	eventually(t, "status to say the event waits for the key", func() bool {
		st, err = producer(false).Status(ctx, starter.Ref{EventID: ev.ID})
		return err == nil && st.State == herald.StateWaitingKey && st.Waiting != nil && st.Waiting.Reason == want
	})
	if st.Event.EndpointID != "rotating" {
		t.Errorf("waiting status shows endpoint %q", st.Event.EndpointID)
	}
	// The API says the same.
	tokens, err := server.OpenTokenStore(dir + "/tokens.json")
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := tokens.Create(true, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	api, err := server.New(server.Options{Starter: producer(false), Client: pc, Tokens: tokens, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/events/"+ev.ID, nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	rw := httptest.NewRecorder()
	api.ServeHTTP(rw, r)
	var got herald.Status
	if err := json.Unmarshal(rw.Body.Bytes(), &got); rw.Code != http.StatusOK || err != nil || got.State != herald.StateWaitingKey || got.Waiting == nil || got.Waiting.Reason != want {
		t.Errorf("GET /v1/events/%s = %d %s; want 200 with state waiting_key and %q", ev.ID, rw.Code, rw.Body, want)
	}
	if _, err := producer(false).Replay(ctx, starter.Ref{EventID: ev.ID}); !errors.Is(err, starter.ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("replay of a waiting event = %v; want a refusal that says it waits for the key", err)
	}
	eventually(t, "a log line and a metric", func() bool {
		return strings.Contains(logs.String(), want) && metricValue(t, rec, codec.MetricMissingKey, "key", newKey.ActiveKeyID()) > 0
	})
	if desc, err := stk.Client.DescribeWorkflowExecution(ctx, herald.DeliveryID(herald.DefaultTenant, ev.ID), ""); err != nil ||
		desc.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("the undecryptable delivery is not running: %v, %v", desc.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	if len(rcv.requests()) != 0 {
		t.Fatal("the receiver got a request before any worker held the key")
	}

	// 2. Workers first: a worker with both keys (still encrypting with the old one) takes
	// over, and the waiting event goes out.
	workerKeys := keyLines(t, oldPath, newPath)
	wc, err := client.DialContext(ctx, client.Options{
		HostPort: stk.Server.FrontendAddress(), Namespace: stk.Server.Namespace(), Logger: sdklog.NewStructuredLogger(quiet),
		DataConverter: codec.DataConverter(workerKeys), FailureConverter: codec.FailureConverter(workerKeys),
		Identity: codec.Identity("rotated-worker", workerKeys),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	stk.Worker.Stop()
	w, err := worker.New(wc, worker.Options{Net: loopback, RenewInterval: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	stk.Worker = w // stopped by stk.Stop
	waitFor(t, producer(false), ev.ID, herald.StateDelivered)
	if got := rcv.requests(); len(got) != 1 || !strings.Contains(string(got[0].Body), `"k":"new"`) {
		t.Fatalf("receiver got %d requests, want the event once", len(got))
	}

	// 3. Then producers: send with the new key is accepted now that a worker holds it.
	var res starter.SendResult
	eventually(t, "send with the new key to be accepted", func() bool {
		res, err = producer(true).Send(ctx, starter.Event{Type: "test.event", ID: "evt_rotation_2", EndpointID: "rotating", Data: json.RawMessage(`2`)})
		return err == nil
	})
	waitFor(t, producer(true), res.EventID, herald.StateDelivered)
}

// metricValue returns the value of counter name with label=value in rec's registry.
func metricValue(t *testing.T, rec *metrics.Recorder, name, label, value string) float64 {
	t.Helper()
	mfs, err := rec.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), name) {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
