package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/starter"
)

// TestEndpointImport runs herald endpoint import against a real Temporal server and
// worker: the good lines of a JSON Lines file are registered, each bad line is printed
// with its number and the command fails; the same file again changes nothing; a send to
// the tenant right after reaches the last endpoint of the file. The progress lines (not a
// terminal) and the summary are printed.
func TestEndpointImport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	offline(t)
	ctx := context.Background()
	stk, err := testkit.Start(ctx, testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stk.Stop()

	const n = 300
	var file bytes.Buffer
	for i := range n {
		types := `["noise.*"]`
		if i == n-1 {
			types = `["import.last"]`
		}
		fmt.Fprintf(&file, `{"id":"imp-%04d","tenant":"imported","url":"http://127.0.0.1:9/hooks","types":%s,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`+"\n", i, types)
		switch i {
		case 10:
			file.WriteString(`{"id":"imp-broken","url":` + "\n")
		case 20:
			file.WriteString(`{"id":"imp-nosecret","tenant":"imported","url":"http://127.0.0.1:9/x","types":["noise.*"]}` + "\n")
		case 30:
			file.WriteString("\n" + `{"id":"herald-ops","url":"http://127.0.0.1:9/ops"}` + "\n")
		}
	}
	path := filepath.Join(t.TempDir(), "endpoints.jsonl")
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) {
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append(args, "--address", stk.Server.FrontendAddress(), "--namespace", stk.Server.Namespace()))
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		err := root.ExecuteContext(ctx)
		return out.String(), errOut.String(), err
	}

	began := time.Now()
	out, progress, err := run("endpoint", "import", path, "--progress-interval", "1ms")
	t.Logf("import of %d lines: %s", n+3, time.Since(began))
	if err == nil || !strings.Contains(err.Error(), "2 of 303 lines failed") {
		t.Errorf("import with 2 bad lines: error %v, want one saying 2 of 303 lines failed\n%s", err, out)
	}
	for _, want := range []string{
		"line 12: not the JSON of an endpoint put",
		"line 35 (herald-ops): invalid input: endpoint id herald-ops is reserved",
		"line 23 (imp-nosecret): registered with a generated signing secret (shown once, keep it for the receiver): whsec_",
		"Registered 301, updated 0, unchanged 0, failed 2 of 303 lines in",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(progress, " of 303 lines (") {
		t.Errorf("no progress line on standard error:\n%s", progress)
	}

	out, _, err = run("endpoint", "import", path, "-o", "json")
	var sum importSummary
	if jerr := json.Unmarshal([]byte(out), &sum); jerr != nil {
		t.Fatalf("-o json: %v\n%s", jerr, out)
	}
	if err == nil || sum.Unchanged != 301 || sum.Created != 0 || sum.Updated != 0 || sum.Failed != 2 || len(sum.Errors) != 2 || sum.Errors[0].Line != 12 || len(sum.Secrets) != 0 {
		t.Errorf("the same file again: %v, %+v; want 301 unchanged and the same 2 failed lines", err, sum)
	}

	res, err := stk.Starter.Publish(ctx, "imported", starter.Event{Type: "import.last", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deliveries) != 1 || res.Deliveries[0].EndpointID != fmt.Sprintf("imp-%04d", n-1) {
		t.Errorf("send to the tenant right after the import reached %+v, want the file's last endpoint alone", res.Deliveries)
	}

	// Standard input, an empty one.
	root := newRootCmd()
	root.SetIn(strings.NewReader("\n\n"))
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"endpoint", "import", "-", "--address", stk.Server.FrontendAddress(), "--namespace", stk.Server.Namespace()})
	if err := root.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "holds no line") {
		t.Errorf("empty standard input: %v, want an error saying it holds no line", err)
	}
}

func TestEndpointImportUsage(t *testing.T) {
	offline(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"endpoint", "import"}, "takes 1 argument"},
		{[]string{"endpoint", "import", "x.jsonl", "--parallelism", "0"}, "--parallelism 0"},
		{[]string{"endpoint", "import", "does-not-exist.jsonl"}, "give a readable JSON Lines file"},
	} {
		_, err := runHerald(append(c.args, nowhere)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("herald %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

func TestCountLines(t *testing.T) {
	for in, want := range map[string]int{"": 0, "\n\n": 0, "a": 1, "a\n": 1, "a\n\n b \n": 2, " \r\n{}\r\n": 1, strings.Repeat("x", 200<<10) + "\ny": 2} {
		if got, err := countLines(strings.NewReader(in)); err != nil || got != want {
			t.Errorf("countLines(%.20q): %d, %v; want %d", in, got, err, want)
		}
	}
}

// TestProgress: on a terminal a bar redrawn in place, ended by finish; elsewhere a plain
// line at most every interval.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "lines", 200, time.Hour)
	p.tty = true
	p.last = time.Time{}
	p.set(50)
	p.finish()
	if out := b.String(); !strings.HasPrefix(out, "\r[=======") || !strings.Contains(out, "50/200 lines  25%") || !strings.Contains(out, "ETA") || !strings.HasSuffix(out, "\n") {
		t.Errorf("bar: %q", out)
	}
	b.Reset()
	p = newProgress(&b, "lines", 0, time.Hour)
	p.set(10) // within the interval: nothing
	p.last = time.Time{}
	p.set(20)
	p.finish()
	if out := b.String(); !strings.HasPrefix(out, "20 lines, ") || strings.Count(out, "\n") != 1 {
		t.Errorf("plain progress: %q", out)
	}
}
