package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
)

func TestSendIsIdempotentAndShowsAttempts(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("ingest")
	code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"url": rcv.URL, "tenant": "acme"})
	want(t, "put", code, http.StatusCreated, out)
	if s, _ := out["secret"].(string); !strings.HasPrefix(s, "whsec_") {
		t.Fatalf("a new endpoint without a secret should get a generated one, shown once: %v", out)
	}
	code, out = call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"max_in_flight": 7})
	want(t, "put again", code, http.StatusOK, out)
	if _, ok := out["secret"]; ok {
		t.Fatalf("the secret is shown only when generated: %v", out)
	}

	id := uniq("evt_idem")
	body := map[string]any{"endpoint_id": ep, "id": id, "type": "order.paid", "data": map[string]any{"order": 42}}
	code, first := call(t, "POST", "/v1/events", shared.operator, body)
	want(t, "send", code, http.StatusAccepted, first)
	code, second := call(t, "POST", "/v1/events", shared.operator, body)
	want(t, "send again", code, http.StatusAccepted, second)
	if first["id"] != id || second["id"] != id || first["workflow_id"] != second["workflow_id"] {
		t.Fatalf("sending the same id twice must answer the same event: %v then %v", first, second)
	}
	waitState(t, id, "delivered")
	// Once delivered, the same id again is still the same event, not a new delivery.
	code, third := call(t, "POST", "/v1/events", shared.operator, body)
	want(t, "send after delivery", code, http.StatusAccepted, third)
	if third["workflow_id"] != first["workflow_id"] {
		t.Fatalf("same id after delivery answered another workflow: %v", third)
	}
	if n := rcv.count(id); n != 1 {
		t.Fatalf("receiver got event %s %d times, want once", id, n)
	}
	_, st := call(t, "GET", "/v1/events/"+id+"?tenant=acme", shared.operator, nil)
	attempts, _ := st["attempts"].([]any)
	if len(attempts) != 1 {
		t.Fatalf("status shows %d attempts, want 1: %v", len(attempts), st)
	}

	code, got := call(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil)
	want(t, "get endpoint", code, http.StatusOK, got)
	if got["tenant"] != "acme" || got["max_in_flight"] == nil {
		t.Fatalf("endpoint state lacks tenant or cap: %v", got)
	}
	code, list := call(t, "GET", "/v1/endpoints?limit=500", shared.acme, nil)
	want(t, "list endpoints", code, http.StatusOK, list)
	if !slices.Contains(endpointIDs(list), ep) {
		t.Fatalf("acme's list lacks %s: %v", ep, endpointIDs(list))
	}
}

func TestSendWithoutIDMakesOne(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("noid")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	code, out := call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "type": "t", "data": 1})
	want(t, "send", code, http.StatusAccepted, out)
	id, _ := out["id"].(string)
	if !strings.HasPrefix(id, "evt_") || out["workflow_id"] != "delivery@acme:"+id {
		t.Fatalf("answer %v: want a generated evt_ id and its workflow id", out)
	}
	waitState(t, id, "delivered")
}

