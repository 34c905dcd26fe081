package duration

import (
	"encoding/json"
	"testing"
	"time"
)

func TestMarshalWritesString(t *testing.T) {
	b, err := json.Marshal(struct {
		D  Duration   `json:"d"`
		Ds []Duration `json:"ds"`
		Z  Duration   `json:"z,omitempty"`
	}{D: Duration(90 * time.Second), Ds: Of(5*time.Second, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"d":"1m30s","ds":["5s","1m"]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestUnmarshalReadsStringsAndOldNanoseconds(t *testing.T) {
	for in, want := range map[string]time.Duration{
		`"5s"`:       5 * time.Second,
		`"1h30m"`:    90 * time.Minute,
		`5000000000`: 5 * time.Second,
		`0`:          0,
		`"0s"`:       0,
	} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if d.Std() != want {
			t.Errorf("%s: got %v, want %v", in, d, want)
		}
	}
	d := Duration(time.Second)
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d.Std() != time.Second {
		t.Errorf("null: got %v, %v; want the value kept", d, err)
	}
}

func TestUnmarshalRefusesOtherForms(t *testing.T) {
	for _, in := range []string{`"5"`, `"soon"`, `1.5`, `true`, `{}`} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%s: read as %v, want an error", in, d)
		}
	}
}

func TestStringDropsZeroTrailingUnits(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                          "0s",
		1500 * time.Millisecond:    "1.5s",
		2 * time.Minute:            "2m",
		90 * time.Second:           "1m30s",
		time.Hour:                  "1h",
		time.Hour + 30*time.Minute: "1h30m",
		time.Hour + 30*time.Second: "1h0m30s",
	} {
		if got := Duration(d).String(); got != want {
			t.Errorf("%v: got %q, want %q", time.Duration(d), got, want)
		}
		if back, err := time.ParseDuration(want); err != nil || back != d {
			t.Errorf("%q reads back as %v, %v", want, back, err)
		}
	}
}
