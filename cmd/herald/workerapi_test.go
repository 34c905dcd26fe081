package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/devserver"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/server"
)

// TestWorkerAPIListen: `herald worker --api-listen` serves the HTTP API from the worker's
// process, and an event sent to it is delivered by that worker (the only one on the task
// queue) with its deliveries started eagerly; a bad token is refused, and the worker stops
// with its context.
func TestWorkerAPIListen(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	offline(t)
	srv, err := devserver.Start(context.Background(), devserver.Options{UIPort: -1, Logger: testkit.Quiet, SearchAttributes: herald.SearchAttributeTypes()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	var got atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("webhook-id") == "evt_worker_api" {
			got.Add(1)
		}
	}))
	defer rcv.Close()

	tokensFile := filepath.Join(t.TempDir(), "tokens.json")
	store, err := server.OpenTokenStore(tokensFile)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := store.Create(true, "", "worker api test")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		root := newRootCmd()
		var out testkit.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{"worker", "--plaintext", "--allow-cidr", "127.0.0.0/8", "--api-listen", addr, "--tokens-file", tokensFile,
			"--address", srv.FrontendAddress(), "--namespace", srv.Namespace()})
		done <- root.ExecuteContext(ctx)
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("herald worker: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("herald worker did not stop within 30 s of its context's end")
		}
	}()

	call := func(method, path, tok, body string) int {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(60 * time.Second)
	for call("GET", "/v1/openapi.json", token, "") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the worker's API did not answer within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := call("PUT", "/v1/endpoints/worker-api", "not-a-token", `{"url":"`+rcv.URL+`"}`); code != http.StatusUnauthorized {
		t.Errorf("a bad token: status %d, want 401", code)
	}
	if code := call("PUT", "/v1/endpoints/worker-api", token, `{"url":"`+rcv.URL+`"}`); code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("put endpoint: status %d", code)
	}
	if code := call("POST", "/v1/events", token, `{"endpoint_id":"worker-api","id":"evt_worker_api","type":"demo.hello","data":{"hello":"world"}}`); code/100 != 2 {
		t.Fatalf("send: status %d", code)
	}
	for got.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the event sent through the worker's API was not delivered within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
