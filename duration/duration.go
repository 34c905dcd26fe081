// Package duration holds Duration, the time.Duration Herald writes to JSON: as a Go
// duration string ("5s", "1m30s"), in the CLI's -o json, the HTTP API, workflow
// inputs, results and query answers alike.
package duration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that JSON carries as a Go duration string ("5s",
// "1h30m"). It reads a string or, as older records hold, integer nanoseconds.
type Duration time.Duration

// Std is the duration as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String is the Go duration string without zero trailing units: "1m30s", "2m"
// (not "2m0s"), "1h" (not "1h0m0s"); time.ParseDuration reads it back.
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
	}
	return s
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string ("30s", "2m", "1h30m") or integer
// nanoseconds; null leaves the duration unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: use a form like \"30s\", \"2m\" or \"1h30m\"", s)
		}
		*d = Duration(v)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return errors.New(`durations are strings like "30s" or "2m"`)
	}
	*d = Duration(n)
	return nil
}

// Of converts each time.Duration to a Duration; the slice is never nil.
func Of(ds ...time.Duration) []Duration {
	out := make([]Duration, len(ds))
	for i, d := range ds {
		out[i] = Duration(d)
	}
	return out
}
