package codec

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testkit/check"
)

const uiOrigin = "http://localhost:8233"

// wirePayloads is the JSON body the Temporal Web UI sends and expects.
type wirePayloads struct {
	Payloads []wirePayload `json:"payloads"`
}

type wirePayload struct {
	Metadata map[string]string `json:"metadata"` // values are base64
	Data     string            `json:"data"`     // base64
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func unb64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("response field %q is not base64: %v", s, err)
	}
	return string(b)
}

func post(t *testing.T, url, origin, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, b := check.Do(t, nil, req)
	return resp, string(b)
}

func TestHandlerRoundTrip(t *testing.T) {
	k := mustKeyring(t, keyLine("k1", 1, 32))
	srv := httptest.NewServer(Handler(k, []string{uiOrigin + "/"}))
	defer srv.Close()

	plain := `{"event":"invoice.paid","secret":"` + secret + `"}`
	reqBody, _ := json.Marshal(wirePayloads{Payloads: []wirePayload{
		{Metadata: map[string]string{"encoding": b64("json/plain")}, Data: b64(plain)},
		{Metadata: map[string]string{"encoding": b64("json/plain")}, Data: b64(`"second"`)},
	}})

	resp, encBody := post(t, srv.URL+"/codec/encode", uiOrigin, string(reqBody))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("encode status %d: %s", resp.StatusCode, encBody)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != uiOrigin {
		t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, uiOrigin)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	if strings.Contains(encBody, b64(plain)) || strings.Contains(encBody, secret) {
		t.Fatalf("encode response contains the plaintext: %s", encBody)
	}
	var enc wirePayloads
	if err := json.Unmarshal([]byte(encBody), &enc); err != nil {
		t.Fatalf("encode response is not Payloads JSON: %v\n%s", err, encBody)
	}
	if len(enc.Payloads) != 2 || unb64(t, enc.Payloads[0].Metadata["encoding"]) != Encoding || unb64(t, enc.Payloads[0].Metadata[MetadataKeyID]) != "k1" {
		t.Fatalf("encode response = %s", encBody)
	}

	// The UI decodes what the worker wrote: POST the encoded body to /decode, here under a namespace prefix.
	resp, decBody := post(t, srv.URL+"/default/decode", uiOrigin, encBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("decode status %d: %s", resp.StatusCode, decBody)
	}
	var dec wirePayloads
	if err := json.Unmarshal([]byte(decBody), &dec); err != nil {
		t.Fatalf("decode response is not Payloads JSON: %v\n%s", err, decBody)
	}
	if len(dec.Payloads) != 2 {
		t.Fatalf("decode returned %d payloads, want 2: %s", len(dec.Payloads), decBody)
	}
	if got := unb64(t, dec.Payloads[0].Data); got != plain {
		t.Errorf("decoded data = %q, want %q", got, plain)
	}
	if got := unb64(t, dec.Payloads[0].Metadata["encoding"]); got != "json/plain" {
		t.Errorf("decoded encoding = %q, want json/plain", got)
	}
	if got := unb64(t, dec.Payloads[1].Data); got != `"second"` {
		t.Errorf("second decoded data = %q", got)
	}

	// Without an Origin (CLI, SDK remote codec) the handler serves and sets no CORS headers.
	resp, body := post(t, srv.URL+"/decode", "", encBody)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no-origin decode: status %d, ACAO %q: %s", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), body)
	}
}