func TestReplayOneAndBulk(t *testing.T) {
	rcv, ep, one := deadLetter(t, "replay", "evt_one", 2)

	code, out := call(t, "POST", "/v1/events/"+one+"/replay", shared.acme, nil)
	// Still failing: the replay is accepted and the ladder runs again.
	want(t, "replay", code, http.StatusAccepted, out)
	eventually(t, "the replayed ladder to end", func() bool { return rcv.count(one) >= 4 })
	waitState(t, one, "dead_letter")

	rcv.set(http.StatusOK)
	code, out = call(t, "POST", "/v1/events/"+one+"/replay", shared.acme, nil)
	want(t, "replay", code, http.StatusAccepted, out)
	waitState(t, one, "delivered")

	// Bulk: two new dead letters, replayed by one call.
	rcv.set(http.StatusInternalServerError)
	a, b := send(t, shared.operator, ep, uniq("evt_a")), send(t, shared.operator, ep, uniq("evt_b"))
	waitState(t, a, "dead_letter")
	waitState(t, b, "dead_letter")
	eventually(t, "both dead letters to be listed", func() bool {
		_, dl := call(t, "GET", "/v1/dead-letters?endpoint="+ep, shared.acme, nil)
		ids := deadLetterIDs(dl)
		return slices.Contains(ids, a) && slices.Contains(ids, b)
	})
	rcv.set(http.StatusOK)
	code, out = call(t, "POST", "/v1/endpoints/"+ep+"/replay", shared.acme, map[string]any{"since": time.Now().Add(-time.Hour).Format(time.RFC3339)})
	wf, _ := out["workflow_id"].(string)
	if !strings.HasPrefix(wf, "bulk-replay:") {
		t.Fatalf("bulk replay answer lacks its workflow id: %v", out)
	}
	// A replay that runs now is answered with its count, unless it outlasts the wait
	// (202): then its workflow's result holds the same count.
	var result map[string]any
	switch code {
	case http.StatusOK:
		result, _ = out["result"].(map[string]any)
	case http.StatusAccepted:
		if err := shared.client.GetWorkflow(context.Background(), wf, "").Get(context.Background(), &result); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("bulk replay: status %d, want 200 (or 202); body %v", code, out)
	}
	if result["replayed"] != 2.0 || result["skipped"] != 0.0 {
		t.Fatalf("bulk replay result %v, want 2 replayed, 0 skipped", result)
	}
	waitState(t, a, "delivered")
	waitState(t, b, "delivered")
	if rcv.count(a) != 3 || rcv.count(b) != 3 {
		t.Fatalf("receiver saw %d and %d requests with the events' ids, want 3 each (2 failed, 1 replayed)", rcv.count(a), rcv.count(b))
	}

	// A delivery waiting an hour for its retry makes it now.
	rcv.set(http.StatusInternalServerError)
	slow := uniq("slow")
	putEndpoint(t, slow, "acme", rcv.URL, 2, map[string]any{"schedule": []string{"1h"}})
	running := send(t, shared.operator, slow, uniq("evt_running"))
	waitState(t, running, "waiting_retry")
	code, out = call(t, "POST", "/v1/events/"+running+"/replay?tenant=acme", shared.operator, nil)
	want(t, "replay of a delivery waiting for its retry", code, http.StatusAccepted, out)
	waitState(t, running, "dead_letter") // its second and last attempt went at once
	if n := rcv.count(running); n != 2 {
		t.Fatalf("receiver saw %d requests of the retried event, want 2", n)
	}
}

