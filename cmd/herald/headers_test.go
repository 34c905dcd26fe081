package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/starter"
)

// TestHeaderFlagsRefusedBeforeDialing: endpoint put and ops-endpoint put refuse a header
// that is malformed or one of Herald's own, naming it, before anything is dialed.
func TestHeaderFlagsRefusedBeforeDialing(t *testing.T) {
	offline(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"endpoint", "put", "acme", "--header", "Content-Type: text/plain"}, "Content-Type is set by Herald itself"},
		{[]string{"endpoint", "put", "acme", "--header", "webhook-signature: v1,x"}, "Webhook-Signature is set by Herald itself"},
		{[]string{"endpoint", "put", "acme", "--header", "X-Team billing"}, `write it as "Name: value"`},
		{[]string{"ops-endpoint", "put", "--header", "User-Agent: x"}, "User-Agent is set by Herald itself"},
		{[]string{"endpoint", "put", "acme", "--header", "X-A: 1", "--clear-headers"}, "not both"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runHerald(append(tc.args, nowhere)...)
			if err == nil || !(errors.Is(err, starter.ErrInvalid) || errors.Is(err, errUsage)) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an input error saying %q", err, tc.want)
			}
		})
	}
}
