package server

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
)

// searchInjections are the ways found to break out of a value of the event search, with
// their unicode and double-escape variants.
var searchInjections = []string{
	`x\' OR WorkflowType = "Delivery" -- `,
	`x\' OR WorkflowType = 'Delivery' -- `,
	`x' OR WorkflowType = 'Delivery' -- `,
	`x\\' OR WorkflowType = 'Delivery' -- `,
	`x\\\' OR WorkflowType = 'Delivery' -- `,
	`x'' OR WorkflowType = 'Delivery' -- `,
	`x" OR WorkflowType = "Delivery" -- `,
	`x\'OR(WorkflowType='Delivery')--`,
	`x'OR(WorkflowType='Delivery')#`,
	`x'OR(WorkflowType='Delivery')/*`,
	`x\`,
	`'`,
	`\`,
	`--`,
	"x\u2019 OR WorkflowType = \u2018Delivery\u2019 -- ",
	"x\uff07 OR 1=1 -- ",
	"\x00",
	"x\x00' OR 1=1 -- ",
	"\xff' OR 1=1 -- ",
	"x\xc0\xa7OR(1=1)--",
	"%27 OR 1=1 -- ",
}

// filterOK reports whether value is a valid value of filter, by the contract's grammar.
func filterOK(filter, value string) bool {
	var f herald.EventFilter
	switch filter {
	case "type":
		f.Type = value
	case "state":
		f.State = herald.State(value)
	case "event":
		f.EventID = value
	case "endpoint":
		f.Endpoints = []string{value}
	case "tenant":
		f.Tenant = value
	}
	return f.Validate() == nil
}

// listedIDs are the event ids of a GET /v1/events answer.
func listedIDs(out map[string]any) []string {
	var ids []string
	evs, _ := out["events"].([]any)
	for _, e := range evs {
		ids = append(ids, fmt.Sprint(e.(map[string]any)["event_id"]))
	}
	return ids
}

// TestEventSearchInjections: no crafted filter value lists another tenant's deliveries;
// one that breaks its filter's grammar answers 400 naming the filter, never 500.
func TestEventSearchInjections(t *testing.T) {
	rcv := headerReceiver(t, http.StatusOK)
	ep := uniq("inject-globex")
	putEndpoint(t, ep, "globex", rcv.URL, 1, nil)
	theirs := sendTyped(t, shared.globex, ep, uniq("evt_globex"), "order.paid")
	eventually(t, "globex's delivery to be listed", func() bool {
		_, out := call(t, "GET", "/v1/events?tenant=globex&event="+theirs, shared.operator, nil)
		return slices.Contains(listedIDs(out), theirs)
	})

	c := browserClient(t)
	signIn(t, c, shared.acme)
	for _, filter := range []string{"type", "event", "endpoint", "tenant", "state"} {
		for _, v := range searchInjections {
			path := "/v1/events?" + url.Values{filter: {v}}.Encode()
			code, body := callRaw(t, "GET", path, shared.acme, nil)
			if strings.Contains(string(body), theirs) || strings.Contains(string(body), "globex") {
				t.Fatalf("acme's GET %s lists globex's delivery: %s", path, body)
			}
			switch {
			case !filterOK(filter, v):
				if code != http.StatusBadRequest || !strings.Contains(string(body), "filter "+filter) {
					t.Errorf("acme's GET %s: %d %s, want 400 naming the filter %s", path, code, body, filter)
				}
			case code != http.StatusOK && code != http.StatusNotFound && code != http.StatusForbidden:
				t.Errorf("acme's GET %s: %d %s, want 200, 403 or 404 for a valid value", path, code, body)
			}
			if strings.Contains(strings.ToLower(string(body)), "syntax") || strings.Contains(string(body), "malformed") {
				t.Errorf("acme's GET %s quotes the query parser: %s", path, body)
			}
			pcode, page := get(t, c, "/events?"+url.Values{filter: {v}}.Encode())
			if pcode >= 500 || strings.Contains(page, theirs) {
				t.Fatalf("acme's dashboard /events?%s=%q: %d, lists globex's delivery: %v", filter, v, pcode, strings.Contains(page, theirs))
			}
		}
	}
}

// TestEventSearchCursors: cursors that are not the server's answer 400 at once, and a
// cursor works only for the scope it was given to.
func TestEventSearchCursors(t *testing.T) {
	for _, raw := range []string{`[]`, `"x"`, `123`, `{}`, `null`, `true`} {
		c := base64.RawURLEncoding.EncodeToString([]byte(raw))
		code, body := call(t, "GET", "/v1/events?cursor="+c, shared.acme, nil)
		if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), "start from the first page") {
			t.Errorf("cursor %s: %d %v, want 400 saying to start from the first page", raw, code, body)
		}
	}
	code, body := call(t, "GET", "/v1/events?event=%00", shared.acme, nil)
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), "filter event") {
		t.Errorf("event=%%00: %d %v, want 400 naming the filter", code, body)
	}

	// Enough deliveries for two pages in every scope.
	rcv := headerReceiver(t, http.StatusOK)
	acmeEP, globexEP := uniq("cursor-acme"), uniq("cursor-globex")
	putEndpoint(t, acmeEP, "acme", rcv.URL, 1, nil)
	putEndpoint(t, globexEP, "globex", rcv.URL, 1, nil)
	for range 2 {
		sendTyped(t, shared.acme, acmeEP, uniq("evt_cur"), "order.paid")
		sendTyped(t, shared.globex, globexEP, uniq("evt_cur"), "order.paid")
	}
	next := func(token, query string) string {
		var cur string
		eventually(t, "a second page for "+query, func() bool {
			_, out := call(t, "GET", "/v1/events?limit=1&"+query, token, nil)
			cur, _ = out["next_cursor"].(string)
			return cur != ""
		})
		return cur
	}
	operatorCursor := next(shared.operator, "")
	acmeCursor := next(shared.acme, "endpoint="+acmeEP)
	for _, tc := range []struct {
		who, token, cursor, query string
		want                      int
	}{
		{"acme with the operator's cursor", shared.acme, operatorCursor, "", http.StatusBadRequest},
		{"globex with acme's cursor", shared.globex, acmeCursor, "", http.StatusBadRequest},
		{"acme with its own cursor", shared.acme, acmeCursor, "endpoint=" + acmeEP, http.StatusOK},
		{"the operator with its own cursor", shared.operator, operatorCursor, "", http.StatusOK},
	} {
		code, body := call(t, "GET", "/v1/events?limit=1&cursor="+tc.cursor+"&"+tc.query, tc.token, nil)
		want(t, tc.who, code, tc.want, body)
	}
}

// TestMovedEndpointKeepsDeliveries: an endpoint moved to another tenant leaves its earlier
// deliveries with the tenant that sent them.
func TestMovedEndpointKeepsDeliveries(t *testing.T) {
	rcv := headerReceiver(t, http.StatusOK)
	ep := uniq("moving")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	before := sendTyped(t, shared.acme, ep, uniq("evt_before"), "order.paid")
	waitState(t, before, "delivered")

	code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"tenant": "globex"})
	if code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("move %s to globex: %d %v", ep, code, out)
	}
	after := sendTyped(t, shared.globex, ep, uniq("evt_after"), "order.paid")
	eventually(t, "globex's delivery to be listed", func() bool {
		_, out := call(t, "GET", "/v1/events?endpoint="+ep, shared.globex, nil)
		return slices.Contains(listedIDs(out), after)
	})
	for _, q := range []string{"endpoint=" + ep, "event=" + before, "type=order.paid&endpoint=" + ep} {
		_, out := call(t, "GET", "/v1/events?"+q, shared.globex, nil)
		if slices.Contains(listedIDs(out), before) {
			t.Errorf("globex's GET /v1/events?%s lists acme's earlier delivery %s: %v", q, before, listedIDs(out))
		}
	}
	// A send to the tenant (fan-out) is the tenant's too.
	fanned := uniq("evt_fanout")
	code, out = call(t, "POST", "/v1/events", shared.globex, map[string]any{"tenant": "globex", "id": fanned, "type": "order.paid", "data": 1})
	want(t, "send to tenant globex", code, http.StatusAccepted, out)
	eventually(t, "the fan-out delivery to be listed for globex", func() bool {
		_, out := call(t, "GET", "/v1/events?event="+fanned, shared.globex, nil)
		return slices.Contains(listedIDs(out), fanned)
	})
	if _, out := call(t, "GET", "/v1/events?event="+fanned, shared.acme, nil); len(listedIDs(out)) != 0 {
		t.Errorf("acme lists globex's fan-out delivery: %v", out)
	}
	_, out = call(t, "GET", "/v1/events?event="+before, shared.acme, nil)
	if !slices.Contains(listedIDs(out), before) {
		t.Errorf("acme no longer finds its delivery %s once the endpoint moved: %v", before, out)
	}
	_, out = call(t, "GET", "/v1/events?tenant=acme&event="+before, shared.operator, nil)
	if !slices.Contains(listedIDs(out), before) {
		t.Errorf("the operator does not find acme's delivery %s under tenant acme: %v", before, out)
	}
}

// TestMovedEndpointKeepsDeadLetters: an endpoint moved to another tenant brings none of its
// old tenant's dead letters along, neither to the new tenant's lists nor to its bulk
// replays, which would send the old tenant's events to the new tenant's receiver.
func TestMovedEndpointKeepsDeadLetters(t *testing.T) {
	rcv := headerReceiver(t, http.StatusInternalServerError)
	ep := uniq("moving-dl")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	dead := sendTyped(t, shared.acme, ep, uniq("evt_dead"), "order.paid")
	waitState(t, dead, "dead_letter")
	waitListed(t, "/v1/dead-letters?endpoint="+ep, dead)

	code, out := call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"tenant": "globex"})
	if code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("move %s to globex: %d %v", ep, code, out)
	}
	for _, path := range []string{"/v1/dead-letters?endpoint=" + ep, "/v1/dead-letters"} {
		_, dl := call(t, "GET", path, shared.globex, nil)
		if slices.Contains(deadLetterIDs(dl), dead) {
			t.Errorf("globex's GET %s lists acme's dead letter %s", path, dead)
		}
	}
	_, dl := call(t, "GET", "/v1/dead-letters", shared.acme, nil)
	if !slices.Contains(deadLetterIDs(dl), dead) {
		t.Errorf("acme no longer lists its dead letter %s once the endpoint moved: %v", dead, dl)
	}
	code, out = call(t, "POST", "/v1/endpoints/"+ep+"/replay", shared.globex, nil)
	want(t, "globex's bulk replay of "+ep, code, http.StatusOK, out)
	res, _ := out["result"].(map[string]any)
	if n, _ := res["replayed"].(float64); n != 0 {
		t.Errorf("globex's bulk replay replayed %v of acme's dead letters: %v", n, out)
	}
	if _, st := call(t, "GET", "/v1/events/"+dead, shared.acme, nil); st["state"] != "dead_letter" {
		t.Errorf("acme's dead letter %s left its state after globex's bulk replay: %v", dead, st)
	}
	// acme still sees it, but may not replay it: the endpoint is globex's receiver now.
	code, out = call(t, "POST", "/v1/events/"+dead+"/replay", shared.acme, nil)
	want(t, "acme's replay of "+dead+" after the move", code, http.StatusConflict, out)
	if msg, _ := out["error"].(string); !strings.Contains(msg, "no longer belongs to tenant acme") {
		t.Errorf("the refusal does not say why: %v", out)
	}
}

// TestMovedEndpointRefusesFanoutReplay: a tenant's replay of an event it sent to every
// subscribed endpoint is refused while one of its dead-lettered deliveries went to an
// endpoint that has moved to another tenant since; nothing is replayed.
func TestMovedEndpointRefusesFanoutReplay(t *testing.T) {
	tenant := uniq("fanmove")
	tok, _, err := shared.tokens.Create(false, tenant, "test")
	if err != nil {
		t.Fatal(err)
	}
	rcv := headerReceiver(t, http.StatusInternalServerError)
	ep := uniq("fanmove-ep")
	putEndpoint(t, ep, tenant, rcv.URL, 1, nil)
	id := uniq("evt_fanmove")
	code, out := call(t, "POST", "/v1/events", tok, map[string]any{"tenant": tenant, "id": id, "type": "order.paid", "data": 1})
	want(t, "send to tenant "+tenant, code, http.StatusAccepted, out)
	eventually(t, "the fan-out delivery to be a dead letter", func() bool {
		_, dl := call(t, "GET", "/v1/dead-letters", tok, nil)
		return slices.Contains(deadLetterIDs(dl), id)
	})
	code, out = call(t, "PUT", "/v1/endpoints/"+ep, shared.operator, map[string]any{"tenant": "globex"})
	if code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("move %s to globex: %d %v", ep, code, out)
	}
	code, out = call(t, "POST", "/v1/events/"+id+"/replay", tok, nil)
	want(t, tenant+"'s replay of "+id+" after the move", code, http.StatusConflict, out)
	if msg, _ := out["error"].(string); !strings.Contains(msg, "no longer belongs to tenant "+tenant) {
		t.Errorf("the refusal does not say why: %v", out)
	}
}
