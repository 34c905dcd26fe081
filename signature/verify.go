package signature

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// DefaultTolerance is how far a webhook-timestamp may be from the verifier's clock,
// in either direction, when Verifier.Tolerance is zero.
const DefaultTolerance = 5 * time.Minute

// Errors Verify wraps, for errors.Is.
var (
	// ErrMissingHeader means webhook-id, webhook-timestamp or webhook-signature is absent or empty.
	ErrMissingHeader = errors.New("missing webhook header")
	// ErrInvalidID means the webhook-id header fails ValidateID.
	ErrInvalidID = errors.New("invalid webhook-id")
	// ErrInvalidTimestamp means webhook-timestamp is not a whole number of Unix seconds.
	ErrInvalidTimestamp = errors.New("invalid webhook-timestamp")
	// ErrTooOld means webhook-timestamp is older than the tolerance allows (a replay, or a slow clock).
	ErrTooOld = errors.New("webhook timestamp too old")
	// ErrTooNew means webhook-timestamp is further in the future than the tolerance allows.
	ErrTooNew = errors.New("webhook timestamp too new")
	// ErrNoMatch means no v1 signature in webhook-signature matches any of the verifier's secrets.
	ErrNoMatch = errors.New("no matching signature")
)

// Verifier checks incoming webhooks, for receivers written in Go and for Herald's tests.
// Its zero value rejects everything; build it with NewVerifier or set Secrets.
type Verifier struct {
	// Secrets are tried in turn; a request verifies if any of them made any of its signatures.
	Secrets []Secret
	// Tolerance is how far webhook-timestamp may be from Now in either direction; zero or
	// negative means DefaultTolerance.
	Tolerance time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// NewVerifier returns a Verifier accepting signatures made by any of secrets, with the
// default tolerance and clock.
func NewVerifier(secrets ...Secret) *Verifier {
	return &Verifier{Secrets: secrets}
}

// Verify checks the Standard Webhooks headers in h against body, which must be the raw
// bytes received. It returns nil if the timestamp is within the tolerance and a v1
// signature matches one of the secrets (compared in constant time); otherwise an error
// wrapping ErrMissingHeader, ErrInvalidID, ErrInvalidTimestamp, ErrTooOld, ErrTooNew or
// ErrNoMatch, or describing a malformed secret in the verifier.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	id := h.Get(HeaderID)
	tsText := h.Get(HeaderTimestamp)
	sigs := h.Get(HeaderSignature)
	for _, hv := range []struct{ name, value string }{{HeaderID, id}, {HeaderTimestamp, tsText}, {HeaderSignature, sigs}} {
		if hv.value == "" {
			return fmt.Errorf("verify: %w: %s", ErrMissingHeader, hv.name)
		}
	}
	if err := ValidateID(id); err != nil {
		return fmt.Errorf("verify: %w: %v", ErrInvalidID, err)
	}
	ts, err := parseTimestamp(tsText)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}

	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	if d := now().Sub(ts); d > tol {
		return fmt.Errorf("verify: %w: %s=%s is %s in the past, tolerance is %s", ErrTooOld, HeaderTimestamp, tsText, d.Truncate(time.Second), tol)
	} else if -d > tol {
		return fmt.Errorf("verify: %w: %s=%s is %s in the future, tolerance is %s", ErrTooNew, HeaderTimestamp, tsText, (-d).Truncate(time.Second), tol)
	}

	if len(v.Secrets) == 0 {
		return errors.New("verify: the verifier has no secrets; configure at least one")
	}
	given := candidates(sigs)
	for i, s := range v.Secrets {
		key, err := s.key()
		if err != nil {
			return fmt.Errorf("verify: verifier secret %d of %d: %w", i+1, len(v.Secrets), err)
		}
		want := mac(key, id, tsText, body)
		for _, g := range given {
			if hmac.Equal(g, want) {
				return nil
			}
		}
	}
	return fmt.Errorf("verify: %w: %d v1 signature(s) in %s, none made by the %d configured secret(s) over this id, timestamp and body",
		ErrNoMatch, len(given), HeaderSignature, len(v.Secrets))
}
