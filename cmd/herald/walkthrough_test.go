package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testkit"
)

// TestREADMEWalkthrough runs the README's walkthrough, the shell blocks between the
// <!-- walkthrough ... --> and <!-- /walkthrough --> markers, so README and CLI cannot
// drift. It builds the binary once, starts `herald dev` on free ports in a temporary
// directory and runs each `./herald` line there, with --address of that dev server.
//
// In a block, a line starting `./herald` is a command (a trailing "  # ..." is a remark,
// not output), and the lines after it starting with "#" are its output as shown ("# "
// removed; a lone "#" is an empty line). A command's output must have as many lines as
// shown, and each must match. `go build` and `./herald dev` are not run (the test has
// built and started its own); `./herald receive` runs in the background, stopping the
// receiver before it, as the README asks the reader to do; any other line fails the test.
//
// Both sides are normalised before comparing: a date and time (2026-11-30 12:00:00) or a
// time (12:00:00, 12:00:00.000) reads <time>; a duration with a unit (3ms, 5s, 1.5s)
// reads <dur>; runs of spaces read one space. In the actual output, the receiver's free
// port reads 9000 and the " --address 127.0.0.1:PORT" the CLI adds to its hints (the dev
// server is not on the default port) is removed. In the shown output, evt_01a2... stands
// for an event id, whsec_... for a signing secret and any other word ending in ... for
// the rest of that word. In the commands, evt_01a2... and EVENT_ID are the id of the last
// event sent, whsec_... the last secret printed and 127.0.0.1:9000 the receiver's port.
//
// The commands that only read (status, dlq list) are run again until their output
// matches, for at most 30 s each: a delivery's state moves on its own (its retries, its
// replay), and the walkthrough shows where it gets to.
func TestREADMEWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs herald dev")
	}
	steps := walkthroughSteps(t, "../../README.md")
	dir := t.TempDir()
	bin := filepath.Join(dir, "herald")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	port, httpPort, rcvPort := freePort(t), freePort(t), freePort(t)
	address := "127.0.0.1:" + port
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TEMPORAL_") || strings.HasPrefix(kv, "HERALD_")
	})
	start := func(args ...string) (*exec.Cmd, *testkit.Buffer) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		out := &testkit.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, out
	}
	stop := func(cmd *exec.Cmd) {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	waitFor := func(out *testkit.Buffer, line string) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(out.String(), line); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in:\n%s", line, out)
			}
		}
	}
	dev, devOut := start("dev", "--port", port, "--ui-port", "-1", "--http-port", httpPort, "--db-file", filepath.Join(dir, "temporal.db"))
	defer stop(dev)
	waitFor(devOut, "Ctrl-C stops everything.")

	var receiver *exec.Cmd
	defer func() {
		if receiver != nil {
			stop(receiver)
		}
	}()
	vars := map[string]string{"127.0.0.1:9000": "127.0.0.1:" + rcvPort}
	for _, st := range steps {
		args := st.args
		for i, a := range args {
			for k, v := range vars {
				a = strings.ReplaceAll(a, k, v)
			}
			args[i] = a
		}
		switch {
		case args[0] == "go" && args[1] == "build", args[0] == "./herald" && args[1] == "dev":
			continue
		case args[0] != "./herald":
			t.Fatalf("README line %d: %q is neither ./herald nor go build; the walkthrough test cannot run it", st.line, st.text)
		case args[1] == "receive":
			if receiver != nil {
				stop(receiver)
			}
			var out *testkit.Buffer
			receiver, out = start(args[1:]...)
			waitFor(out, "Receiving on")
			continue
		}
		readOnly := args[1] == "status" || args[1] == "dlq"
		deadline := time.Now().Add(30 * time.Second)
		for {
			cmd := exec.Command(bin, append(args[1:], "--address", address)...)
			cmd.Dir, cmd.Env = dir, env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("README line %d: %s: %v\n%s%s", st.line, st.text, err, raw, stderr.String())
			}
			got := strings.ReplaceAll(string(raw), " --address "+address, "")
			got = strings.ReplaceAll(got, "127.0.0.1:"+rcvPort, "127.0.0.1:9000")
			diff := compareShown(st.shown, got)
			if diff == "" {
				if m := regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`).FindString(string(raw)); m != "" {
					vars["whsec_..."] = m
				}
				if m := regexp.MustCompile(`^Sent (evt_[0-9A-Za-z]+)`).FindStringSubmatch(string(raw)); m != nil {
					vars["evt_01a2..."], vars["EVENT_ID"] = m[1], m[1]
				}
				break
			}
			if !readOnly || time.Now().After(deadline) {
				t.Fatalf("README line %d: %s\n%s\nits whole output:\n%s", st.line, st.text, diff, raw)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// walkStep is one command line of the walkthrough and the output the README shows for it.
type walkStep struct {
	line  int
	text  string
	args  []string
	shown []string
}

// walkthroughSteps reads the commands and shown outputs of the README's walkthrough.
func walkthroughSteps(t *testing.T, path string) []walkStep {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var steps []walkStep
	in, block := false, false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "<!-- walkthrough"):
			in = true
		case strings.HasPrefix(line, "<!-- /walkthrough"):
			in = false
		case !in:
		case strings.HasPrefix(line, "```"):
			block = !block && line == "```sh"
		case !block || strings.TrimSpace(line) == "":
		case line == "#" || strings.HasPrefix(line, "# "):
			if len(steps) == 0 {
				t.Fatalf("README line %d: output shown before any command", n)
			}
			s := &steps[len(steps)-1]
			s.shown = append(s.shown, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
		default:
			cmd := line
			if i := strings.Index(cmd, "  #"); i >= 0 {
				cmd = cmd[:i]
			}
			args, err := shellWords(cmd)
			if err != nil || len(args) < 2 {
				t.Fatalf("README line %d: %q: cannot split it into words (%v)", n, line, err)
			}
			steps = append(steps, walkStep{line: n, text: strings.TrimSpace(cmd), args: args})
		}
	}
	if len(steps) < 5 {
		t.Fatalf("found %d walkthrough commands in %s; are the <!-- walkthrough --> markers there?", len(steps), path)
	}
	return steps
}

