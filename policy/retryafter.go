package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/duration"
)

// RetryAfterAction says what Herald did with a receiver's Retry-After.
type RetryAfterAction string

// The four things Herald can do with a Retry-After header.
const (
	RetryAfterNone     RetryAfterAction = "none"     // no header, or an empty one
	RetryAfterHonoured RetryAfterAction = "honoured" // waited what the receiver asked
	RetryAfterCapped   RetryAfterAction = "capped"   // waited HonourBelow instead of a longer ask
	RetryAfterIgnored  RetryAfterAction = "ignored"  // negative, too long or unparseable: ladder applies
)

// MaxRetryAfterRaw is the most bytes of a Retry-After value kept in
// [RetryAfter.Raw]; decisions are journalled in workflow history, so a
// hostile header must not bloat it.
const MaxRetryAfterRaw = 128

// HTTP-date layouts of RFC 9110 §5.6.7, preferred first. The zone is always
// GMT, written literally, so parsing yields UTC.
const (
	imfFixdate  = "Mon, 02 Jan 2006 15:04:05 GMT"
	rfc850Date  = "Monday, 02-Jan-06 15:04:05 GMT"
	asctimeDate = "Mon Jan _2 15:04:05 2006"
)

// RetryAfterRules are the caps Herald applies to a receiver's Retry-After.
//
// An asked delay d is honoured when 0 ≤ d < HonourBelow, capped to
// HonourBelow when HonourBelow ≤ d ≤ IgnoreAbove, and ignored when d < 0 or
// d > IgnoreAbove. With the defaults, exactly 4h is capped (to the same 4h),
// exactly 24h is capped to 4h and 24h+1s is ignored.
type RetryAfterRules struct {
	HonourBelow duration.Duration `json:"honour_below"` // asks below this are honoured; longer ones are capped to it
	IgnoreAbove duration.Duration `json:"ignore_above"` // asks above this are ignored
}

// DefaultRetryAfterRules returns the rules from the issue: honour under 4h,
// cap at 4h up to 24h, ignore beyond.
func DefaultRetryAfterRules() RetryAfterRules {
	return RetryAfterRules{HonourBelow: duration.Duration(4 * time.Hour), IgnoreAbove: duration.Duration(24 * time.Hour)}
}

// Validate reports a problem with the rules, or nil: HonourBelow must be
// positive and IgnoreAbove at least HonourBelow.
func (r RetryAfterRules) Validate() error {
	var errs []error
	if r.HonourBelow <= 0 {
		errs = append(errs, fmt.Errorf("retry-after rules: honour_below is %s; it must be positive (default %s)", r.HonourBelow, duration.Duration(4*time.Hour)))
	}
	if r.IgnoreAbove < r.HonourBelow {
		errs = append(errs, fmt.Errorf("retry-after rules: ignore_above %s is below honour_below %s; set it at or above honour_below (default %s)", r.IgnoreAbove, r.HonourBelow, duration.Duration(24*time.Hour)))
	}
	return errors.Join(errs...)
}

// RetryAfter is the decision on one Retry-After header.
type RetryAfter struct {
	Raw    string            `json:"raw,omitempty"`    // the header value, trimmed, at most MaxRetryAfterRaw bytes
	Action RetryAfterAction  `json:"action"`           // what Herald did with it
	Delay  duration.Duration `json:"delay,omitempty"`  // what Herald will wait at least (honoured/capped)
	Asked  duration.Duration `json:"asked,omitempty"`  // what the receiver asked, when parseable and representable
	Reason string            `json:"reason,omitempty"` // human text, e.g. "asked 6h, capped at 4h"
}

