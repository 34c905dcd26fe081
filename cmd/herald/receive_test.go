package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/signature"
)

// receive -o json prints one JSON object per request on standard output, and its
// start-up line on standard error.
func TestReceiveJSON(t *testing.T) {
	secret, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW := io.Pipe()
	var stderr testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCmd()
	root.SetArgs([]string{"receive", "-o", "json", "--listen", "127.0.0.1:0", "--secret", string(secret), "--status", "202"})
	root.SetOut(stdoutW)
	root.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); stdoutW.Close() }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("receive: %v", err)
		}
	}()

	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			base = "http://" + m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no start-up line on standard error; got %q", stderr.String())
		}
	}
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	post := func(body string, sign bool) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/hook", strings.NewReader(body))
		if sign {
			if err := signature.Headers(req.Header, "evt_1", time.Now(), []byte(body), secret); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 202 {
			t.Fatalf("status %d, want 202", resp.StatusCode)
		}
		line, ok := <-lines
		if !ok {
			t.Fatal("no line on standard output")
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", line, err)
		}
		return got
	}

	got := post(`{"order": 42}`, true)
	for k, want := range map[string]any{"n": 1.0, "method": "POST", "path": "/hook", "webhook_id": "evt_1", "signature": "ok"} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v (in %v)", k, got[k], want, got)
		}
	}
	if b, _ := json.Marshal(got["body"]); string(b) != `{"order":42}` {
		t.Errorf("body = %s, want the request's JSON", b)
	}
	if h, _ := got["headers"].(map[string]any); h["webhook-signature"] == nil {
		t.Errorf("headers = %v, want the webhook headers", got["headers"])
	}
	if _, err := time.Parse(time.RFC3339Nano, got["received_at"].(string)); err != nil {
		t.Errorf("received_at: %v", err)
	}

	got = post("not json", false)
	if got["n"] != 2.0 || got["signature"] != "invalid" || got["signature_error"] == nil || got["body_text"] != "not json" || got["body"] != nil {
		t.Errorf("unsigned text request: got %v", got)
	}
}
