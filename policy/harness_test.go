package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Helpers shared by the tests of this package.

// runs is n, or a tenth of it under -short (the edit-test loop): how many seeded runs a
// model or property test makes.
func runs(n int) int {
	if testing.Short() {
		return max(1, n/10)
	}
	return n
}

// wantErrContaining fails the test unless err contains every one of want; with want nil,
// unless err is nil. what names the call in messages, e.g. "Validate()".
func wantErrContaining(t *testing.T, what string, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s = %v, want nil", what, err)
		}
		return
	}
	if err == nil {
		t.Fatalf("%s = nil, want error containing %q", what, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s = %q, want it to contain %q", what, err, w)
		}
	}
}

// configCase is one invalid change to a default config and a part of the error it causes.
type configCase[C any] struct {
	name string
	mod  func(*C)
	want string
}

// testConfigValidate checks that the default config validates and that each case's change
// to it makes Validate fail with an error containing the case's want.
func testConfigValidate[C interface{ Validate() error }](t *testing.T, def func() C, cases []configCase[C]) {
	t.Helper()
	if err := def().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := def()
			tc.mod(&c)
			wantErrContaining(t, "Validate()", c.Validate(), []string{tc.want})
		})
	}
}

// jsonRoundTrip replaces *v by what it becomes through JSON and back.
func jsonRoundTrip[T any](t *testing.T, v *T) {
	t.Helper()
	data, err := json.Marshal(*v)
	if err != nil {
		t.Fatal(err)
	}
	var back T
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	*v = back
}

// failBreaker records n failed attempts on b, one a second from breakerEpoch.
func failBreaker(b *Breaker, n int) {
	for i := range n {
		now := breakerEpoch.Add(time.Duration(i) * time.Second)
		b.Record(now, b.Admit(now).Ticket, false)
	}
}
