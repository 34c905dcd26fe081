package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testkit/check"
	"github.com/heraldhq/herald/starter"
)

// bulkPut posts body to /v1/endpoints as token with Content-Type ct (none when
// empty) and returns the status and the answer.
func bulkPut(t *testing.T, token, ct string, body []byte) (int, bulkPutResponse, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", shared.http.URL+"/v1/endpoints", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, raw := check.Do(t, nil, req)
	record("POST", "/v1/endpoints", resp.StatusCode)
	var out bulkPutResponse
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v\n%s", err, raw)
	}
	if resp.StatusCode == http.StatusOK {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out); err != nil {
			t.Fatalf("answer: %v\n%s", err, raw)
		}
	}
	return resp.StatusCode, out, m
}

// TestBulkPut: a JSON Lines body registers its good lines, and each bad line fails alone
// with its line number and the message a single put gives; the same body again changes
// nothing; a send to the tenant right after reaches an endpoint the bulk put registered.
func TestBulkPut(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 200)
	a, b, tenant := uniq("bulk-a"), uniq("bulk-b"), uniq("bulk-tenant")
	body := strings.Join([]string{
		fmt.Sprintf(`{"id":%q,"tenant":%q,"url":%q,"types":["bulk.only"]}`, a, tenant, rcv.URL),
		``,
		fmt.Sprintf(`{"id":%q,"tenant":%q,"url":%q,"types":["other.*"],"timeout":"5s","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, b, tenant, rcv.URL),
		`{"id":"bulk-broken","url":`,
		fmt.Sprintf(`{"id":"bulk-colour","url":%q,"colour":"red"}`, rcv.URL),
		fmt.Sprintf(`{"id":%q,"url":%q}`, herald.OpsEndpointID, rcv.URL),
		fmt.Sprintf(`{"id":%q,"url":%q}`, a, rcv.URL),
		`{"id":"bulk-ftp","url":"ftp://example.com"}`,
		fmt.Sprintf(`{"id":"bulk-timeout","url":%q,"timeout":5}`, rcv.URL),
	}, "\n") + "\n"
	code, out, raw := bulkPut(t, shared.operator, "application/x-ndjson", []byte(body))
	want(t, "bulk put", code, http.StatusOK, raw)
	type line struct {
		line    int
		id      string
		outcome starter.BulkOutcome
		err     string
	}
	expect := []line{
		{1, a, starter.BulkCreated, ""},
		{3, b, starter.BulkCreated, ""},
		{4, "", starter.BulkFailed, "not the JSON"},
		{5, "bulk-colour", starter.BulkFailed, `unknown field "colour"`},
		{6, herald.OpsEndpointID, starter.BulkFailed, "reserved for the operational endpoint"},
		{7, a, starter.BulkFailed, "once per call"},
		{8, "bulk-ftp", starter.BulkFailed, "http"},
		{9, "bulk-timeout", starter.BulkFailed, "unit"},
	}
	checkLines := func(what string, out bulkPutResponse, expect []line) {
		t.Helper()
		if len(out.Results) != len(expect) {
			t.Fatalf("%s: %d results, want %d: %+v", what, len(out.Results), len(expect), out.Results)
		}
		for i, w := range expect {
			g := out.Results[i]
			if g.Line != w.line || g.ID != w.id || g.Outcome != w.outcome || (w.err == "") != (g.Error == "") || !strings.Contains(g.Error, w.err) {
				t.Errorf("%s: result %d is %+v, want line %d id %q %s with an error saying %q", what, i, g, w.line, w.id, w.outcome, w.err)
			}
		}
	}
	checkLines("first put", out, expect)
	if out.Created != 2 || out.Failed != 6 || out.Updated != 0 || out.Unchanged != 0 {
		t.Errorf("first put counts %+v", out)
	}
	if r := out.Results[0]; r.Tenant != tenant || r.Version != 1 || !strings.HasPrefix(r.Secret, "whsec_") {
		t.Errorf("line 1's result %+v: want tenant %s, version 1 and its generated secret", r, tenant)
	}
	if out.Results[1].Secret != "" {
		t.Errorf("line 3 gave its secret, and the answer shows it: %+v", out.Results[1])
	}
	// A bad line's message is a single put's.
	_, single := call(t, "PUT", "/v1/endpoints/bulk-ftp", shared.operator, map[string]any{"url": "ftp://example.com"})
	if single["error"] != out.Results[6].Error {
		t.Errorf("line 8's error %q differs from a single put's %q", out.Results[6].Error, single["error"])
	}

	// Again: nothing changes.
	code, again, raw := bulkPut(t, shared.operator, "", []byte(body))
	want(t, "bulk put again", code, http.StatusOK, raw)
	expect[0].outcome, expect[1].outcome = starter.BulkUnchanged, starter.BulkUnchanged
	checkLines("second put", again, expect)
	if again.Results[0].Version != 1 || again.Results[0].Secret != "" {
		t.Errorf("line 1 the second time: %+v, want version 1 and no secret", again.Results[0])
	}
	// A changed line is sent.
	code, changed, raw := bulkPut(t, shared.operator, "application/jsonl", fmt.Appendf(nil, `{"id":%q,"timeout":"7s"}`, b))
	want(t, "bulk put of a change", code, http.StatusOK, raw)
	if r := changed.Results[0]; r.Outcome != starter.BulkUpdated || r.Version != 2 {
		t.Errorf("changed line: %+v, want updated to version 2", r)
	}

	// Sent to the tenant right after: the endpoint the bulk put registered receives it.
	code, sent := call(t, "POST", "/v1/events", shared.operator, map[string]any{"tenant": tenant, "type": "bulk.only", "data": map[string]any{}})
	want(t, "send to the tenant", code, http.StatusAccepted, sent)
	if ds, _ := sent["deliveries"].([]any); len(ds) != 1 || ds[0].(map[string]any)["endpoint_id"] != a {
		t.Fatalf("send to the tenant's bulk.only reached %v, want %s alone", sent["deliveries"], a)
	}
	eventually(t, "the bulk-registered endpoint to receive the event", func() bool { return rcv.count(sent["id"].(string)) == 1 })
}

// TestBulkPutRefusals: what is refused as a whole, before any line is read or sent.
func TestBulkPutRefusals(t *testing.T) {
	t.Parallel()
	line := []byte(`{"id":"bulk-refused","url":"https://example.com"}` + "\n")
	for _, c := range []struct {
		what, token, ct string
		body            []byte
		status          int
		says            string
	}{
		{"a tenant token", shared.acme, "application/x-ndjson", line, http.StatusForbidden, "operator token"},
		{"JSON, not JSON Lines", shared.operator, "application/json", line, http.StatusUnsupportedMediaType, "JSON Lines"},
		{"no line", shared.operator, "application/x-ndjson", []byte("\n \n"), http.StatusBadRequest, "no line"},
		{"too many lines", shared.operator, "application/x-ndjson", bytes.Repeat(line, starter.MaxPutEndpoints+1), http.StatusBadRequest, "more than 10000 lines"},
		{"too large", shared.operator, "application/x-ndjson", bytes.Repeat([]byte(" "), maxBulkBody+1), http.StatusRequestEntityTooLarge, "split the lines"},
	} {
		code, _, raw := bulkPut(t, c.token, c.ct, c.body)
		if code != c.status || !strings.Contains(fmt.Sprint(raw["error"]), c.says) {
			t.Errorf("%s: %d %v, want %d saying %q", c.what, code, raw, c.status, c.says)
		}
	}
	if code, _ := call(t, "GET", "/v1/endpoints/bulk-refused", shared.operator, nil); code != http.StatusNotFound {
		t.Errorf("a refused bulk put registered its endpoint: GET answers %d", code)
	}
}

// TestBulkPutManyLines: 300 lines in one request, every 50th one broken: each broken line
// fails alone with its own number, the others are registered, and a send to the tenant
// right after reaches the last line's endpoint.
func TestBulkPutManyLines(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 200)
	tenant := uniq("bulk-many")
	const n = 300
	var body bytes.Buffer
	for i := 1; i <= n; i++ {
		types := `["many.noise"]`
		if i == n {
			types = `["many.last"]`
		}
		if i%50 == 0 && i != n {
			fmt.Fprintf(&body, `{"id":"%s-%d","url":%q,"retries":3}`+"\n", tenant, i, rcv.URL)
			continue
		}
		fmt.Fprintf(&body, `{"id":"%s-%d","tenant":%q,"url":%q,"types":%s,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`+"\n", tenant, i, tenant, rcv.URL, types)
	}
	code, out, raw := bulkPut(t, shared.operator, "application/x-ndjson", body.Bytes())
	want(t, "bulk put of 300 lines", code, http.StatusOK, raw)
	if len(out.Results) != n || out.Created != n-5 || out.Failed != 5 {
		t.Fatalf("%d results, %d created, %d failed; want %d, %d, 5", len(out.Results), out.Created, out.Failed, n, n-5)
	}
	for i, r := range out.Results {
		broken := (i+1)%50 == 0 && i+1 != n
		if r.Line != i+1 || r.ID != fmt.Sprintf("%s-%d", tenant, i+1) || broken != (r.Outcome == starter.BulkFailed) || broken && !strings.Contains(r.Error, `unknown field "retries"`) {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	code, sent := call(t, "POST", "/v1/events", shared.operator, map[string]any{"tenant": tenant, "type": "many.last", "data": map[string]any{}})
	want(t, "send to the tenant", code, http.StatusAccepted, sent)
	if ds, _ := sent["deliveries"].([]any); len(ds) != 1 || ds[0].(map[string]any)["endpoint_id"] != fmt.Sprintf("%s-%d", tenant, n) {
		t.Fatalf("send reached %v, want the last line's endpoint alone", sent["deliveries"])
	}
	eventually(t, "the last line's endpoint to receive the event", func() bool { return rcv.count(sent["id"].(string)) == 1 })
}
