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

	tests := []struct {
		name      string
		header    http.Header
		body      string
		verifier  Verifier
		wantErr   error  // nil means it verifies
		wantInMsg string // checked when the error is not a sentinel
	}{
		{name: "valid", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}},
		{name: "reference vector", header: http.Header{"Webhook-Id": {kaID}, "Webhook-Timestamp": {"1614265330"}, "Webhook-Signature": {kaSig}},
			body: kaBody, verifier: Verifier{Secrets: []Secret{kaSecret}, Now: func() time.Time { return time.Unix(kaUnix, 0) }}},
		{name: "tampered body", header: signedHeaders(t, "evt_1", sent, body, current), body: body + " ",
			verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrNoMatch},
		{name: "tampered id", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Set(HeaderID, "evt_2")
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrNoMatch},
		{name: "tampered timestamp", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Set(HeaderTimestamp, "1900000001")
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrNoMatch},
		{name: "wrong secret", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{stranger}, Now: at(0)}, wantErr: ErrNoMatch},

		// Rotation: a header signed with both secrets verifies with either; a verifier holding
		// both accepts a header signed with either.
		{name: "two signatures, verifier has the current", header: signedHeaders(t, "evt_1", sent, body, current, previous), body: body,
			verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}},
		{name: "two signatures, verifier has the previous", header: signedHeaders(t, "evt_1", sent, body, current, previous), body: body,
			verifier: Verifier{Secrets: []Secret{previous}, Now: at(0)}},
		{name: "two signatures, verifier has neither", header: signedHeaders(t, "evt_1", sent, body, current, previous), body: body,
			verifier: Verifier{Secrets: []Secret{stranger}, Now: at(0)}, wantErr: ErrNoMatch},
		{name: "one signature, verifier has two secrets", header: signedHeaders(t, "evt_1", sent, body, previous), body: body,
			verifier: Verifier{Secrets: []Secret{stranger, previous}, Now: at(0)}},
		{name: "foreign versions and junk are skipped", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Set(HeaderSignature, "v1a,AAAA v2,"+strings.TrimPrefix(h.Get(HeaderSignature), "v1,")+" v1,%%% v1 , "+h.Get(HeaderSignature))
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}},
		{name: "same MAC under another version is not accepted", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Set(HeaderSignature, "v2,"+strings.TrimPrefix(h.Get(HeaderSignature), "v1,"))
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrNoMatch},

		// Tolerance window, default 5 minutes, inclusive at the edge.
		{name: "5m old, default tolerance", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{current}, Now: at(5 * time.Minute)}},
		{name: "5m1s old", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{current}, Now: at(5*time.Minute + time.Second)}, wantErr: ErrTooOld},
		{name: "5m in the future", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{current}, Now: at(-5 * time.Minute)}},
		{name: "5m1s in the future", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{current}, Now: at(-5*time.Minute - time.Second)}, wantErr: ErrTooNew},
		{name: "custom tolerance, inside", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{current}, Tolerance: time.Hour, Now: at(59 * time.Minute)}},
		{name: "custom tolerance, outside", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{current}, Tolerance: 10 * time.Second, Now: at(11 * time.Second)}, wantErr: ErrTooOld},
		{name: "stale but also wrong secret reports staleness", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{stranger}, Now: at(time.Hour)}, wantErr: ErrTooOld},

		// Malformed requests.
		{name: "missing id", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Del(HeaderID)
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrMissingHeader},
		{name: "missing timestamp", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Del(HeaderTimestamp)
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrMissingHeader},
		{name: "missing signature", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Del(HeaderSignature)
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrMissingHeader},
		{name: "id with a dot", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Set(HeaderID, "evt.1")
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrInvalidID},
		{name: "timestamp with a sign", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Set(HeaderTimestamp, "+1900000000")
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrInvalidTimestamp},
		{name: "timestamp in milliseconds overflows", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Set(HeaderTimestamp, "99999999999999999999")
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrInvalidTimestamp},
		{name: "timestamp as a date", header: func() http.Header {
			h := signedHeaders(t, "evt_1", sent, body, current)
			h.Set(HeaderTimestamp, "2030-03-17T17:46:40Z")
			return h
		}(), body: body, verifier: Verifier{Secrets: []Secret{current}, Now: at(0)}, wantErr: ErrInvalidTimestamp},

		// Misconfigured verifiers.
		{name: "verifier without secrets", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Now: at(0)}, wantInMsg: "no secrets"},
		{name: "verifier with a malformed secret", header: signedHeaders(t, "evt_1", sent, body, current), body: body,
			verifier: Verifier{Secrets: []Secret{"whsec_short"}, Now: at(0)}, wantInMsg: "verifier secret 1 of 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.verifier.Verify(tt.header, []byte(tt.body))
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
