package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestStartingAnswers503UntilReady(t *testing.T) {
	var s Starting
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/v1/endpoints", nil),
		httptest.NewRequest(http.MethodPost, "/v1/events", nil),
		httptest.NewRequest(http.MethodGet, "/signin", nil),
		httptest.NewRequest(http.MethodGet, "/nothing/here", nil),
	} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		var body apiError
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
			rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error == "" {
			t.Errorf("%s %s while starting: %d %v %s; want 503, Retry-After and a JSON error", r.Method, r.URL.Path, rec.Code, rec.Header(), rec.Body)
		}
	}
	s.Ready(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/endpoints", nil))
	if rec.Code != http.StatusTeapot {
		t.Fatalf("once ready: %d, want the ready handler's answer", rec.Code)
	}
}
