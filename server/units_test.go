package server

import (
	"net/http"
	"strings"
	"testing"
)

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
