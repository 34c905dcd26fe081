package policy

import (
	"strings"
	"testing"
)

func TestMatchesType(t *testing.T) {
	for _, c := range []struct {
		patterns []string
		typ      string
		want     bool
	}{
		{nil, "order.paid", true},
		{[]string{}, "anything", true},
		{[]string{"*"}, "order.paid", true},
		{[]string{"order.paid"}, "order.paid", true},
		{[]string{"order.paid"}, "order.paid.late", false},
		{[]string{"order.paid"}, "order.refund", false},
		{[]string{"order.*"}, "order.paid", true},
		{[]string{"order.*"}, "order.refund.created", true},
		{[]string{"order.*"}, "order", false},
		{[]string{"order.*"}, "order.", false},
		{[]string{"order.*"}, "orders.paid", false},
		{[]string{"order.*"}, "invoice.paid", false},
		{[]string{"invoice.paid", "order.*"}, "order.paid", true},
		{[]string{"invoice.paid", "order.*"}, "invoice.paid", true},
		{[]string{"invoice.paid", "order.*"}, "invoice.sent", false},
	} {
		if got := MatchesType(c.patterns, c.typ); got != c.want {
			t.Errorf("MatchesType(%q, %q) = %v, want %v", c.patterns, c.typ, got, c.want)
		}
	}
}

func TestValidateTypePatterns(t *testing.T) {
	long := strings.Repeat("a", MaxEventTypeLen+1)
	many := make([]string, MaxSubscriptionTypes+1)
	for i := range many {
		many[i] = "t" + strings.Repeat("x", i)
	}
	for _, c := range []struct {
		patterns []string
		wantErr  string // "" for valid
	}{
		{nil, ""},
		{[]string{"*"}, ""},
		{[]string{"order.paid", "order.*", "invoice.sent"}, ""},
		{[]string{""}, "empty"},
		{[]string{"order paid"}, "space"},
		{[]string{"a,b"}, "comma"},
		{[]string{"order.*.paid"}, "middle"},
		{[]string{"order*"}, "follows a dot"},
		{[]string{"order.paid", "order.paid"}, "twice"},
		{[]string{long}, "characters long"},
		{many, "at most"},
	} {
		err := ValidateTypePatterns(c.patterns)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("ValidateTypePatterns(%q) = %v, want nil", c.patterns, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("ValidateTypePatterns(%.40q) = %v, want an error containing %q", c.patterns, err, c.wantErr)
		}
	}
}
