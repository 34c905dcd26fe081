package policy

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

// attempt is a Friday, 12:00 UTC.
var attempt = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

func TestDecide(t *testing.T) {
	h, m := time.Hour, time.Minute
	tests := []struct {
		name   string
		raw    string
		date   string    // response Date header
		at     time.Time // attempt time; zero means attempt
		action RetryAfterAction
		delay  time.Duration
		asked  time.Duration
		reason string // substring of Reason, when set
	}{
		// Absent.
		{name: "absent", raw: "", action: RetryAfterNone, reason: "no Retry-After header"},
		{name: "only whitespace", raw: " \t ", action: RetryAfterNone},

		// Delta-seconds.
		{name: "seconds", raw: "120", action: RetryAfterHonoured, delay: 2 * m, asked: 2 * m, reason: "asked 2m, honoured"},
		{name: "surrounding whitespace", raw: " \t120 ", action: RetryAfterHonoured, delay: 2 * m, asked: 2 * m},
		{name: "zero", raw: "0", action: RetryAfterHonoured, delay: 0, asked: 0},
		{name: "leading zeros", raw: "007", action: RetryAfterHonoured, delay: 7 * time.Second, asked: 7 * time.Second},
		{name: "just under 4h", raw: "14399", action: RetryAfterHonoured, delay: 4*h - time.Second, asked: 4*h - time.Second},
		{name: "exactly 4h is capped", raw: "14400", action: RetryAfterCapped, delay: 4 * h, asked: 4 * h, reason: "asked 4h, capped at 4h"},
		{name: "6h capped", raw: "21600", action: RetryAfterCapped, delay: 4 * h, asked: 6 * h, reason: "asked 6h, capped at 4h"},
		{name: "exactly 24h is capped", raw: "86400", action: RetryAfterCapped, delay: 4 * h, asked: 24 * h},
		{name: "24h+1s ignored", raw: "86401", action: RetryAfterIgnored, asked: 24*h + time.Second, reason: "over 24h; ladder applies"},
		{name: "negative seconds", raw: "-5", action: RetryAfterIgnored, asked: -5 * time.Second, reason: "in the past"},
		{name: "largest representable", raw: "9223372036", action: RetryAfterIgnored, asked: 9223372036 * time.Second},
		{name: "one past representable", raw: "9223372037", action: RetryAfterIgnored, reason: "too large"},
		{name: "overflows int64", raw: "99999999999999999999", action: RetryAfterIgnored, reason: "too large"},
		{name: "negative overflow", raw: "-99999999999999999999", action: RetryAfterIgnored, reason: "too large"},

		// Unparseable.
		{name: "word", raw: "soon", action: RetryAfterIgnored, reason: `unparseable "soon"`},
		{name: "fraction", raw: "1.5", action: RetryAfterIgnored, reason: "unparseable"},
		{name: "plus sign", raw: "+5", action: RetryAfterIgnored, reason: "unparseable"},
		{name: "go duration", raw: "5s", action: RetryAfterIgnored, reason: "unparseable"},
		{name: "two values", raw: "120, 60", action: RetryAfterIgnored, reason: "unparseable"},
		{name: "lone minus", raw: "-", action: RetryAfterIgnored, reason: "unparseable"},
		{name: "zone other than GMT", raw: "Fri, 14 Mar 2025 13:00:00 PST", action: RetryAfterIgnored, reason: "unparseable"},
		{name: "ISO 8601 is not an HTTP-date", raw: "2025-03-14T13:00:00Z", action: RetryAfterIgnored, reason: "unparseable"},

		// HTTP-dates against the attempt time.
		{name: "IMF-fixdate", raw: "Fri, 14 Mar 2025 13:00:00 GMT", action: RetryAfterHonoured, delay: h, asked: h, reason: "against the attempt time"},
		{name: "RFC 850", raw: "Friday, 14-Mar-25 13:00:00 GMT", action: RetryAfterHonoured, delay: h, asked: h},
		{name: "asctime", raw: "Fri Mar 14 13:00:00 2025", action: RetryAfterHonoured, delay: h, asked: h},
		{name: "asctime one-digit day", raw: "Thu Mar  6 13:00:00 2025", at: time.Date(2025, 3, 6, 12, 0, 0, 0, time.UTC), action: RetryAfterHonoured, delay: h, asked: h},
		{name: "date with whitespace", raw: "  Fri, 14 Mar 2025 12:00:30 GMT\t", action: RetryAfterHonoured, delay: 30 * time.Second, asked: 30 * time.Second},
		{name: "date equal to now", raw: "Fri, 14 Mar 2025 12:00:00 GMT", action: RetryAfterHonoured, delay: 0, asked: 0},
		{name: "date in the past", raw: "Fri, 14 Mar 2025 11:00:00 GMT", action: RetryAfterIgnored, asked: -h, reason: "asked -1h, in the past"},
		{name: "date exactly 4h ahead", raw: "Fri, 14 Mar 2025 16:00:00 GMT", action: RetryAfterCapped, delay: 4 * h, asked: 4 * h},
		{name: "date 6h ahead", raw: "Fri, 14 Mar 2025 18:00:00 GMT", action: RetryAfterCapped, delay: 4 * h, asked: 6 * h},
		{name: "date exactly 24h ahead", raw: "Sat, 15 Mar 2025 12:00:00 GMT", action: RetryAfterCapped, delay: 4 * h, asked: 24 * h},
		{name: "date 24h+1s ahead", raw: "Sat, 15 Mar 2025 12:00:01 GMT", action: RetryAfterIgnored, asked: 24*h + time.Second},
		{name: "date far future saturates", raw: "Fri, 31 Dec 9999 23:59:59 GMT", action: RetryAfterIgnored, asked: math.MaxInt64},
		{name: "date long past saturates", raw: "Mon, 01 Jan 0001 00:00:00 GMT", at: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), action: RetryAfterIgnored, asked: math.MinInt64},
		{name: "sub-second attempt time", raw: "Fri, 14 Mar 2025 12:01:00 GMT", at: attempt.Add(250 * time.Millisecond), action: RetryAfterHonoured, delay: 59750 * time.Millisecond, asked: 59750 * time.Millisecond},

		// HTTP-dates against the response's Date (receiver clock 5 minutes behind).
		{name: "Date header IMF", raw: "Fri, 14 Mar 2025 12:05:00 GMT", date: "Fri, 14 Mar 2025 11:55:00 GMT", action: RetryAfterHonoured, delay: 10 * m, asked: 10 * m, reason: "against the response's Date"},
		{name: "Date header RFC 850", raw: "Fri, 14 Mar 2025 12:05:00 GMT", date: "Friday, 14-Mar-25 11:55:00 GMT", action: RetryAfterHonoured, delay: 10 * m, asked: 10 * m},
		{name: "Date header asctime", raw: "Fri, 14 Mar 2025 12:05:00 GMT", date: "Fri Mar 14 11:55:00 2025", action: RetryAfterHonoured, delay: 10 * m, asked: 10 * m},
		{name: "Date header with whitespace", raw: "Fri, 14 Mar 2025 12:05:00 GMT", date: " Fri, 14 Mar 2025 11:55:00 GMT ", action: RetryAfterHonoured, delay: 10 * m, asked: 10 * m},
		{name: "Date header garbage", raw: "Fri, 14 Mar 2025 12:05:00 GMT", date: "yesterday", action: RetryAfterHonoured, delay: 5 * m, asked: 5 * m, reason: "Date is unparseable"},
		{name: "Date header makes past date valid", raw: "Fri, 14 Mar 2025 11:58:00 GMT", date: "Fri, 14 Mar 2025 11:55:00 GMT", action: RetryAfterHonoured, delay: 3 * m, asked: 3 * m},
		{name: "Date header makes date past", raw: "Fri, 14 Mar 2025 12:05:00 GMT", date: "Fri, 14 Mar 2025 12:10:00 GMT", action: RetryAfterIgnored, asked: -5 * m},
		{name: "Date header ignored for seconds", raw: "60", date: "Fri, 14 Mar 2025 11:55:00 GMT", action: RetryAfterHonoured, delay: m, asked: m},
	}
	rules := DefaultRetryAfterRules()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := tt.at
			if at.IsZero() {
				at = attempt
			}
			got := rules.Decide(tt.raw, tt.date, at)
			if got.Action != tt.action || got.Delay.Std() != tt.delay || got.Asked.Std() != tt.asked {
				t.Errorf("Decide(%q, %q) = %+v; want action %s, delay %s, asked %s", tt.raw, tt.date, got, tt.action, tt.delay, tt.asked)
			}
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("Decide(%q, %q).Reason = %q, want it to contain %q", tt.raw, tt.date, got.Reason, tt.reason)
			}
			if want := strings.TrimSpace(tt.raw); got.Raw != want {
				t.Errorf("Decide(%q).Raw = %q, want %q", tt.raw, got.Raw, want)
			}
		})
	}
}