func TestHandlerCORSPreflight(t *testing.T) {
	k := mustKeyring(t, keyLine("k1", 1, 32))
	tests := []struct {
		name       string
		origins    []string
		origin     string
		path       string
		wantStatus int
		wantACAO   string
	}{
		{name: "allowed origin", origins: []string{uiOrigin}, origin: uiOrigin, path: "/decode", wantStatus: http.StatusNoContent, wantACAO: uiOrigin},
		{name: "allowed under prefix", origins: []string{"http://other:1", uiOrigin}, origin: uiOrigin, path: "/codec/encode", wantStatus: http.StatusNoContent, wantACAO: uiOrigin},
		{name: "wildcard echoes origin", origins: []string{"*"}, origin: "https://ui.example", path: "/decode", wantStatus: http.StatusNoContent, wantACAO: "https://ui.example"},
		{name: "origin not allowed", origins: []string{uiOrigin}, origin: "http://evil.example", path: "/decode", wantStatus: http.StatusForbidden},
		{name: "no origins configured", origin: uiOrigin, path: "/decode", wantStatus: http.StatusForbidden},
		{name: "unknown path", origins: []string{uiOrigin}, origin: uiOrigin, path: "/other", wantStatus: http.StatusNotFound, wantACAO: uiOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(Handler(k, tt.origins))
			defer srv.Close()
			req, err := http.NewRequest(http.MethodOptions, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Origin", tt.origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-namespace")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tt.wantACAO {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tt.wantACAO)
			}
			if tt.wantStatus != http.StatusNoContent {
				return
			}
			if got := resp.Header.Get("Access-Control-Allow-Credentials"); got != "true" {
				t.Errorf("Access-Control-Allow-Credentials = %q, want true", got)
			}
			if got := resp.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(got, "POST") {
				t.Errorf("Access-Control-Allow-Methods = %q, want POST", got)
			}
			allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
			for _, h := range []string{"content-type", "x-namespace", "authorization"} {
				if !strings.Contains(allowed, h) {
					t.Errorf("Access-Control-Allow-Headers = %q, missing %s", allowed, h)
				}
			}
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	k := mustKeyring(t, keyLine("k1", 1, 32))
	other := NewCodec(mustKeyring(t, keyLine("gone", 9, 32)))
	foreign, err := other.Encode(samplePayloads()[:1])
	if err != nil {
		t.Fatal(err)
	}
	foreignBody := `{"payloads":[{"metadata":{` +
		`"encoding":"` + base64.StdEncoding.EncodeToString(foreign[0].Metadata["encoding"]) + `",` +
		`"encryption-key-id":"` + b64("gone") + `"},` +
		`"data":"` + base64.StdEncoding.EncodeToString(foreign[0].Data) + `"}]}`

	h := Handler(k, []string{uiOrigin})
	tests := []struct {
		name       string
		method     string
		path       string
		origin     string
		body       string
		wantStatus int
		wantBody   string
	}{
		{name: "GET", method: http.MethodGet, path: "/decode", wantStatus: http.StatusMethodNotAllowed, wantBody: "use POST"},
		{name: "unknown operation", method: http.MethodPost, path: "/transcode", body: `{}`, wantStatus: http.StatusNotFound, wantBody: "POST to .../encode or .../decode"},
		{name: "root", method: http.MethodPost, path: "/", body: `{}`, wantStatus: http.StatusNotFound},
		{name: "not JSON", method: http.MethodPost, path: "/decode", body: `payloads please`, wantStatus: http.StatusBadRequest, wantBody: "not a Payloads message in protobuf JSON"},
		{name: "data not base64", method: http.MethodPost, path: "/decode", body: `{"payloads":[{"data":"***"}]}`, wantStatus: http.StatusBadRequest, wantBody: "not a Payloads message"},
		{name: "unknown key", method: http.MethodPost, path: "/decode", body: foreignBody, wantStatus: http.StatusBadRequest, wantBody: `key "gone" is not in the keyring`},
		{name: "disallowed origin POST", method: http.MethodPost, path: "/decode", origin: "http://evil.example", body: `{}`, wantStatus: http.StatusForbidden, wantBody: "origin http://evil.example is not allowed"},
		{name: "empty list", method: http.MethodPost, path: "/decode", body: `{}`, wantStatus: http.StatusOK, wantBody: `{"payloads":[]}`},
		{name: "too large", method: http.MethodPost, path: "/encode", body: `{"payloads":[{"data":"` + strings.Repeat("A", MaxRequestBytes) + `"}]}`, wantStatus: http.StatusRequestEntityTooLarge, wantBody: "send fewer payloads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A recorder, not a socket: the oversized body must not race a closing connection.
			req := httptest.NewRequest(tt.method, "http://codec.test"+tt.path, strings.NewReader(tt.body))
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			b := rec.Body.String()
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.wantStatus, b)
			}
			if !strings.Contains(b, tt.wantBody) {
				t.Errorf("body = %q, want containing %q", b, tt.wantBody)
			}
		})
	}
}