// Decide turns one Retry-After value into a decision.
//
// raw is the header value; surrounding whitespace is ignored and an empty
// value counts as no header (RetryAfterNone). It is either delta-seconds
// ("120") or an HTTP-date in IMF-fixdate, obsolete RFC 850 or ANSI C asctime
// form. A date becomes a delay against dateHeader, the response's Date, when
// that parses, else against attemptTime. A two-digit RFC 850 year follows
// time.Parse: 69–99 are 19xx, 00–68 are 20xx.
//
// Ignored, with the ladder's delay applying: a negative delay (a date in the
// past, or "-5"), one above IgnoreAbove, delta-seconds too large for a
// Duration, and anything unparseable ("soon", "1.5", "+5"). "0" is honoured
// with a zero delay.
//
// Decide expects rules that pass Validate; with others it still returns a
// decision and never panics.
func (r RetryAfterRules) Decide(raw, dateHeader string, attemptTime time.Time) RetryAfter {
	value := strings.TrimSpace(raw)
	if value == "" {
		return RetryAfter{Action: RetryAfterNone, Reason: "no Retry-After header"}
	}
	out := RetryAfter{Raw: truncateUTF8(value, MaxRetryAfterRaw)}

	var asked time.Duration
	var from string // what a date was measured against, for Reason
	switch secs, neg, ok := parseDeltaSeconds(value); {
	case ok && secs < 0:
		out.Action = RetryAfterIgnored
		out.Reason = fmt.Sprintf("asked %s seconds, too large; ladder applies", truncateUTF8(value, 32))
		return out
	case ok:
		asked = time.Duration(secs) * time.Second
		if neg {
			asked = -asked
		}
	default:
		target, ok := parseHTTPDate(value)
		if !ok {
			out.Action = RetryAfterIgnored
			out.Reason = fmt.Sprintf("unparseable %q; ladder applies", truncateUTF8(value, 32))
			return out
		}
		ref := attemptTime
		from = " (date measured against the attempt time)"
		if d, ok := parseHTTPDate(strings.TrimSpace(dateHeader)); ok {
			ref = d
			from = " (date measured against the response's Date)"
		} else if strings.TrimSpace(dateHeader) != "" {
			from = " (date measured against the attempt time; the response's Date is unparseable)"
		}
		asked = target.Sub(ref) // saturates instead of overflowing
	}

	out.Asked = duration.Duration(asked)
	switch {
	case asked < 0:
		out.Action = RetryAfterIgnored
		out.Reason = fmt.Sprintf("asked %s, in the past; ladder applies%s", out.Asked, from)
	case asked < r.HonourBelow.Std():
		out.Action = RetryAfterHonoured
		out.Delay = duration.Duration(asked)
		out.Reason = fmt.Sprintf("asked %s, honoured%s", out.Asked, from)
	case asked <= r.IgnoreAbove.Std():
		out.Action = RetryAfterCapped
		out.Delay = max(r.HonourBelow, 0)
		out.Reason = fmt.Sprintf("asked %s, capped at %s%s", out.Asked, out.Delay, from)
	default:
		out.Action = RetryAfterIgnored
		out.Reason = fmt.Sprintf("asked %s, over %s; ladder applies%s", out.Asked, r.IgnoreAbove, from)
	}
	return out
}

// parseDeltaSeconds parses delta-seconds (1*DIGIT), also accepting a leading
// '-' so a negative ask is reported as such. ok is false when s is not of
// that form; secs is -1 when the digits overflow a Duration in seconds.
func parseDeltaSeconds(s string) (secs int64, neg, ok bool) {
	digits := s
	if strings.HasPrefix(digits, "-") {
		neg, digits = true, digits[1:]
	}
	if digits == "" {
		return 0, false, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64/int64(time.Second) {
		return -1, neg, true
	}
	return n, neg, true
}

// parseHTTPDate parses s in any of the three HTTP-date forms.
func parseHTTPDate(s string) (time.Time, bool) {
	for _, layout := range []string{imfFixdate, rfc850Date, asctimeDate} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// truncateUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Backpressure reports whether the receiver asked for 60 s to 5 min: in the retry-ladder
// article (see the package doc), the sign of a receiver that sheds load on purpose and knows
// when it will be ready.
func (r RetryAfter) Backpressure() bool {
	return r.Asked.Std() >= time.Minute && r.Asked.Std() <= 5*time.Minute
}
