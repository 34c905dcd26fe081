package signature

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// signedHeaders returns headers for body signed at ts with secrets, failing the test on error.
func signedHeaders(t *testing.T, id string, ts time.Time, body string, secrets ...Secret) http.Header {
	t.Helper()
	h := http.Header{}
	if err := Headers(h, id, ts, []byte(body), secrets...); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestVerify(t *testing.T) {
	sent := time.Unix(1_900_000_000, 0)
	current, previous, stranger := secretOf(32, 'c'), secretOf(32, 'p'), secretOf(32, 's')
	const body = `{"type":"invoice.paid"}`
	at := func(d time.Duration) func() time.Time { return func() time.Time { return sent.Add(d) } }
	// signed is a header for evt_1 and body, signed at sent by secrets, then changed by edits.
	signed := func(secrets []Secret, edits ...func(http.Header)) http.Header {
		h := signedHeaders(t, "evt_1", sent, body, secrets...)
		for _, e := range edits {
			e(h)
		}
		return h
	}
	bySigner := func(edits ...func(http.Header)) http.Header { return signed([]Secret{current}, edits...) }
	set := func(k, v string) func(http.Header) { return func(h http.Header) { h.Set(k, v) } }
	del := func(k string) func(http.Header) { return func(h http.Header) { h.Del(k) } }
	// verifier holds secrets and reads the clock d after sent.
	verifier := func(d time.Duration, secrets ...Secret) Verifier { return Verifier{Secrets: secrets, Now: at(d)} }

	tests := []struct {
		name      string
		header    http.Header
		body      string // body when empty
		verifier  Verifier
		wantErr   error  // nil means it verifies
		wantInMsg string // checked when the error is not a sentinel
	}{
		{name: "valid", header: bySigner(), verifier: verifier(0, current)},
		{name: "reference vector", header: http.Header{"Webhook-Id": {kaID}, "Webhook-Timestamp": {"1614265330"}, "Webhook-Signature": {kaSig}},
			body: kaBody, verifier: Verifier{Secrets: []Secret{kaSecret}, Now: func() time.Time { return time.Unix(kaUnix, 0) }}},
		{name: "tampered body", header: bySigner(), body: body + " ", verifier: verifier(0, current), wantErr: ErrNoMatch},
		{name: "tampered id", header: bySigner(set(HeaderID, "evt_2")), verifier: verifier(0, current), wantErr: ErrNoMatch},
		{name: "tampered timestamp", header: bySigner(set(HeaderTimestamp, "1900000001")), verifier: verifier(0, current), wantErr: ErrNoMatch},
		{name: "wrong secret", header: bySigner(), verifier: verifier(0, stranger), wantErr: ErrNoMatch},

		// Rotation: a header signed with both secrets verifies with either; a verifier holding
		// both accepts a header signed with either.
		{name: "two signatures, verifier has the current", header: signed([]Secret{current, previous}), verifier: verifier(0, current)},
		{name: "two signatures, verifier has the previous", header: signed([]Secret{current, previous}), verifier: verifier(0, previous)},
		{name: "two signatures, verifier has neither", header: signed([]Secret{current, previous}), verifier: verifier(0, stranger), wantErr: ErrNoMatch},
		{name: "one signature, verifier has two secrets", header: signed([]Secret{previous}), verifier: verifier(0, stranger, previous)},
		{name: "foreign versions and junk are skipped", header: bySigner(func(h http.Header) {
			h.Set(HeaderSignature, "v1a,AAAA v2,"+strings.TrimPrefix(h.Get(HeaderSignature), "v1,")+" v1,%%% v1 , "+h.Get(HeaderSignature))
		}), verifier: verifier(0, current)},
		{name: "same MAC under another version is not accepted", header: bySigner(func(h http.Header) {
			h.Set(HeaderSignature, "v2,"+strings.TrimPrefix(h.Get(HeaderSignature), "v1,"))
		}), verifier: verifier(0, current), wantErr: ErrNoMatch},

		// Tolerance window, default 5 minutes, inclusive at the edge.
		{name: "5m old, default tolerance", header: bySigner(), verifier: verifier(5*time.Minute, current)},
		{name: "5m1s old", header: bySigner(), verifier: verifier(5*time.Minute+time.Second, current), wantErr: ErrTooOld},
		{name: "5m in the future", header: bySigner(), verifier: verifier(-5*time.Minute, current)},
		{name: "5m1s in the future", header: bySigner(), verifier: verifier(-5*time.Minute-time.Second, current), wantErr: ErrTooNew},
		{name: "custom tolerance, inside", header: bySigner(),
			verifier: Verifier{Secrets: []Secret{current}, Tolerance: time.Hour, Now: at(59 * time.Minute)}},
		{name: "custom tolerance, outside", header: bySigner(),
			verifier: Verifier{Secrets: []Secret{current}, Tolerance: 10 * time.Second, Now: at(11 * time.Second)}, wantErr: ErrTooOld},
		{name: "stale but also wrong secret reports staleness", header: bySigner(), verifier: verifier(time.Hour, stranger), wantErr: ErrTooOld},

		// Malformed requests.
		{name: "missing id", header: bySigner(del(HeaderID)), verifier: verifier(0, current), wantErr: ErrMissingHeader},
		{name: "missing timestamp", header: bySigner(del(HeaderTimestamp)), verifier: verifier(0, current), wantErr: ErrMissingHeader},
		{name: "missing signature", header: bySigner(del(HeaderSignature)), verifier: verifier(0, current), wantErr: ErrMissingHeader},
		{name: "id with a dot", header: bySigner(set(HeaderID, "evt.1")), verifier: verifier(0, current), wantErr: ErrInvalidID},
		{name: "timestamp with a sign", header: bySigner(set(HeaderTimestamp, "+1900000000")), verifier: verifier(0, current), wantErr: ErrInvalidTimestamp},
		{name: "timestamp in milliseconds overflows", header: bySigner(set(HeaderTimestamp, "99999999999999999999")), verifier: verifier(0, current), wantErr: ErrInvalidTimestamp},
		{name: "timestamp as a date", header: bySigner(set(HeaderTimestamp, "2030-03-17T17:46:40Z")), verifier: verifier(0, current), wantErr: ErrInvalidTimestamp},

		// Misconfigured verifiers.
		{name: "verifier without secrets", header: bySigner(), verifier: verifier(0), wantInMsg: "no secrets"},
		{name: "verifier with a malformed secret", header: bySigner(), verifier: verifier(0, "whsec_short"), wantInMsg: "verifier secret 1 of 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.body
			if b == "" {
				b = body
			}
			err := tt.verifier.Verify(tt.header, []byte(b))
			switch {
			case tt.wantErr == nil && tt.wantInMsg == "":
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Verify = %v, want an error wrapping %v", err, tt.wantErr)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), tt.wantInMsg) {
					t.Fatalf("Verify = %v, want an error containing %q", err, tt.wantInMsg)
				}
			}
		})
	}
}

func TestNewVerifierDefaults(t *testing.T) {
	s := secretOf(32, 'n')
	v := NewVerifier(s)
	if len(v.Secrets) != 1 || v.Secrets[0] != s || v.Tolerance != 0 || v.Now != nil {
		t.Fatalf("NewVerifier = %+v, want one secret and defaults", v)
	}
	// A header signed at the real current time verifies with the real clock.
	h := signedHeaders(t, "evt_now", time.Now(), "{}", s)
	if err := v.Verify(h, []byte("{}")); err != nil {
		t.Fatalf("Verify with the default clock = %v", err)
	}
	// A month-old header does not.
	h = signedHeaders(t, "evt_old", time.Now().AddDate(0, -1, 0), "{}", s)
	if err := v.Verify(h, []byte("{}")); !errors.Is(err, ErrTooOld) {
		t.Fatalf("Verify of a month-old header = %v, want ErrTooOld", err)
	}
}