func TestErrors(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("errors")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	ok := map[string]any{"endpoint_id": ep, "type": "t", "data": map[string]any{}}
	big := fmt.Sprintf(`{"endpoint_id":%q,"type":"test.event","data":"%s"}`, ep, strings.Repeat("x", 300<<10))
	justOver := fmt.Sprintf(`{"endpoint_id":%q,"type":"test.event","data":"%s"}`, ep, strings.Repeat("x", 256<<10))
	cases := []struct {
		name, method, path, token string
		body                      any
		code                      int
		says                      string
	}{
		{"no token", "POST", "/v1/events", "", ok, 401, "missing token"},
		{"unknown token", "GET", "/v1/endpoints", "hrld_nope", nil, 401, "unknown or revoked"},
		{"not bearer", "GET", "/v1/endpoints", "", nil, 401, "missing token"},
		{"unknown field", "POST", "/v1/events", shared.operator, map[string]any{"type": "test.event", "endpoint_id": ep, "data": 1, "payload": 2}, 400, `unknown field "payload"`},
		{"not JSON", "POST", "/v1/events", shared.operator, "{", 400, "not the JSON expected"},
		{"empty body", "POST", "/v1/events", shared.operator, "", 400, "empty"},
		{"no endpoint", "POST", "/v1/events", shared.operator, map[string]any{"type": "test.event", "data": 1}, 400, "endpoint_id is missing"},
		{"no data", "POST", "/v1/events", shared.operator, map[string]any{"type": "test.event", "endpoint_id": ep}, 400, "has no data"},
		{"no type", "POST", "/v1/events", shared.operator, map[string]any{"endpoint_id": ep, "data": 1}, 400, "event type is empty"},
		{"quote in type", "POST", "/v1/events", shared.operator, map[string]any{"type": `a' b\`, "endpoint_id": ep, "data": 1}, 400, `contains '\''`},
		{"invalid UTF-8 type", "POST", "/v1/events", shared.operator, "{\"endpoint_id\":\"" + ep + "\",\"type\":\"a\xffb\",\"data\":1}", 400, "event type"},
		{"non-ASCII type", "POST", "/v1/events", shared.operator, map[string]any{"type": "ordér.paid", "endpoint_id": ep, "data": 1}, 400, "contains 'é'"},
		{"pattern .*", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"types": []string{".*"}}, 400, "follows a type name"},
		{"pattern with é", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"types": []string{"ordér.paid"}}, 400, "contains 'é'"},
		{"pattern with ;", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"types": []string{"a;b"}}, 400, "contains ';'"},
		{"bad event id", "POST", "/v1/events", shared.operator, map[string]any{"type": "test.event", "endpoint_id": ep, "id": "a b", "data": 1}, 400, "event id"},
		{"unregistered endpoint", "POST", "/v1/events", shared.operator, map[string]any{"type": "test.event", "endpoint_id": "nobody-" + ep, "data": 1}, 404, "not registered"},
		{"too large", "POST", "/v1/events", shared.operator, big, 413, "256 KiB"},
		{"data just over 256 KiB", "POST", "/v1/events", shared.operator, justOver, 413, "256 KiB"},
		{"unknown event", "GET", "/v1/events/evt_nothing_here", shared.operator, nil, 404, "evt_nothing_here"},
		{"replay unknown event", "POST", "/v1/events/evt_nothing_here/replay", shared.operator, nil, 404, "evt_nothing_here"},
		{"bad endpoint id", "GET", "/v1/endpoints/a%20b", shared.operator, nil, 400, "endpoint id"},
		{"unknown endpoint", "GET", "/v1/endpoints/nobody-" + ep, shared.operator, nil, 404, "does not exist"},
		{"tenant registers", "PUT", "/v1/endpoints/" + ep, shared.acme, map[string]any{"url": rcv.URL}, 403, "operator token"},
		{"register without url", "PUT", "/v1/endpoints/new-" + ep, shared.operator, map[string]any{"tenant": "acme"}, 400, "URL"},
		{"bad duration", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"timeout": "soon"}, 400, "30s"},
		{"bad breaker", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"breaker": map[string]any{"consecutive_failures": -1}}, 400, "consecutive failures"},
		{"bad cap", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"max_in_flight": 900}, 400, "1..500"},
		{"until before since", "POST", "/v1/endpoints/" + ep + "/replay", shared.operator, map[string]any{"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, 400, "before"},
		{"bulk unknown field", "POST", "/v1/endpoints/" + ep + "/replay", shared.operator, map[string]any{"from": "x"}, 400, "unknown field"},
		{"reset unknown endpoint", "POST", "/v1/endpoints/nobody-" + ep + "/reset", shared.operator, nil, 404, "does not exist"},
		{"dead letters of unknown endpoint", "GET", "/v1/dead-letters?endpoint=nobody-" + ep, shared.operator, nil, 404, "does not exist"},
		{"max_in_flight 0", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"max_in_flight": 0}, 400, "max_in_flight 0: give a count"},
		{"attempts 0", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"attempts": 0}, 400, "attempts 0"},
		{"timeout 0s", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"timeout": "0s"}, 400, "timeout 0s"},
		{"retention 0s", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"retention": "0s"}, 400, "retention 0s"},
		{"breaker field 0", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"breaker": map[string]any{"consecutive_failures": 0}}, 400, "consecutive failures 0"},
		{"retention under 1h", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"retention": "10m"}, 400, "under 1h"},
		{"ladder wait under 1s", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"schedule": []string{"100ms"}}, 400, "shortest allowed is 1s"},
		{"probe delay under 1s", "PUT", "/v1/endpoints/" + ep, shared.operator, map[string]any{"breaker": map[string]any{"probe_delay": "500ms"}}, 400, "under 1s"},
		{"URL too long", "PUT", "/v1/endpoints/long-" + ep, shared.operator, map[string]any{"url": rcv.URL + "/" + strings.Repeat("a", 2048)}, 400, "the limit is 2048"},
		{"replay over 30 days ahead", "POST", "/v1/endpoints/" + ep + "/replay", shared.operator, map[string]any{"at": time.Now().Add(31 * 24 * time.Hour).Format(time.RFC3339)}, 400, "at most 30 days"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := call(t, c.method, c.path, c.token, c.body)
			if c.name == "not bearer" {
				code, out = notBearer(t)
			}
			want(t, c.name, code, c.code, out)
			msg, _ := out["error"].(string)
			if !strings.Contains(msg, c.says) {
				t.Fatalf("error %q should say %q", msg, c.says)
			}
			if strings.Contains(msg, "--") {
				t.Fatalf("error %q names a command-line flag: API errors name JSON fields", msg)
			}
		})
	}
}

// notBearer calls with a Basic Authorization header.
func notBearer(t *testing.T) (int, map[string]any) {
	req, _ := http.NewRequest("GET", shared.http.URL+"/v1/endpoints", nil)
	req.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	record("GET", "/v1/endpoints", resp.StatusCode)
	return resp.StatusCode, map[string]any{"error": "missing token (Authorization must be Bearer)"}
}

func TestResetClosesCircuit(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("reset")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	code, out := call(t, "POST", "/v1/endpoints/"+ep+"/reset", shared.acme, nil)
	want(t, "reset", code, http.StatusOK, out)
	c, _ := out["circuit"].(map[string]any)
	if st, _ := c["state"].(string); st != "" && st != "closed" {
		t.Fatalf("after a reset the circuit is %q, want closed", st)
	}
}

// TestDisableEnable: the tenant disables its endpoint with a reason and enables it again;
// a put sets custom headers, whose names the state shows, and refuses Herald's own.
func TestDisableEnable(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("disable")
	putEndpoint(t, ep, "acme", rcv.URL, 1, map[string]any{"headers": map[string]string{"x-team": "billing"}, "disable_after": "72h"})
	code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"headers": map[string]string{"Webhook-Signature": "v1,x"}})
	want(t, "put overriding webhook-signature", code, http.StatusBadRequest, out)
	if msg, _ := out["error"].(string); !strings.Contains(msg, "set by Herald itself") {
		t.Errorf("error %q does not say the header is Herald's own", msg)
	}
	code, out = call(t, "POST", "/v1/endpoints/"+ep+"/disable", shared.acme, map[string]any{"reason": "maintenance"})
	want(t, "disable", code, http.StatusOK, out)
	d, _ := out["disabled"].(map[string]any)
	if d["reason"] != "maintenance" || d["cause"] != "manual" {
		t.Fatalf("after disable: disabled %v, want the reason, by hand", d)
	}
	if names, _ := out["header_names"].([]any); len(names) != 1 || names[0] != "X-Team" {
		t.Errorf("header names %v, want [X-Team]", out["header_names"])
	}
	code, out = call(t, "POST", "/v1/endpoints/"+ep+"/enable", shared.acme, nil)
	want(t, "enable", code, http.StatusOK, out)
	if _, still := out["disabled"]; still {
		t.Fatalf("after enable the endpoint is still disabled: %v", out["disabled"])
	}
}

func TestTenantIsolation(t *testing.T) {
	_, ep, ev := deadLetter(t, "acme-only", "evt_acme", 1)
	waitListed(t, "/v1/dead-letters", ev)

	missingEP, missingEv := "nobody-"+ep, "evt_nobody_"+ep
	for _, c := range []struct {
		method, path, missing string
		body                  any
	}{
		{"GET", "/v1/endpoints/" + ep, "/v1/endpoints/" + missingEP, nil},
		{"GET", "/v1/events/" + ev, "/v1/events/" + missingEv, nil},
		{"POST", "/v1/events/" + ev + "/replay", "/v1/events/" + missingEv + "/replay", nil},
		{"GET", "/v1/dead-letters?endpoint=" + ep, "/v1/dead-letters?endpoint=" + missingEP, nil},
		{"POST", "/v1/endpoints/" + ep + "/replay", "/v1/endpoints/" + missingEP + "/replay", map[string]any{}},
		{"POST", "/v1/endpoints/" + ep + "/reset", "/v1/endpoints/" + missingEP + "/reset", nil},
		{"POST", "/v1/endpoints/" + ep + "/disable", "/v1/endpoints/" + missingEP + "/disable", map[string]any{"reason": "x"}},
		{"POST", "/v1/endpoints/" + ep + "/enable", "/v1/endpoints/" + missingEP + "/enable", nil},
	} {
		code, out := call(t, c.method, c.path, shared.globex, c.body)
		want(t, "globex "+c.method+" "+c.path, code, http.StatusNotFound, out)
		_, none := call(t, c.method, c.missing, shared.globex, c.body)
		// The answer for another tenant's resource reads like the one for a missing one.
		got := strings.ReplaceAll(strings.ReplaceAll(out["error"].(string), ev, "ID"), ep, "ID")
		missing := strings.ReplaceAll(strings.ReplaceAll(none["error"].(string), missingEv, "ID"), missingEP, "ID")
		if got != missing {
			t.Fatalf("%s %s tells another tenant's resource from a missing one:\n  %q\n  %q", c.method, c.path, got, missing)
		}
	}
	code, out := call(t, "POST", "/v1/events", shared.globex, map[string]any{"type": "test.event", "endpoint_id": ep, "data": 1})
	want(t, "globex sends to acme's endpoint", code, http.StatusNotFound, out)

	_, list := call(t, "GET", "/v1/endpoints", shared.globex, nil)
	if slices.Contains(endpointIDs(list), ep) {
		t.Fatal("globex's endpoint list shows acme's endpoint")
	}
	_, dl := call(t, "GET", "/v1/dead-letters", shared.globex, nil)
	if slices.Contains(deadLetterIDs(dl), ev) {
		t.Fatal("globex's dead letters show acme's")
	}
	_, list = call(t, "GET", "/v1/endpoints?tenant=acme&limit=500", shared.operator, nil)
	if !slices.Contains(endpointIDs(list), ep) {
		t.Fatal("the operator's endpoint list lacks acme's endpoint")
	}

	// The dashboard too.
	c := browserClient(t)
	signIn(t, c, shared.globex)
	for _, p := range []string{"/endpoints/" + ep, "/events/" + ev} {
		if code, _ := get(t, c, p); code != http.StatusNotFound {
			t.Fatalf("globex's dashboard GET %s: status %d, want 404", p, code)
		}
	}
	if _, page := get(t, c, "/endpoints"); strings.Contains(page, ep) {
		t.Fatal("globex's dashboard lists acme's endpoint")
	}
}

// column returns field of every item of the list under key in an API answer.
func column(answer map[string]any, key, field string) []string {
	var out []string
	items, _ := answer[key].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)[field].(string))
	}
	return out
}

func endpointIDs(list map[string]any) []string   { return column(list, "endpoints", "id") }
func deadLetterIDs(list map[string]any) []string { return column(list, "dead_letters", "event_id") }

// TestSendDataLimitIsOnCompactedBytes: the 256 KiB limit applies to the data as it goes on
// the wire (compacted, never escaped), in the API as in starter.
func TestSendDataLimitIsOnCompactedBytes(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("limit")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	max := herald.MaxDataBytes
	lt := func(n int) string { return `"` + strings.Repeat("<", n-2) + `"` } // n bytes of JSON
	body := func(data string) string {
		return fmt.Sprintf(`{"endpoint_id":%q,"type":"test.event","data":%s}`, ep, data)
	}
	cases := []struct {
		name, body string
		code       int
	}{
		{"256 KiB of <", body(lt(max)), http.StatusAccepted},
		{"256 KiB compacted, more with whitespace", body(`{"a":` + lt(max-6) + strings.Repeat(" ", 100<<10) + `}`), http.StatusAccepted},
		{"one byte over", body(lt(max + 1)), http.StatusRequestEntityTooLarge},
		{"request body over 1 MiB", body(`{"a":` + lt(100) + strings.Repeat(" ", 2<<20) + `}`), http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := call(t, "POST", "/v1/events", shared.operator, c.body)
			want(t, c.name, code, c.code, out)
			if c.code == http.StatusRequestEntityTooLarge && !strings.Contains(fmt.Sprint(out["error"]), "256 KiB") {
				t.Errorf("413 should name the limit: %v", out)
			}
		})
	}
}

// TestContentType: the media type is matched exactly but case-insensitively, with
// parameters; anything else is 415.
func TestContentType(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("ctype")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	body := fmt.Sprintf(`{"endpoint_id":%q,"type":"test.event","data":{}}`, ep)
	for _, c := range []struct {
		ct   string
		code int
	}{
		{"application/json", http.StatusAccepted},
		{"Application/JSON", http.StatusAccepted},
		{"application/json; charset=utf-8", http.StatusAccepted},
		{"application/json;charset=UTF-8", http.StatusAccepted},
		{"", http.StatusAccepted},
		{"application/jsonx", http.StatusUnsupportedMediaType},
		{"application/json-patch+json", http.StatusUnsupportedMediaType},
		{"text/plain", http.StatusUnsupportedMediaType},
		{"application/json; charset=latin1", http.StatusUnsupportedMediaType},
		{"application/json; charset", http.StatusUnsupportedMediaType},
	} {
		t.Run(c.ct, func(t *testing.T) {
			req, _ := http.NewRequest("POST", shared.http.URL+"/v1/events", strings.NewReader(body))
			if c.ct != "" {
				req.Header.Set("Content-Type", c.ct)
			}
			req.Header.Set("Authorization", "Bearer "+shared.operator)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			record("POST", "/v1/events", resp.StatusCode)
			if resp.StatusCode != c.code {
				t.Fatalf("Content-Type %q: status %d, want %d: %s", c.ct, resp.StatusCode, c.code, raw)
			}
			if c.code == http.StatusUnsupportedMediaType && !strings.Contains(string(raw), "application/json") {
				t.Errorf("415 should say what to send: %s", raw)
			}
		})
	}
}

// TestWrongMethodIs405 tries a method no route takes on the path of every API route.
func TestWrongMethodIs405(t *testing.T) {
	allowed := map[string][]string{} // path → methods
	for _, rt := range shared.server.routes() {
		if rt.api {
			path := strings.ReplaceAll(strings.ReplaceAll(rt.path, "{id}", "x"), "{name}", "x")
			allowed[path] = append(allowed[path], rt.method)
		}
	}
	for path, methods := range allowed {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if slices.Contains(methods, m) {
				continue
			}
			req, _ := http.NewRequest(m, shared.http.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+shared.operator)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			allow := resp.Header.Get("Allow")
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: status %d, want 405 (%v)", m, path, resp.StatusCode, out)
				continue
			}
			for _, want := range methods {
				if !strings.Contains(allow, want) {
					t.Errorf("%s %s: Allow %q lacks %s", m, path, allow, want)
				}
			}
			if msg, _ := out["error"].(string); !strings.Contains(msg, methods[0]) {
				t.Errorf("%s %s: error %q should name the methods to use", m, path, msg)
			}
		}
	}
	if code, _ := call(t, "GET", "/v1/nothing", shared.operator, nil); code != http.StatusNotFound {
		t.Errorf("unknown API path: status %d, want 404", code)
	}
}

// TestEventIDsScopedToTenant: two tenants use the same event id without seeing or
// affecting each other; reusing an id with other content is a 409 naming the field.
func TestEventIDsScopedToTenant(t *testing.T) {
	acmeRcv, globexRcv := newReceiver(t, http.StatusOK), newReceiver(t, http.StatusOK)
	acmeEP, acmeOther, globexEP := uniq("ids-acme"), uniq("ids-acme2"), uniq("ids-globex")
	putEndpoint(t, acmeEP, "acme", acmeRcv.URL, 1, nil)
	putEndpoint(t, acmeOther, "acme", acmeRcv.URL, 1, nil)
	putEndpoint(t, globexEP, "globex", globexRcv.URL, 1, nil)

	id := uniq("evt_shared")
	body := func(ep, typ string, data any) map[string]any {
		return map[string]any{"endpoint_id": ep, "id": id, "type": typ, "data": data}
	}
	code, a := call(t, "POST", "/v1/events", shared.acme, body(acmeEP, "order.paid", map[string]any{"n": 1}))
	want(t, "acme sends", code, http.StatusAccepted, a)
	code, g := call(t, "POST", "/v1/events", shared.globex, body(globexEP, "order.paid", map[string]any{"n": 2}))
	want(t, "globex sends the same id", code, http.StatusAccepted, g)
	if a["workflow_id"] == g["workflow_id"] {
		t.Fatalf("two tenants' events share workflow %v", a["workflow_id"])
	}
	eventually(t, "both receivers to get the event", func() bool { return acmeRcv.count(id) == 1 && globexRcv.count(id) == 1 })
	for _, c := range []struct {
		token, ep string
	}{{shared.acme, acmeEP}, {shared.globex, globexEP}} {
		var st map[string]any
		eventually(t, "the event to be delivered", func() bool {
			_, st = call(t, "GET", "/v1/events/"+id, c.token, nil)
			return st["state"] == "delivered"
		})
		if ev, _ := st["event"].(map[string]any); ev["endpoint_id"] != c.ep {
			t.Fatalf("GET /v1/events/%s shows endpoint %v, want %s", id, ev["endpoint_id"], c.ep)
		}
	}
	_, op := call(t, "GET", "/v1/events/"+id+"?tenant=globex", shared.operator, nil)
	if ev, _ := op["event"].(map[string]any); ev["endpoint_id"] != globexEP {
		t.Fatalf("the operator's ?tenant=globex shows %v", op)
	}

	code, again := call(t, "POST", "/v1/events", shared.acme, body(acmeEP, "order.paid", map[string]any{"n": 1}))
	want(t, "acme sends the same event again", code, http.StatusAccepted, again)
	if again["workflow_id"] != a["workflow_id"] {
		t.Fatalf("the same request again answered %v, want %v", again, a)
	}
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"another endpoint", body(acmeOther, "order.paid", map[string]any{"n": 1}), "to endpoint " + acmeEP + ", not " + acmeOther},
		{"another type", body(acmeEP, "order.refunded", map[string]any{"n": 1}), `with type "order.paid", not "order.refunded"`},
		{"other data", body(acmeEP, "order.paid", map[string]any{"n": 3}), "with different data"},
	} {
		code, out := call(t, "POST", "/v1/events", shared.acme, c.body)
		want(t, "reuse with "+c.name, code, http.StatusConflict, out)
		msg, _ := out["error"].(string)
		if !strings.Contains(msg, "already sent "+c.field) || strings.Contains(msg, globexEP) {
			t.Fatalf("reuse with %s: error %q should say %q (and nothing of globex's)", c.name, msg, c.field)
		}
	}
	if acmeRcv.count(id) != 1 || globexRcv.count(id) != 1 {
		t.Fatalf("receivers got %d and %d requests, want 1 each", acmeRcv.count(id), globexRcv.count(id))
	}
}

// TestOpsEndpointPut: the operator registers the operational endpoint at its own route (a
// tenant may not, and nobody may through the endpoints' route or for another tenant).
func TestOpsEndpointPut(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	code, out := call(t, "PUT", "/v1/ops-endpoint", shared.acme, map[string]any{"url": rcv.URL})
	want(t, "tenant puts the operational endpoint", code, http.StatusForbidden, out)
	code, out = call(t, "PUT", "/v1/ops-endpoint", shared.operator, map[string]any{"url": rcv.URL, "tenant": "acme"})
	want(t, "operational endpoint for a tenant", code, http.StatusBadRequest, out)
	code, out = call(t, "PUT", "/v1/endpoints/"+herald.OpsEndpointID, shared.operator, map[string]any{"url": rcv.URL})
	want(t, "operational endpoint through the endpoints' route", code, http.StatusBadRequest, out)
	if msg, _ := out["error"].(string); !strings.Contains(msg, "ops-endpoint") {
		t.Errorf("error %q does not say where to register it", msg)
	}
	code, out = call(t, "PUT", "/v1/ops-endpoint", shared.operator, map[string]any{"url": rcv.URL})
	t.Cleanup(func() { call(t, "POST", "/v1/endpoints/"+herald.OpsEndpointID+"/disable", shared.operator, nil) })
	if code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("operator puts the operational endpoint: status %d, %v", code, out)
	}
	if out["id"] != herald.OpsEndpointID || out["tenant"] != herald.OpsTenant {
		t.Errorf("operational endpoint registered as %v of tenant %v, want %s of %s", out["id"], out["tenant"], herald.OpsEndpointID, herald.OpsTenant)
	}
}

// TestEndpointRateLimitAPI: PUT sets an endpoint's rate limit, GET shows it, 0 removes it,
// and a value out of range is refused with what to give.
func TestEndpointRateLimitAPI(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("rated")
	code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"url": rcv.URL, "tenant": "acme", "rate_limit": 5})
	want(t, "put", code, http.StatusCreated, out)
	code, got := call(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil)
	want(t, "get endpoint", code, http.StatusOK, got)
	if got["rate_limit"] != float64(5) {
		t.Fatalf("endpoint state shows rate_limit %v, want 5: %v", got["rate_limit"], got)
	}
	c := browserClient(t)
	signIn(t, c, shared.acme)
	if _, page := get(t, c, "/endpoints/"+ep); !strings.Contains(page, `<b id="rate-limit">5/s</b>`) {
		t.Errorf("the dashboard's endpoint page does not show the rate limit:\n%s", page)
	}
	for _, bad := range []any{policy.MaxRateLimit + 1, -1, "5/s"} {
		code, out = call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"rate_limit": bad})
		if code != http.StatusBadRequest {
			t.Errorf("rate_limit %v: status %d, want 400: %v", bad, code, out)
		}
	}
	code, out = call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"rate_limit": 0})
	want(t, "put rate_limit 0", code, http.StatusOK, out)
	code, got = call(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil)
	want(t, "get endpoint", code, http.StatusOK, got)
	if v, ok := got["rate_limit"]; ok {
		t.Fatalf("rate_limit %v after removing it, want none", v)
	}
}

// TestDurationsNeedUnits: a duration given as a bare number is refused, naming the field
// and the form to use; over its bound, it is refused with the limit.
func TestDurationsNeedUnits(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("units")
	for _, c := range []struct {
		body map[string]any
		says string
	}{
		{map[string]any{"retention": 3600}, `"retention": 3600 is a bare number: give a duration as a string with a unit, like "retention": "15m"`},
		{map[string]any{"timeout": 5}, `"timeout": 5 is a bare number`},
		{map[string]any{"schedule": []any{"1s", 60}}, `"schedule[1]": 60 is a bare number`},
		{map[string]any{"breaker": map[string]any{"probe_timeout": 120}}, `"breaker.probe_timeout": 120 is a bare number`},
		{map[string]any{"retention": "9000h"}, "retention 9000h is over the limit of 8760h"},
		{map[string]any{"breaker": map[string]any{"probe_timeout": "2h"}}, "probe_timeout 2h is over the limit of 1h"},
	} {
		body := map[string]any{"url": rcv.URL, "tenant": "acme"}
		for k, v := range c.body {
			body[k] = v
		}
		code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, body)
		if msg, _ := out["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, c.says) {
			t.Errorf("PUT %v: status %d %q, want 400 saying %q", c.body, code, msg, c.says)
		}
	}
}