func TestDecideCustomRules(t *testing.T) {
	r := RetryAfterRules{HonourBelow: duration.Duration(time.Minute), IgnoreAbove: duration.Duration(time.Hour)}
	tests := []struct {
		raw    string
		action RetryAfterAction
		delay  time.Duration
	}{
		{"59", RetryAfterHonoured, 59 * time.Second},
		{"60", RetryAfterCapped, time.Minute},
		{"3600", RetryAfterCapped, time.Minute},
		{"3601", RetryAfterIgnored, 0},
	}
	for _, tt := range tests {
		got := r.Decide(tt.raw, "", attempt)
		if got.Action != tt.action || got.Delay.Std() != tt.delay {
			t.Errorf("Decide(%q) = %+v; want %s with delay %s", tt.raw, got, tt.action, tt.delay)
		}
	}
}

func TestDecideLongRaw(t *testing.T) {
	raw := strings.Repeat("é", 500) // two bytes a rune: a cut must not split one
	got := DefaultRetryAfterRules().Decide(raw, "", attempt)
	if got.Action != RetryAfterIgnored {
		t.Errorf("Decide(long junk).Action = %s, want ignored", got.Action)
	}
	if len(got.Raw) > MaxRetryAfterRaw || len(got.Raw) < MaxRetryAfterRaw-1 {
		t.Errorf("len(Raw) = %d, want %d or one less", len(got.Raw), MaxRetryAfterRaw)
	}
	if strings.ContainsRune(got.Raw, '\uFFFD') || !strings.HasPrefix(raw, got.Raw) {
		t.Errorf("Raw %q is not a clean prefix of the header", got.Raw)
	}
	if len(got.Reason) > 100 {
		t.Errorf("Reason is %d bytes, want the header shortened in it: %q", len(got.Reason), got.Reason)
	}
}

