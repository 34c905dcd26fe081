package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The known-answer vector shared by the Standard Webhooks reference libraries' tests.
const (
	kaSecret = Secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	kaID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	kaUnix   = 1614265330
	kaBody   = `{"test": 2432232314}`
	kaSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

// secretOf returns a valid secret encoding n bytes, all equal to fill.
func secretOf(n int, fill byte) Secret {
	return Secret(SecretPrefix + base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(fill), n))))
}

// independentSig computes a v1 signature with crypto/hmac directly, not through the package.
func independentSig(t *testing.T, s Secret, signed string) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(string(s), "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(signed))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestSignKnownAnswer(t *testing.T) {
	got, err := Sign(kaID, time.Unix(kaUnix, 0), []byte(kaBody), kaSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got != kaSig {
		t.Fatalf("Sign = %q, want the reference vector %q", got, kaSig)
	}
}

func TestSignMatchesIndependentHMAC(t *testing.T) {
	a, b := secretOf(32, 'a'), secretOf(64, 'b')
	ts := time.Date(2030, 1, 2, 3, 4, 5, 999_000_000, time.UTC) // sub-second part is dropped
	body := []byte("{\"x\":1}\n")
	signed := fmt.Sprintf("evt_42.%d.%s", ts.Unix(), body)
	tests := []struct {
		name    string
		secrets []Secret
		want    string
	}{
		{"one secret", []Secret{a}, independentSig(t, a, signed)},
		{"two secrets keep their order", []Secret{b, a}, independentSig(t, b, signed) + " " + independentSig(t, a, signed)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Sign("evt_42", ts, body, tt.secrets...)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Sign = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSignRefuses(t *testing.T) {
	ts := time.Unix(kaUnix, 0)
	tests := []struct {
		name    string
		id      string
		ts      time.Time
		secrets []Secret
		wantMsg string
	}{
		{"no secret", kaID, ts, nil, "no secret given"},
		{"malformed second secret", kaID, ts, []Secret{kaSecret, "whsec_!!"}, "secret 2 of 2"},
		{"bad id", "a.b", ts, []Secret{kaSecret}, "contains '.'"},
		{"zero time", kaID, time.Time{}, []Secret{kaSecret}, "before the Unix epoch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Sign(tt.id, tt.ts, nil, tt.secrets...)
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Sign error = %v, want one containing %q", err, tt.wantMsg)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	h := http.Header{}
	if err := Headers(h, kaID, time.Unix(kaUnix, 0), []byte(kaBody), kaSecret); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{HeaderID: kaID, HeaderTimestamp: "1614265330", HeaderSignature: kaSig}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}

	h = http.Header{}
	if err := Headers(h, "", time.Unix(kaUnix, 0), nil, kaSecret); err == nil {
		t.Fatal("Headers with an empty id succeeded")
	}
	if len(h) != 0 {
		t.Fatalf("Headers set %v on error, want nothing", h)
	}
}

func TestValidateID(t *testing.T) {
	tests := []struct {
		id      string
		wantErr string // "" means valid
	}{
		{"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", ""},
		{"1f81eb52-5198-4599-803e-771906343485", ""},
		{"a", ""},
		{strings.Repeat("x", 255), ""},
		{"", "empty"},
		{strings.Repeat("x", 256), "256 bytes"},
		{"evt.1", "'.'"},
		{"evt 1", "space"},
		{"evt\t1", "control"},
		{"evt\n1", "control"},
		{"evt\x001", "control"},
		{"evt\x7f", "control"},
		{"évt", "non-ASCII"},
		{"evt\u00a01", "non-ASCII"}, // no-break space
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.20q", tt.id), func(t *testing.T) {
			err := ValidateID(tt.id)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("ValidateID = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("ValidateID = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseSecret(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Secret
		wantErr string
	}{
		{"reference secret, 24 bytes", string(kaSecret), kaSecret, ""},
		{"64 bytes", string(secretOf(64, 'z')), secretOf(64, 'z'), ""},
		{"surrounding whitespace trimmed", "  " + string(kaSecret) + "\n", kaSecret, ""},
		{"empty", "", "", "empty"},
		{"no prefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "", `missing "whsec_" prefix`},
		{"wrong prefix", "whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "", "prefix"},
		{"prefix only", "whsec_", "", "encodes 0 bytes"},
		{"23 bytes", string(secretOf(23, 'a')), "", "encodes 23 bytes"},
		{"65 bytes", string(secretOf(65, 'a')), "", "encodes 65 bytes"},
		{"url-safe alphabet", "whsec_" + base64.URLEncoding.EncodeToString([]byte(strings.Repeat("\xfb", 24))), "", "not standard base64"},
		{"missing padding", strings.TrimRight(string(secretOf(32, 'a')), "="), "", "not standard base64"},
		{"inner line break", "whsec_MfKQ9r8GKYqrTwjU\nPD8ILPZIo2LaLaSw", "", "line break"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSecret(tt.in)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParseSecret = %q, %v; want %q, nil", string(got), err, string(tt.want))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseSecret error = %v, want one containing %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "expected \"whsec_\"") {
				t.Errorf("error %q does not state the expected form", err)
			}
			if len(tt.in) > len("whsec_") && strings.Contains(err.Error(), tt.in[len("whsec_"):]) {
				t.Errorf("error %q reveals the secret", err)
			}
		})
	}
}

func TestGenerateSecret(t *testing.T) {
	a, err := GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, err := GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("two generated secrets are equal")
	}
	if _, err := ParseSecret(string(a)); err != nil {
		t.Fatalf("generated secret does not parse: %v", err)
	}
	key, _ := a.key()
	if len(key) != GeneratedSecretBytes {
		t.Fatalf("generated key is %d bytes, want %d", len(key), GeneratedSecretBytes)
	}
}

func TestSecretRedaction(t *testing.T) {
	s := kaSecret
	raw := string(s)[len("whsec_"):]
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("rotating", "secret", s)
	for name, out := range map[string]string{
		"String": s.String(),
		"%v":     fmt.Sprintf("%v", s),
		//lint:ignore S1025 the case checks what the %s verb prints, whatever String does
		"%s":       fmt.Sprintf("%s", s),
		"%#v":      fmt.Sprintf("%#v", s),
		"%+v":      fmt.Sprintf("%+v", struct{ S Secret }{s}),
		"LogValue": s.LogValue().String(),
		"slog":     logged.String(),
	} {
		if strings.Contains(out, raw) {
			t.Errorf("%s reveals the secret: %q", name, out)
		}
		if !strings.Contains(out, "REDACTED") {
			t.Errorf("%s = %q, want the redacted placeholder", name, out)
		}
	}
	if got := Secret("").String(); got != "" {
		t.Errorf("empty Secret prints %q, want \"\"", got)
	}
}

func TestSecretJSONKeepsValue(t *testing.T) {
	type cfg struct {
		Secret Secret `json:"secret"`
	}
	b, err := json.Marshal(cfg{kaSecret})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`; string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
	var back cfg
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Secret != kaSecret {
		t.Fatal("secret changed in a JSON round trip")
	}
}
