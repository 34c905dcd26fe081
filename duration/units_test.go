package duration

import (
	"strings"
	"testing"
)

type unitsInner struct {
	Window  *Duration  `json:"window,omitempty"`
	Delays  []Duration `json:"delays"`
	Comment string     `json:"comment"`
}

type unitsEmbedded struct {
	Grace Duration `json:"grace"`
}

type unitsRequest struct {
	TTL   *Duration `json:"ttl,omitempty"`
	Count int       `json:"count"`
	Inner *unitsInner
	unitsEmbedded
	ByName map[string]Duration `json:"by_name"`
}

func TestRequireUnits(t *testing.T) {
	for _, c := range []struct {
		body string
		want string // "" accepted
	}{
		{`{"ttl":"15m","count":5}`, ""},
		{`{"ttl":null}`, ""},
		{`{"count":5,"Inner":{"comment":"5"}}`, ""},
		{`{"ttl":5}`, `"ttl": 5 is a bare number: give a duration as a string with a unit, like "ttl": "15m"`},
		{`{"ttl":0}`, `"ttl": 0 is a bare number`},
		{`{"TTL":1e9}`, `"TTL": 1e9 is a bare number`},
		{`{"inner":{"window":30}}`, `"inner.window": 30 is a bare number`},
		{`{"Inner":{"delays":["1s",2]}}`, `"Inner.delays[1]": 2 is a bare number`},
		{`{"grace":86400}`, `"grace": 86400 is a bare number`},
		{`{"by_name":{"a":"1s","b":3}}`, `"by_name.b": 3 is a bare number`},
		{`not json`, ""}, // the decoder reports it
	} {
		err := RequireUnits([]byte(c.body), &unitsRequest{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("RequireUnits(%s) = %v, want it accepted", c.body, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("RequireUnits(%s) = %v, want it to say %s", c.body, err, c.want)
		}
	}
	// A type without durations is not read.
	if err := RequireUnits([]byte(`{"n":5}`), &struct{ N int }{}); err != nil {
		t.Errorf("a type without durations: %v", err)
	}
}

type cycleA struct {
	B *cycleB  `json:"b"`
	D Duration `json:"d"`
}

type cycleB struct {
	A *cycleA `json:"a"`
}

// TestRequireUnitsThroughACycle: a type reaches a Duration only through a type that refers
// back to it; asking about the outer type first must not settle the inner one as holding none.
func TestRequireUnitsThroughACycle(t *testing.T) {
	if err := RequireUnits([]byte(`{"b":{"a":{"d":"1s"}}}`), &cycleA{}); err != nil {
		t.Fatalf("a duration with a unit is refused: %v", err)
	}
	if err := RequireUnits([]byte(`{"a":{"d":5}}`), &cycleB{}); err == nil {
		t.Fatal("a bare number reached through a cycle is accepted")
	}
}