func TestRetryAfterRulesValidate(t *testing.T) {
	tests := []struct {
		name  string
		rules RetryAfterRules
		want  []string
	}{
		{"default", DefaultRetryAfterRules(), nil},
		{"equal caps", RetryAfterRules{HonourBelow: duration.Duration(time.Hour), IgnoreAbove: duration.Duration(time.Hour)}, nil},
		{"zero value", RetryAfterRules{}, []string{"honour_below is 0s", "must be positive"}},
		{"negative honour", RetryAfterRules{HonourBelow: duration.Duration(-time.Second), IgnoreAbove: duration.Duration(time.Hour)}, []string{"honour_below is -1s"}},
		{"ignore below honour", RetryAfterRules{HonourBelow: duration.Duration(4 * time.Hour), IgnoreAbove: duration.Duration(time.Hour)}, []string{"ignore_above 1h is below honour_below 4h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErrContaining(t, "Validate()", tt.rules.Validate(), tt.want)
		})
	}
}

func FuzzRetryAfter(f *testing.F) {
	seeds := []string{
		"", " ", "0", "60", " 120 ", "14400", "86400", "86401", "-5", "+5", "1.5", "soon",
		"99999999999999999999", "9223372036", "9223372037",
		"Fri, 14 Mar 2025 13:00:00 GMT", "Friday, 14-Mar-25 13:00:00 GMT", "Fri Mar 14 13:00:00 2025",
		"Thu Mar  6 13:00:00 2025", "Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT",
	}
	dates := []string{"", "Fri, 14 Mar 2025 11:55:00 GMT", "garbage", "Fri Mar 14 11:55:00 2025"}
	for i, s := range seeds {
		f.Add(s, dates[i%len(dates)], attempt.Unix(), int64(4*time.Hour), int64(24*time.Hour))
	}
	f.Add("30", "", int64(0), int64(time.Minute), int64(time.Minute))
	f.Add("Fri, 14 Mar 2025 13:00:00 GMT", "", int64(math.MinInt64), int64(0), int64(0))

	f.Fuzz(func(t *testing.T, raw, date string, unix, honour, ignore int64) {
		rules := RetryAfterRules{HonourBelow: duration.Duration(time.Duration(honour)), IgnoreAbove: duration.Duration(time.Duration(ignore))}
		if rules.Validate() != nil {
			rules = DefaultRetryAfterRules()
		}
		at := time.Unix(unix, 0).UTC()
		got := rules.Decide(raw, date, at)

		if again := rules.Decide(raw, date, at); again != got {
			t.Fatalf("Decide is not deterministic: %+v then %+v", got, again)
		}
		if len(got.Raw) > MaxRetryAfterRaw {
			t.Fatalf("len(Raw) = %d > %d", len(got.Raw), MaxRetryAfterRaw)
		}
		switch got.Action {
		case RetryAfterNone:
			if strings.TrimSpace(raw) != "" || got.Delay != 0 || got.Asked != 0 {
				t.Fatalf("none for %q: %+v", raw, got)
			}
		case RetryAfterIgnored:
			if got.Delay != 0 {
				t.Fatalf("ignored %q has delay %s", raw, got.Delay)
			}
		case RetryAfterHonoured:
			if got.Delay < 0 || got.Delay >= rules.HonourBelow || got.Delay != got.Asked {
				t.Fatalf("honoured %q: %+v, want 0 <= delay == asked < %s", raw, got, rules.HonourBelow)
			}
		case RetryAfterCapped:
			if got.Delay != rules.HonourBelow || got.Asked < rules.HonourBelow || got.Asked > rules.IgnoreAbove {
				t.Fatalf("capped %q: %+v, want delay %s and asked in [%s, %s]", raw, got, rules.HonourBelow, rules.HonourBelow, rules.IgnoreAbove)
			}
		default:
			t.Fatalf("unknown action %q for %q", got.Action, raw)
		}

		next := Next(DefaultLadder(), 1, got, JitterKey(raw, 0, 1))
		if !next.Retry {
			t.Fatalf("Next after attempt 1 of the default ladder does not retry: %+v", next)
		}
		if got.Action == RetryAfterHonoured || got.Action == RetryAfterCapped {
			hi := got.Delay + got.Delay/5 + 1
			if next.Source != SourceRetryAfter || next.Delay < got.Delay || next.Delay > hi {
				t.Fatalf("Next for %+v = %+v, want retry_after delay in [%s, %s]", got, next, got.Delay, hi)
			}
		} else if next.Source != SourceLadder || next.Delay.Std() < 24*time.Second || next.Delay.Std() > 36*time.Second {
			t.Fatalf("Next for %+v = %+v, want ladder delay in [24s, 36s]", got, next)
		}
	})
}
