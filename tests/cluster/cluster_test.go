// Package cluster is Herald's cluster rehearsal: the production path, end to end. It starts
// PostgreSQL, creates Temporal's schema and Herald's namespace with the scripts that
// docker-compose.yml uses (setup-schema.sh, tune-visibility.sh, tune-history.sh, setup-namespace.sh), runs
// the Temporal server as one process per service (frontend, history, matching, worker) on
// PostgreSQL persistence and SQL visibility, then three
// `herald worker` processes and one `herald serve`, as the README tells an operator, and
// drives them through the CLI and the HTTP API.
//
// It needs PostgreSQL's server programs (initdb, postgres; Debian: apt-get install
// postgresql). Without them the tests skip, except on CI (CI=true), where they fail.
// The cluster's directory (every process's log) is removed after a passing run unless
// HERALD_CLUSTER_KEEP is set.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cl is the package's cluster, started once by TestMain; nil when skipped.
var cl *cluster

// skipReason is why the tests skip (no PostgreSQL, or -short).
var skipReason string

// workers is how many `herald worker` processes the cluster runs.
const workers = 3

func TestMain(m *testing.M) {
	if spec := os.Getenv(floorProcessEnv); spec != "" {
		os.Exit(floorMain(spec)) // BenchmarkCost's floor process, not the tests
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		skipReason = "-short (it starts PostgreSQL and a Temporal cluster)"
		return m.Run()
	}
	pgBin, err := findPostgres()
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "cluster rehearsal: CI=true and", err)
			return 1
		}
		skipReason = err.Error()
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "herald-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c := &cluster{dir: dir, pgBin: pgBin}
	start := time.Now()
	if err := c.start(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster rehearsal: start:", err)
		c.dumpLogs(os.Stderr)
		c.stop()
		return 1
	}
	fmt.Fprintf(os.Stderr, "cluster rehearsal: cluster up in %s (dir %s)\n", time.Since(start).Round(time.Second), dir)
	cl = c
	code := m.Run()
	if code != 0 {
		c.dumpLogs(os.Stderr)
	}
	c.stop()
	if code == 0 && os.Getenv("HERALD_CLUSTER_KEEP") == "" {
		os.RemoveAll(dir)
	}
	return code
}

// need skips t when the cluster is not running, saying how to run it.
func need(t *testing.T) *cluster {
	t.Helper()
	if cl == nil && testing.Short() {
		t.Skipf("cluster rehearsal skipped: %s", skipReason)
	}
	if cl == nil {
		t.Skipf("cluster rehearsal skipped: %s. Install PostgreSQL's server (Debian: apt-get install postgresql; "+
			"or put a directory with initdb and postgres in HERALD_PG_BIN), then go test ./tests/cluster", skipReason)
	}
	return cl
}

