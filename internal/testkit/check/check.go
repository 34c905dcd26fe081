// Package check holds small test helpers shared by packages whose tests cannot use testkit
// (testkit imports them): waiting for a condition, expecting an error, making an HTTP call.
// It imports nothing of Herald's.
package check

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// T is the part of testing.TB these helpers use.
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Eventually polls cond every 50ms until it holds, failing the test after a minute;
// what says what it waits for.
func Eventually(t T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// Err checks err against want, a part of the expected error message ("" expects no
// error), failing the test when they disagree; it reports whether an error was expected,
// so that a table test can stop there. what names the call in messages.
func Err(t T, what string, err error, want string) (wanted bool) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s error = %v, want one containing %q", what, err, want)
	}
	return true
}

// Do sends req with c (http.DefaultClient when nil) and returns the response, whose body
// is closed, and the body read in full.
func Do(t T, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
