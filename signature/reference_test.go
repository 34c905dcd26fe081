package signature_test

import (
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldhq/herald/signature"
)

// TestReferenceVerifierAcceptsHerald checks Herald's headers against the Standard Webhooks
// reference Go library, including a rotation header carrying two signatures.
func TestReferenceVerifierAcceptsHerald(t *testing.T) {
	current, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	previous, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"contact.created","data":{"id":"1f81eb52"}}`)

	tests := []struct {
		name    string
		signers []signature.Secret
		checker signature.Secret
		wantOK  bool
	}{
		{"one secret", []signature.Secret{current}, current, true},
		{"rotation, checked with the current secret", []signature.Secret{current, previous}, current, true},
		{"rotation, checked with the previous secret", []signature.Secret{current, previous}, previous, true},
		{"rotation, checked with an unrelated secret", []signature.Secret{current, previous}, stranger, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := standardwebhooks.NewWebhook(string(tt.checker))
			if err != nil {
				t.Fatal(err)
			}

			// A fixed past timestamp, checked without the reference's wall-clock tolerance.
			h := http.Header{}
			if err := signature.Headers(h, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", time.Unix(1674087231, 0), body, tt.signers...); err != nil {
				t.Fatal(err)
			}
			if err := ref.VerifyIgnoringTimestamp(body, h); (err == nil) != tt.wantOK {
				t.Fatalf("reference VerifyIgnoringTimestamp = %v, want ok=%v", err, tt.wantOK)
			}

			// The current time, checked with the reference's tolerance too.
			h = http.Header{}
			if err := signature.Headers(h, "evt_now", time.Now(), body, tt.signers...); err != nil {
				t.Fatal(err)
			}
			if err := ref.Verify(body, h); (err == nil) != tt.wantOK {
				t.Fatalf("reference Verify = %v, want ok=%v", err, tt.wantOK)
			}
			if tt.wantOK {
				if err := ref.Verify(append(body, ' '), h); err == nil {
					t.Fatal("reference Verify accepted a tampered body")
				}
			}
		})
	}
}

// TestHeraldVerifierAcceptsReference checks the other direction: the reference library's
// signature verifies with Herald's Verifier.
func TestHeraldVerifierAcceptsReference(t *testing.T) {
	s, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := standardwebhooks.NewWebhook(string(s))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1674087231, 0)
	body := []byte(`{"n":1}`)
	sig, err := ref.Sign("msg_1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, "msg_1")
	h.Set(standardwebhooks.HeaderWebhookTimestamp, "1674087231")
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	v := &signature.Verifier{Secrets: []signature.Secret{s}, Now: func() time.Time { return ts }}
	if err := v.Verify(h, body); err != nil {
		t.Fatalf("Verify of a reference signature = %v", err)
	}
}