// shellWords splits a command line as sh would for the plain words, 'single' and
// "double" quotes the walkthrough uses.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated %c", c)
			}
			w.WriteString(s[i+1 : i+1+j])
			i, inWord = i+1+j, true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

var (
	walkDateTime = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	walkClock    = regexp.MustCompile(`\b\d\d:\d\d:\d\d(\.\d+)?\b`)
	walkDuration = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m|h)\b`)
	walkSpaces   = regexp.MustCompile(`\s+`)
)

// walkNormal is a line with its times, durations and runs of spaces normalised.
func walkNormal(s string) string {
	s = walkDateTime.ReplaceAllString(s, "<time>")
	s = walkClock.ReplaceAllString(s, "<time>")
	s = walkDuration.ReplaceAllString(s, "<dur>")
	return strings.TrimSpace(walkSpaces.ReplaceAllString(s, " "))
}

// compareShown says how got differs from the output shown, or "" when it matches.
func compareShown(shown []string, got string) string {
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if got == "" {
		lines = nil
	}
	if len(lines) != len(shown) {
		return fmt.Sprintf("printed %d lines, the README shows %d:\n%s", len(lines), len(shown), strings.Join(shown, "\n"))
	}
	for i, want := range shown {
		pattern := regexp.QuoteMeta(walkNormal(want))
		pattern = strings.ReplaceAll(pattern, `evt_01a2\.\.\.`, `evt_[0-9A-Za-z]+`)
		pattern = strings.ReplaceAll(pattern, `whsec_\.\.\.`, `whsec_\S+`)
		pattern = strings.ReplaceAll(pattern, `\.\.\.`, `\S+`)
		if !regexp.MustCompile("^" + pattern + "$").MatchString(walkNormal(lines[i])) {
			return fmt.Sprintf("line %d differs:\n  README  %s\n  printed %s", i+1, want, lines[i])
		}
	}
	return ""
}

// freePort is a loopback TCP port free when asked.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
