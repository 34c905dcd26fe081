package herald

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEndpointChangeUpperBounds: every duration and count of an endpoint change has an
// upper bound, refused with the field's name and the limit.
func TestEndpointChangeUpperBounds(t *testing.T) {
	delays := make([]string, 100)
	for i := range delays {
		delays[i] = `"1s"`
	}
	for _, c := range []struct{ body, want string }{
		{`{"retention":"8761h"}`, "retention 8761h is over the limit of 8760h: use at most 8760h"},
		{`{"schedule":[` + strings.Join(delays, ",") + `]}`, "delays lists 100 waits: use at most 99"},
		{`{"schedule":["721h"]}`, "the longest allowed is 720h"},
		{`{"attempts":101}`, "between 1 and 100"},
		{`{"timeout":"3m"}`, "outside 1s..2m"},
		{`{"max_in_flight":501}`, "above 500"},
		{`{"disable_after":"2161h"}`, "outside 1h0m0s..2160h0m0s"},
		{`{"breaker":{"probe_timeout":"61m"}}`, "probe_timeout 1h1m is over the limit of 1h"},
		{`{"breaker":{"consecutive_window":"25h"}}`, "consecutive_window 25h is over the limit of 24h"},
		{`{"breaker":{"volume_window":"25h"}}`, "volume_window 25h is over the limit of 24h"},
		{`{"breaker":{"probe_delay":"169h","max_probe_delay":"169h"}}`, "probe_delay 169h is over the limit of 168h"},
		{`{"breaker":{"max_probe_delay":"169h"}}`, "max_probe_delay 169h is over the limit of 168h"},
		{`{"breaker":{"consecutive_failures":10001}}`, "use 1 to 10000"},
		{`{"breaker":{"half_open_successes":10001}}`, "use 0 to 10000"},
	} {
		var ch EndpointChange
		if err := json.Unmarshal([]byte(c.body), &ch); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		_, err := ch.Overrides()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", c.body, err, c.want)
		}
	}
	// At the bounds, accepted.
	for _, body := range []string{
		`{"retention":"8760h"}`,
		`{"breaker":{"probe_timeout":"1h","consecutive_window":"24h","volume_window":"24h","max_probe_delay":"168h"}}`,
	} {
		var ch EndpointChange
		if err := json.Unmarshal([]byte(body), &ch); err != nil {
			t.Fatal(err)
		}
		if _, err := ch.Overrides(); err != nil {
			t.Errorf("%s: %v, want it accepted", body, err)
		}
	}
}
