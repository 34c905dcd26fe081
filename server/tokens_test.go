package server

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The token race test re-executes the test binary as several writer processes; these
// variables tell a child what to do (TestMain runs it instead of the tests).
const (
	tokenWriterEnv    = "HERALD_TEST_TOKEN_WRITER" // the tokens file
	tokenWriterCreate = "HERALD_TEST_TOKEN_CREATE" // how many tokens to create
	tokenWriterRevoke = "HERALD_TEST_TOKEN_REVOKE" // comma-separated ids to revoke
	tokenWriterAt     = "HERALD_TEST_TOKEN_AT"     // Unix nanoseconds to start at, so the children overlap
)

// runTokenWriter is the child's side: it creates and revokes tokens, interleaved, in a store
// of its own, printing "created ID TOKEN" and "revoked ID" for each success as the CLI would.
func runTokenWriter() int {
	s, err := OpenTokenStore(os.Getenv(tokenWriterEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n, _ := strconv.Atoi(os.Getenv(tokenWriterCreate))
	var revoke []string
	if v := os.Getenv(tokenWriterRevoke); v != "" {
		revoke = strings.Split(v, ",")
	}
	if at, err := strconv.ParseInt(os.Getenv(tokenWriterAt), 10, 64); err == nil {
		time.Sleep(time.Until(time.Unix(0, at)))
	}
	for i := 0; i < max(n, len(revoke)); i++ {
		if i < n {
			tok, t, err := s.Create(false, "acme", "race")
			if err != nil {
				fmt.Fprintln(os.Stderr, "create:", err)
				return 1
			}
			fmt.Printf("created %s %s\n", t.ID, tok)
		}
		if i < len(revoke) {
			if err := s.Revoke(revoke[i]); err != nil {
				fmt.Fprintln(os.Stderr, "revoke:", err)
				return 1
			}
			fmt.Printf("revoked %s\n", revoke[i])
		}
	}
	return 0
}

// TestTokenStoreConcurrentProcesses races creates and revokes from several processes on one
// tokens file: every token printed must authenticate and every revoked one must not, in a
// store opened afterwards and in one that was open all along (a running serve).
func TestTokenStoreConcurrentProcesses(t *testing.T) {
	const procs, createsEach, revokesEach = 6, 8, 3
	path := filepath.Join(t.TempDir(), "tokens.json")
	watching, err := OpenTokenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	toRevoke := map[string]string{} // id → token
	var ids []string
	for range procs * revokesEach {
		tok, tk, err := watching.Create(false, "acme", "to revoke")
		if err != nil {
			t.Fatal(err)
		}
		toRevoke[tk.ID] = tok
		ids = append(ids, tk.ID)
	}

	at := strconv.FormatInt(time.Now().Add(time.Second).UnixNano(), 10)
	var (
		mu      sync.Mutex
		created = map[string]string{} // id → token
		revoked = map[string]bool{}
		wg      sync.WaitGroup
	)
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), tokenWriterEnv+"="+path, tokenWriterCreate+"="+strconv.Itoa(createsEach),
				tokenWriterRevoke+"="+strings.Join(ids[p*revokesEach:(p+1)*revokesEach], ","), tokenWriterAt+"="+at)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("writer %d: %v\n%s", p, err, stderr.String())
			}
			sc := bufio.NewScanner(bytes.NewReader(out))
			mu.Lock()
			defer mu.Unlock()
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				switch {
				case len(f) == 3 && f[0] == "created":
					created[f[1]] = f[2]
				case len(f) == 2 && f[0] == "revoked":
					revoked[f[1]] = true
				default:
					t.Errorf("writer %d printed %q", p, sc.Text())
				}
			}
		}()
	}
	wg.Wait()
	if len(created) != procs*createsEach || len(revoked) != procs*revokesEach {
		t.Fatalf("writers printed %d creations and %d revocations, want %d and %d", len(created), len(revoked), procs*createsEach, procs*revokesEach)
	}

	fresh, err := OpenTokenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*TokenStore{"a store opened afterwards": fresh, "a store open all along": watching} {
		lost := 0
		for id, tok := range created {
			if got, ok := s.Lookup(tok); !ok || got.ID != id {
				lost++
			}
		}
		alive := 0
		for id := range revoked {
			if _, ok := s.Lookup(toRevoke[id]); ok {
				alive++
			}
			if _, ok := s.ByID(id); ok {
				alive++
			}
		}
		if lost > 0 || alive > 0 {
			t.Errorf("%s: %d of %d printed tokens do not authenticate; %d revoked tokens still authenticate (by token or id)",
				name, lost, len(created), alive)
		}
		if list, _ := s.List(); len(list) != len(created) {
			t.Errorf("%s lists %d tokens, want %d", name, len(list), len(created))
		}
	}
}