// findPostgres finds the directory holding initdb and postgres: HERALD_PG_BIN, PATH, or
// Debian's /usr/lib/postgresql/VERSION/bin (newest first).
func findPostgres() (string, error) {
	has := func(dir string) bool {
		for _, p := range []string{"initdb", "postgres", "pg_ctl"} {
			if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("HERALD_PG_BIN"); d != "" {
		if has(d) {
			return d, nil
		}
		return "", fmt.Errorf("HERALD_PG_BIN=%s has no initdb, postgres and pg_ctl", d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestV := "", -1
	for _, d := range dirs {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err == nil && v > bestV && has(d) {
			best, bestV = d, v
		}
	}
	if best == "" {
		return "", errors.New("PostgreSQL's server programs (initdb, postgres) were not found")
	}
	return best, nil
}

// cluster is PostgreSQL, the Temporal services and Herald's processes, each a child process
// logging to a file in dir.
type cluster struct {
	dir, pgBin string
	bin        string // herald, temporal-server, temporal-sql-tool
	root       string // the module root
	pgPort     int
	pgUser     *runAs // nil: PostgreSQL runs as this process's user
	ports      map[string]int
	namespace  string
	address    string // the frontend's host:port
	keyFile    string
	tokens     string
	token      string
	api        string // herald serve's base URL

	mu         sync.Mutex
	procs      map[string]*exec.Cmd
	exited     map[string]chan struct{}
	workers    []string
	serves     []string       // the `herald serve` processes, by name
	servePorts map[string]int // each serve's port
}

// runAs is the unprivileged user PostgreSQL runs as when the tests run as root.
type runAs struct {
	name     string
	uid, gid int
}

const pgPassword = "temporal-test"

func (c *cluster) start() error {
	c.procs, c.exited = map[string]*exec.Cmd{}, map[string]chan struct{}{}
	c.namespace = "herald-cluster"
	var err error
	if c.root, err = moduleRoot(); err != nil {
		return err
	}
	began := time.Now()
	step := func(what string) {
		fmt.Fprintf(os.Stderr, "cluster rehearsal: %s (%s)\n", what, time.Since(began).Round(100*time.Millisecond))
	}
	if err := c.build(); err != nil {
		return err
	}
	step("built herald, temporal-server, temporal-sql-tool")
	if err := c.startPostgres(); err != nil {
		return fmt.Errorf("postgresql: %w", err)
	}
	step(fmt.Sprintf("postgresql on 127.0.0.1:%d", c.pgPort))
	if err := c.script("setup-schema", "setup-schema.sh", c.sqlEnv()); err != nil {
		return err
	}
	step("schema set up by setup-schema.sh")
	if err := c.tuneVisibility(false, ""); err != nil {
		return err
	}
	step("visibility indexes trimmed by tune-visibility.sh")
	if err := c.tuneHistory(false); err != nil {
		return err
	}
	step("history batches kept in their table up to 8 KB by tune-history.sh")
	if err := c.writeTemporalConfig(); err != nil {
		return err
	}
	// The first service to start writes the cluster's metadata; the others read it.
	if err := c.startTemporal("history"); err != nil {
		return err
	}
	if err := waitFor("cluster metadata", time.Minute, func() error {
		n, err := c.psql("temporal", "SELECT count(*) FROM cluster_metadata_info")
		if err == nil && n == "0" {
			err = errors.New("not written yet")
		}
		return err
	}); err != nil {
		return err
	}
	for _, svc := range []string{"matching", "frontend", "worker"} {
		if err := c.startTemporal(svc); err != nil {
			return err
		}
	}
	if err := c.script("setup-namespace", "setup-namespace.sh", []string{
		"TEMPORAL_ADDRESS=" + c.address, "TEMPORAL_NAMESPACE=" + c.namespace, "NAMESPACE_RETENTION=24h",
		"HERALD=" + filepath.Join(c.bin, "herald"),
	}); err != nil {
		return err
	}
	step("temporal services up, namespace set up by setup-namespace.sh")
	err = c.startHerald()
	step("herald workers and herald serve up")
	return err
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// build builds herald and, from the Temporal server module go.mod pins (its tool
// directives), temporal-server and temporal-sql-tool, once per package run.
func (c *cluster) build() error {
	c.bin = filepath.Join(c.dir, "bin")
	for name, pkg := range map[string]string{
		"herald":            "./cmd/herald",
		"temporal-server":   "go.temporal.io/server/cmd/server",
		"temporal-sql-tool": "go.temporal.io/server/cmd/tools/sql",
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(c.bin, name), pkg)
		cmd.Dir = c.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return os.Chmod(c.bin, 0o755)
}

// freePort returns a loopback TCP port nothing listens on now, below 32768: Temporal
// stores its services' membership ports as a PostgreSQL smallint.
func freePort() (int, error) {
	for range 200 {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return port, nil
	}
	return 0, errors.New("no free port between 20000 and 32000")
}

// startPostgres initdbs a cluster in dir/pg and starts it on a free port. As root, it runs
// as the user nobody (setpriv), since PostgreSQL refuses to run as root.
func (c *cluster) startPostgres() error {
	data := c.pgData()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return fmt.Errorf("running as root, PostgreSQL needs an unprivileged user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.pgUser = &runAs{name: u.Username, uid: uid, gid: gid}
		if err := os.Chmod(c.dir, 0o755); err != nil {
			return err
		}
	}
	if err := os.Mkdir(data, 0o700); err != nil {
		return err
	}
	pw := filepath.Join(c.dir, "pgpass")
	if err := os.WriteFile(pw, []byte(pgPassword+"\n"), 0o644); err != nil {
		return err
	}
	if c.pgUser != nil {
		if err := os.Chown(data, c.pgUser.uid, c.pgUser.gid); err != nil {
			return err
		}
	}
	init := c.pgCommand("initdb", "-D", data, "-U", "temporal", "--pwfile", pw,
		"--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C")
	if out, err := init.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	var err error
	if c.pgPort, err = freePort(); err != nil {
		return err
	}
	return c.startPostmaster()
}

// pgData is PostgreSQL's data directory.
func (c *cluster) pgData() string { return filepath.Join(c.dir, "pg") }

// startPostmaster starts PostgreSQL on the initdb'd data directory and c.pgPort and waits
// until it accepts connections: at the start, and again after the chaos run stopped it.
func (c *cluster) startPostmaster() error {
	if err := c.spawn("postgresql", c.postmasterCommand()); err != nil {
		return err
	}
	return waitFor("postgresql", 60*time.Second, c.pgReady)
}

// postmasterCommand is the command that runs PostgreSQL's server.
func (c *cluster) postmasterCommand() *exec.Cmd {
	data := c.pgData()
	return c.pgCommand("postgres", "-D", data, "-p", strconv.Itoa(c.pgPort),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+data,
		"-c", "max_connections=300")
}

// pgReady is nil once PostgreSQL accepts connections.
func (c *cluster) pgReady() error {
	out, err := exec.Command(filepath.Join(c.pgBin, "pg_isready"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.pgPort)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// pgCommand is PostgreSQL's program name with args, as the PostgreSQL user.
func (c *cluster) pgCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.pgBin, name), args...)
	if c.pgUser != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(c.pgUser.uid), Gid: uint32(c.pgUser.gid)}}
	}
	cmd.Dir = c.dir
	return cmd
}

// psql runs one SQL statement in database db and returns its unaligned output.
func (c *cluster) psql(db, sql string) (string, error) {
	cmd := exec.Command(filepath.Join(c.pgBin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.pgPort),
		"-U", "temporal", "-d", db, "-At", "-c", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+pgPassword)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql %q: %v: %s", sql, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// script runs deploy/temporal/scripts/NAME with args, env and the built tools first on PATH.
func (c *cluster) script(what, name string, env []string, args ...string) error {
	cmd := exec.Command("sh", append([]string{filepath.Join(c.root, "deploy", "temporal", "scripts", name)}, args...)...)
	cmd.Env = append([]string{"PATH=" + c.bin + ":" + c.pgBin + ":/usr/bin:/bin"}, env...)
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	os.WriteFile(filepath.Join(c.dir, what+".log"), out, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	return nil
}

// sqlEnv is the connection the deploy/temporal/scripts that talk to PostgreSQL take.
func (c *cluster) sqlEnv() []string {
	return []string{"SQL_HOST=127.0.0.1", "SQL_PORT=" + strconv.Itoa(c.pgPort), "SQL_USER=temporal", "SQL_PASSWORD=" + pgPassword}
}

// tuneVisibility runs tune-visibility.sh as production does after setup-schema.sh, or with
// restore its --restore mode (the stock indexes). keepCustom is its TUNE_KEEP_CUSTOM (empty:
// every custom field keeps its index).
func (c *cluster) tuneVisibility(restore bool, keepCustom string) error {
	env := c.sqlEnv()
	if keepCustom != "" {
		env = append(env, "TUNE_KEEP_CUSTOM="+keepCustom)
	}
	if restore {
		return c.script("tune-visibility", "tune-visibility.sh", env, "--restore")
	}
	return c.script("tune-visibility", "tune-visibility.sh", env)
}

// tuneHistory runs tune-history.sh as production does after setup-schema.sh, or with
// restore its --restore mode (PostgreSQL's default storage of history_node).
func (c *cluster) tuneHistory(restore bool) error {
	env := c.sqlEnv()
	if restore {
		return c.script("tune-history", "tune-history.sh", env, "--restore")
	}
	return c.script("tune-history", "tune-history.sh", env)
}

// dynamicConfig is the file the Temporal services read their dynamic config from: a copy
// of deploy/temporal/dynamicconfig/production.yaml, so that a benchmark can add to it.
func (c *cluster) dynamicConfig() string { return filepath.Join(c.dir, "dynamicconfig.yaml") }

// writeDynamicConfig writes production.yaml followed by extra to dynamicConfig.
func (c *cluster) writeDynamicConfig(extra string) error {
	b, err := os.ReadFile(filepath.Join(c.root, "deploy", "temporal", "dynamicconfig", "production.yaml"))
	if err != nil {
		return err
	}
	return os.WriteFile(c.dynamicConfig(), append(b, "\n"+extra...), 0o644)
}

// writeTemporalConfig writes the server's config: PostgreSQL persistence and SQL
// visibility, 4 history shards, free ports for each service, the dynamic config in deploy/
// (a copy: see dynamicConfig).
func (c *cluster) writeTemporalConfig() error {
	c.ports = map[string]int{}
	for _, k := range []string{"frontend", "frontend-m", "frontend-http", "history", "history-m", "matching", "matching-m", "worker", "worker-m"} {
		p, err := freePort()
		if err != nil {
			return err
		}
		c.ports[k] = p
	}
	c.address = "127.0.0.1:" + strconv.Itoa(c.ports["frontend"])
	if err := c.writeDynamicConfig(""); err != nil {
		return err
	}
	store := func(db string, conns int) string {
		return fmt.Sprintf(`      sql:
        pluginName: postgres12
        databaseName: %s
        connectAddr: "127.0.0.1:%d"
        connectProtocol: tcp
        user: temporal
        password: %q
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: 1h
`, db, c.pgPort, pgPassword, conns, conns)
	}
	svc := func(name string) string {
		s := fmt.Sprintf("  %s:\n    rpc:\n      grpcPort: %d\n      membershipPort: %d\n      bindOnLocalHost: true\n",
			name, c.ports[name], c.ports[name+"-m"])
		if name == "frontend" {
			s += fmt.Sprintf("      httpPort: %d\n", c.ports["frontend-http"])
		}
		return s
	}
	cfg := `log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
    postgres-default:
` + store("temporal", 20) + `    postgres-visibility:
` + store("temporal_visibility", 10) + `global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
services:
` + svc("frontend") + svc("history") + svc("matching") + svc("worker") + `clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "` + c.address + `"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: "` + c.dynamicConfig() + `"
  pollInterval: 10s
`
	return os.WriteFile(filepath.Join(c.dir, "temporal.yaml"), []byte(cfg), 0o644)
}

// startTemporal starts one Temporal service as its own process.
func (c *cluster) startTemporal(svc string) error {
	cmd := exec.Command(filepath.Join(c.bin, "temporal-server"), "--config-file", filepath.Join(c.dir, "temporal.yaml"),
		"--allow-no-auth", "start", "--service", svc)
	cmd.Dir = c.dir
	return c.spawn("temporal-"+svc, cmd)
}

// startHerald makes a payload key and an operator token, then starts the workers and
// herald serve with the environment the README gives an operator.
func (c *cluster) startHerald() error {
	c.keyFile = filepath.Join(c.dir, "codec.key")
	if _, err := c.herald("keygen", c.keyFile); err != nil {
		return err
	}
	c.tokens = filepath.Join(c.dir, "tokens.json")
	out, err := c.herald("token", "create", "--operator", "--note", "cluster rehearsal", "-o", "json")
	if err != nil {
		return err
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(out), &tok); err != nil || tok.Token == "" {
		return fmt.Errorf("herald token create: no token in %q (%v)", out, err)
	}
	c.token = tok.Token
	for i := 1; i <= workers; i++ {
		if err := c.startWorker(fmt.Sprintf("herald-worker-%d", i)); err != nil {
			return err
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := c.startServe("herald-serve", port); err != nil {
		return err
	}
	c.api = "http://127.0.0.1:" + strconv.Itoa(port)
	return waitFor("herald serve", time.Minute, func() error {
		_, err := c.call("GET", "/v1/endpoints", nil, nil)
		return err
	})
}

// startServe starts `herald serve` as process name on port (the same port when it is
// started again).
func (c *cluster) startServe(name string, port int) error {
	serve := exec.Command(filepath.Join(c.bin, "herald"), "serve", "--listen", "127.0.0.1:"+strconv.Itoa(port))
	serve.Env = c.env()
	if err := c.spawn(name, serve); err != nil {
		return err
	}
	c.mu.Lock()
	if c.servePorts == nil {
		c.servePorts = map[string]int{}
	}
	if _, ok := c.servePorts[name]; !ok {
		c.serves = append(c.serves, name)
	}
	c.servePorts[name] = port
	c.mu.Unlock()
	return nil
}

// env is the environment of Herald's processes: the README's variables.
func (c *cluster) env() []string {
	return append(os.Environ(), "TEMPORAL_ADDRESS="+c.address, "TEMPORAL_NAMESPACE="+c.namespace,
		"HERALD_CODEC_KEY_FILE="+c.keyFile, "HERALD_TOKENS_FILE="+c.tokens, "HERALD_ALLOW_CIDRS=127.0.0.0/8")
}

// startWorker starts `herald worker` as process name.
func (c *cluster) startWorker(name string) error {
	w := exec.Command(filepath.Join(c.bin, "herald"), "worker")
	w.Env = c.env()
	if err := c.spawn(name, w); err != nil {
		return err
	}
	c.mu.Lock()
	if !containsName(c.workers, name) {
		c.workers = append(c.workers, name)
	}
	c.mu.Unlock()
	return nil
}

// herald runs the herald CLI with args against the cluster and returns its standard output.
func (c *cluster) herald(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.bin, "herald"), args...)
	cmd.Env = c.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("herald %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// call makes an API request with the operator token, decoding a JSON answer into out.
func (c *cluster) call(method, path string, body, out any) (int, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.api+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode %s: %w", method, path, b, err)
		}
	}
	return resp.StatusCode, nil
}

// spawn starts cmd as process name, its output to dir/NAME.log.
func (c *cluster) spawn(name string, cmd *exec.Cmd) error {
	if c.running(name) {
		// A second copy would fail to bind, or worse, leave the first one out of reach of
		// every later kill.
		return fmt.Errorf("start %s: it is already running", name)
	}
	f, err := os.OpenFile(filepath.Join(c.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL // no orphans if the test binary dies
	// Pdeathsig fires when the thread that started the child exits: keep this one.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		f.Close()
		close(done)
	}()
	c.mu.Lock()
	c.procs[name], c.exited[name] = cmd, done
	c.mu.Unlock()
	return nil
}

// kill stops process name with sig and waits until it has exited.
func (c *cluster) kill(name string, sig syscall.Signal) error {
	c.mu.Lock()
	cmd, done := c.procs[name], c.exited[name]
	c.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("no process %s", name)
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not exit within a minute of %v: killed", name, sig)
	}
}

// stop ends every process: Herald's first, PostgreSQL last.
func (c *cluster) stop() {
	c.mu.Lock()
	order := append([]string{}, c.serves...)
	order = append(order, c.workers...)
	c.mu.Unlock()
	order = append(order, "temporal-frontend", "temporal-worker", "temporal-matching", "temporal-history", "postgresql")
	for _, name := range order {
		c.mu.Lock()
		cmd := c.procs[name]
		c.mu.Unlock()
		if cmd != nil && cmd.ProcessState == nil {
			c.kill(name, syscall.SIGTERM)
		}
	}
}

// dumpLogs writes the tail of every log to w, to see why a start or a test failed.
func (c *cluster) dumpLogs(w io.Writer) {
	logs, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		fmt.Fprintf(w, "---- %s (tail)\n%s\n", filepath.Base(l), b)
	}
}

// awaitListening waits, up to limit, until addr accepts TCP connections.
func awaitListening(what, addr string, limit time.Duration) error {
	return waitFor(what, limit, func() error {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	})
}

// waitFor polls f until it succeeds or limit passes.
func waitFor(what string, limit time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %w", what, limit, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
