package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestNamespaceSetupRetention: a retention Temporal would refuse is a usage error naming
// the flag, before anything is dialed (the address here has nothing listening).
func TestNamespaceSetupRetention(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"namespace", "setup", "--retention", "1h", "--address", "127.0.0.1:1"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--retention 1h") {
		t.Fatalf("err = %v, want a usage error about --retention", err)
	}
}

// TestProbe: probe succeeds on an answer below 500 and fails on a 5xx or no answer.
func TestProbe(t *testing.T) {
	code := http.StatusMethodNotAllowed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
	probe := func() error {
		root := newRootCmd()
		root.SetArgs([]string{"probe", srv.URL})
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		return root.Execute()
	}
	if err := probe(); err != nil {
		t.Fatalf("probe of a 405: %v, want success (the server answers)", err)
	}
	code = http.StatusServiceUnavailable
	if err := probe(); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("probe of a 503: %v, want an error naming the status", err)
	}
	srv.Close()
	if err := probe(); err == nil {
		t.Fatal("probe of a closed server succeeded")
	}
}
