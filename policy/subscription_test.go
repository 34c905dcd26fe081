package policy

import (
	"slices"
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
		{[]string{".*"}, "follows a type name"},
		{[]string{"ordér.paid"}, "contains 'é'"},
		{[]string{"a;b"}, "contains ';'"},
		{[]string{"a' b\\"}, "space"},
		{[]string{"a'b"}, "contains '\\''"},
		{[]string{"\xff.paid"}, "not valid UTF-8"},
		{[]string{"order.\x00"}, "control character"},
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

func TestValidateEventType(t *testing.T) {
	for _, ok := range []string{"order.paid", "a", "Order_Paid-v2", strings.Repeat("x", MaxEventTypeLen)} {
		if err := ValidateEventType(ok); err != nil {
			t.Errorf("ValidateEventType(%q) = %v, want ok", ok, err)
		}
	}
	for name, want := range map[string]string{
		"":                       "empty",
		"a' b\\":                 `contains '\''`,
		"a'b":                    "contains '\\''",
		"\xff":                   "not valid UTF-8",
		"ordér.paid":             "contains 'é'",
		"a;b":                    "contains ';'",
		"order.*":                "contains '*'",
		strings.Repeat("x", 256): "use at most 255",
		"x\u2019 OR 1=1":         "contains",
	} {
		if err := ValidateEventType(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateEventType(%.20q) = %v, want an error saying %q", name, err, want)
		}
	}
}

// FuzzValidateEventType checks the grammar of types: what it accepts is 1 to
// MaxEventTypeLen bytes of letters, digits, '-', '_' and '.', and it accepts all of those.
func FuzzValidateEventType(f *testing.F) {
	for _, s := range []string{"order.paid", "", "a' b\\", "\xff", "ordér", "a;b", "*", ".*", "x\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		inGrammar := len(s) >= 1 && len(s) <= MaxEventTypeLen
		for i := 0; i < len(s); i++ {
			if !IsTypeChar(rune(s[i])) {
				inGrammar = false
			}
		}
		if err := ValidateEventType(s); (err == nil) != inGrammar {
			t.Fatalf("ValidateEventType(%q) = %v, in the grammar: %v", s, err, inGrammar)
		}
	})
}

// FuzzValidateTypePatterns checks that an accepted pattern is *, a type, or a type and
// ".*", and that a type matches the patterns naming it.
func FuzzValidateTypePatterns(f *testing.F) {
	for _, s := range []string{"*", "order.*", "order.paid", ".*", "ordér.paid", "a;b", "order*", "a.*.*", "**"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := ValidateTypePatterns([]string{p})
		name, wild := strings.CutSuffix(p, ".*")
		ok := p == "*" || len(p) <= MaxEventTypeLen && ValidateEventType(name) == nil
		if (err == nil) != ok {
			t.Fatalf("ValidateTypePatterns(%q) = %v, want ok: %v", p, err, ok)
		}
		if err == nil && !wild && p != "*" && !MatchesType([]string{p}, p) {
			t.Fatalf("type %q does not match the pattern naming it", p)
		}
		if err == nil && wild && !MatchesType([]string{p}, name+".x") {
			t.Fatalf("%q does not match pattern %q", name+".x", p)
		}
	})
}

// TestPatternsMatching: a subscription receives a type exactly when it holds one of the
// patterns PatternsMatching names for it.
func TestPatternsMatching(t *testing.T) {
	patterns := []string{"*", "order", "order.*", "order.paid", "order.paid.*", "order.refund.*", "a..*", "a.*", "Order.paid"}
	for _, typ := range []string{"order.paid", "order.refund.created", "order", "a..b", "order.paid.x", "Order.paid"} {
		named := PatternsMatching(typ)
		for _, p := range patterns {
			if got, want := slices.Contains(named, p), MatchesType([]string{p}, typ); got != want {
				t.Errorf("type %s, pattern %s: named %v, matches %v", typ, p, got, want)
			}
		}
	}
}
