package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for a command writing and a test reading; seen is
// closed once the output contains the line.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	line string
	seen chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.seen != nil && strings.Contains(s.b.String(), s.line) {
		close(s.seen)
		s.seen = nil
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDevStartingIs503: while herald dev starts, its HTTP port answers every path with 503,
// a JSON error and Retry-After (clients retry), never a plain 404 (clients give up); once
// it is ready, the API answers.
func TestDevStartingIs503(t *testing.T) {
	if testing.Short() {
		t.Skip("runs herald dev")
	}
	t.Setenv("HERALD_TOKENS_FILE", t.TempDir()+"/tokens.json")
	t.Chdir(t.TempDir())
	type answer struct {
		code        int
		contentType string
		retryAfter  string
		body        string
	}
	probe := func(url string) answer {
		resp, err := http.Get(url)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			return answer{}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), string(b)}
	}
	var starting []answer
	ready := make(chan string, 1)
	devBeforeReady = func(httpURL string) {
		for _, path := range []string{"/v1/endpoints", "/v1/openapi.json", "/", "/signin", "/v1/nothing"} {
			starting = append(starting, probe(httpURL+path))
		}
		ready <- httpURL
	}
	defer func() { devBeforeReady = nil }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCmd()
	banner := make(chan struct{})
	out := &syncBuffer{line: "Ctrl-C stops everything.", seen: banner}
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"dev", "--in-memory", "--plaintext", "--port", freePort(t), "--ui-port", "-1", "--http-port", freePort(t)})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var httpURL string
	select {
	case httpURL = <-ready:
	case err := <-done:
		t.Fatalf("herald dev ended before it was ready: %v\n%s", err, out)
	}
	for i, a := range starting {
		var body struct{ Error string }
		if a.code != http.StatusServiceUnavailable || a.retryAfter == "" || !strings.HasPrefix(a.contentType, "application/json") ||
			json.Unmarshal([]byte(a.body), &body) != nil || body.Error == "" {
			t.Errorf("probe %d while starting: %d %q Retry-After %q: %s; want 503, a JSON error and Retry-After", i, a.code, a.contentType, a.retryAfter, a.body)
		}
	}
	// Ready (the command prints its banner once the dashboard is mounted): the API answers,
	// 401 without a token.
	select {
	case <-banner:
	case err := <-done:
		t.Fatalf("herald dev ended: %v\n%s", err, out)
	}
	if a := probe(httpURL + "/v1/endpoints"); a.code != http.StatusUnauthorized {
		t.Errorf("GET /v1/endpoints once ready: %d %s, want 401", a.code, a.body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("herald dev: %v\n%s", err, out)
	}
}
