package main

import (
	"strings"
	"testing"
)

// TestEndpointPutExpressionsRefusedBeforeDialing: a --filter or --transform that does not
// compile is refused before Temporal is dialed, naming the line and column; one of the
// wrong type says what it must give.
func TestEndpointPutExpressionsRefusedBeforeDialing(t *testing.T) {
	offline(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--filter", "data.amount >"}, "filter: line 1, column 14"},
		{[]string{"--filter", "data.n > 1 &&\nnope"}, "filter: line 2, column 1: undeclared reference to 'nope'"},
		{[]string{"--filter", `type + "x"`}, "a filter must give a bool"},
		{[]string{"--transform", `{"body": }`}, "transform: line 1, column 10"},
		{[]string{"--transform", `"text"`}, "a transformation must give a map"},
	} {
		args := append([]string{"endpoint", "put", "acme-prod", "--url", "https://example.com/hook", nowhere}, c.args...)
		out, err := runHerald(args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("herald %s: %v, want an error saying %q\n%s", strings.Join(args, " "), err, c.want, out)
		}
	}
}
