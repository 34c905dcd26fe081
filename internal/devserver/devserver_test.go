package devserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald/internal/testkit/check"
)

const (
	statusAttr = "HeraldTestStatus"
	extraAttr  = "HeraldTestAttempts"
)

var (
	statusKey = temporal.NewSearchAttributeKeyKeyword(statusAttr)
	extraKey  = temporal.NewSearchAttributeKeyInt64(extraAttr)
)

// markDone upserts the status search attribute and returns a greeting.
func markDone(ctx workflow.Context, name string) (string, error) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, statusKey.ValueSet("done")); err != nil {
		return "", err
	}
	return "hello " + name, nil
}

// waitForGo returns the value of the first "go" signal, after setting the
// extra search attribute (registered only when the server restarts).
func waitForGo(ctx workflow.Context) (string, error) {
	var v string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	if err := workflow.UpsertTypedSearchAttributes(ctx, extraKey.ValueSet(3)); err != nil {
		return "", err
	}
	return v, nil
}

// startServer starts a server for t and stops it when t ends; it logs how long
// Start took.
func startServer(t *testing.T, o Options) *Server {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %v (db file %q)", time.Since(began).Round(time.Millisecond), o.DBFile)
	t.Cleanup(s.Stop)
	return s
}

// testWriter sends server logs to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func dial(t *testing.T, s *Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.FrontendAddress(),
		Namespace: s.Namespace(),
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		t.Fatalf("dial %s: %v", s.FrontendAddress(), err)
	}
	t.Cleanup(c.Close)
	return c
}

func runWorker(t *testing.T, c client.Client, queue string) worker.Worker {
	t.Helper()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(markDone)
	w.RegisterWorkflow(waitForGo)
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

// eventually retries check until it returns nil or the deadline passes.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func searchAttributes(t *testing.T, c client.Client, ns string) map[string]enums.IndexedValueType {
	t.Helper()
	resp, err := c.OperatorService().ListSearchAttributes(context.Background(),
		&operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatalf("list search attributes: %v", err)
	}
	return resp.GetCustomAttributes()
}

func TestStartInMemoryRunsWorkflowAndServesUI(t *testing.T) {
	t.Parallel()
	s := startServer(t, Options{
		SearchAttributes: map[string]enums.IndexedValueType{statusAttr: enums.INDEXED_VALUE_TYPE_KEYWORD},
	})
	if s.Namespace() != DefaultNamespace {
		t.Errorf("Namespace() = %q, want %q", s.Namespace(), DefaultNamespace)
	}
	c := dial(t, s)
	runWorker(t, c, "devserver-test")

	if got := searchAttributes(t, c, s.Namespace())[statusAttr]; got != enums.INDEXED_VALUE_TYPE_KEYWORD {
		t.Fatalf("search attribute %s has type %v, want KEYWORD", statusAttr, got)
	}

	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "wf-memory", TaskQueue: "devserver-test"}, markDone, "herald")
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	if got != "hello herald" {
		t.Fatalf("workflow result = %q, want %q", got, "hello herald")
	}

	query := fmt.Sprintf("%s = 'done'", statusAttr)
	eventually(t, "visibility query "+query, func() error {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: s.Namespace(), Query: query})
		if err != nil {
			return err
		}
		if n := len(resp.GetExecutions()); n != 1 || resp.GetExecutions()[0].GetExecution().GetWorkflowId() != "wf-memory" {
			return fmt.Errorf("got %d executions, want wf-memory alone", n)
		}
		return nil
	})

	// The UI serves its page and proxies the API to this frontend.
	if !strings.HasPrefix(s.UIAddress(), "http://127.0.0.1:") {
		t.Fatalf("UIAddress() = %q, want http://127.0.0.1:port", s.UIAddress())
	}
	status, ctype, body := get(t, s.UIAddress()+"/")
	if status != http.StatusOK || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(strings.ToLower(body), "<html") {
		t.Fatalf("GET UI: status %d, content type %q, body starts %.80q; want 200 HTML", status, ctype, body)
	}
	status, _, body = get(t, s.UIAddress()+"/api/v1/namespaces/"+s.Namespace())
	var described struct {
		NamespaceInfo struct{ Name string }
	}
	if err := json.Unmarshal([]byte(body), &described); status != http.StatusOK || err != nil || described.NamespaceInfo.Name != s.Namespace() {
		t.Fatalf("GET UI API namespace: status %d, body %.200q; want 200 describing %s", status, body, s.Namespace())
	}
}

func get(t *testing.T, url string) (status int, contentType, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, b := check.Do(t, nil, req)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func TestStartOnFileSurvivesRestart(t *testing.T) {
	t.Parallel()
	dbFile := filepath.Join(t.TempDir(), "nested", "dir", "herald.db")
	const queue = "devserver-restart"
	ctx := context.Background()

	first := startServer(t, Options{
		DBFile:           dbFile,
		UIPort:           -1,
		SearchAttributes: map[string]enums.IndexedValueType{statusAttr: enums.INDEXED_VALUE_TYPE_KEYWORD},
	})
	if first.UIAddress() != "" {
		t.Errorf("UIAddress() = %q with UIPort -1, want empty", first.UIAddress())
	}
	c1 := dial(t, first)
	w1 := runWorker(t, c1, queue)
	run, err := c1.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "wf-restart", TaskQueue: queue}, waitForGo)
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	// Let the worker take the first workflow task, so the workflow is
	// really waiting on the signal when the server goes down.
	eventually(t, "first workflow task completed", func() error {
		return historyHas(ctx, c1, run, enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
	})
	if _, err := os.Stat(dbFile + "-wal"); err != nil {
		t.Errorf("journal_mode=wal expected a write-ahead log beside the database: %v", err)
	}
	if s, err := Start(ctx, Options{DBFile: dbFile, UIPort: -1}); err == nil {
		s.Stop()
		t.Fatal("a second server started on a database file in use")
	} else if !strings.Contains(err.Error(), "in use by another running dev server") {
		t.Fatalf("second server on the same file: error %q, want it to say the file is in use", err)
	}
	w1.Stop()
	c1.Close()
	first.Stop()
	first.Stop() // safe twice

	second := startServer(t, Options{
		DBFile: dbFile,
		UIPort: -1,
		SearchAttributes: map[string]enums.IndexedValueType{
			statusAttr: enums.INDEXED_VALUE_TYPE_KEYWORD,
			extraAttr:  enums.INDEXED_VALUE_TYPE_INT,
		},
	})
	c2 := dial(t, second)
	// The tuned store: visibility in its companion file, the index of the Int field put
	// back once an attribute is mapped to it, unmapped fields without one.
	idx := visibilityIndexes(t, VisibilityFile(dbFile))
	if !idx["by_int_01"] || !idx["by_keyword_01"] || !idx["by_workflow_id"] || idx["by_bool_01"] || idx["by_keyword_02"] {
		t.Errorf("visibility indexes after restart = %v; want by_int_01, by_keyword_01 and by_workflow_id, not by_bool_01 or by_keyword_02", idx)
	}
	attrs := searchAttributes(t, c2, second.Namespace())
	if attrs[statusAttr] != enums.INDEXED_VALUE_TYPE_KEYWORD || attrs[extraAttr] != enums.INDEXED_VALUE_TYPE_INT {
		t.Fatalf("after restart search attributes = %v, want %s KEYWORD and %s INT", attrs, statusAttr, extraAttr)
	}

	desc, err := c2.DescribeWorkflowExecution(ctx, "wf-restart", run.GetRunID())
	if err != nil {
		t.Fatalf("describe workflow after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("workflow status after restart = %v, want RUNNING", st)
	}
	runWorker(t, c2, queue)
	if err := c2.SignalWorkflow(ctx, "wf-restart", run.GetRunID(), "go", "after restart"); err != nil {
		t.Fatalf("signal after restart: %v", err)
	}
	var got string
	if err := c2.GetWorkflow(ctx, "wf-restart", run.GetRunID()).Get(ctx, &got); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	if got != "after restart" {
		t.Fatalf("workflow result = %q, want %q", got, "after restart")
	}
	// The workflow set the attribute added at restart; a query finds it.
	query := extraAttr + " = 3"
	eventually(t, "visibility query "+query, func() error {
		resp, err := c2.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: second.Namespace(), Query: query})
		if err != nil {
			return err
		}
		if n := len(resp.GetExecutions()); n != 1 {
			return fmt.Errorf("got %d executions, want wf-restart alone", n)
		}
		return nil
	})
}

// visibilityIndexes lists the indexes of the visibility table in the SQLite file path.
func visibilityIndexes(t *testing.T, path string) map[string]bool {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL`)
	if err != nil {
		t.Fatalf("list visibility indexes of %s: %v", path, err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[n] = true
	}
	return out
}

// TestStockStorePutsIndexesBack starts a tuned file, then the same file with Stock: every
// dropped index comes back (58 in Temporal's SQLite schema), and the visibility records
// stay where they are.
func TestStockStorePutsIndexesBack(t *testing.T) {
	t.Parallel()
	dbFile := filepath.Join(t.TempDir(), "herald.db")
	tuned := startServer(t, Options{DBFile: dbFile, UIPort: -1, HTTPPort: -1})
	trimmed := len(visibilityIndexes(t, VisibilityFile(dbFile)))
	tuned.Stop()
	stock := startServer(t, Options{DBFile: dbFile, UIPort: -1, HTTPPort: -1, Stock: true})
	restored := len(visibilityIndexes(t, VisibilityFile(dbFile)))
	stock.Stop()
	if trimmed >= restored || restored != 58 {
		t.Fatalf("visibility indexes: %d tuned, %d stock; want fewer tuned and Temporal's 58 stock", trimmed, restored)
	}

	// A new stock file keeps visibility inside it, and a tuned start later keeps it there.
	legacy := filepath.Join(t.TempDir(), "legacy.db")
	startServer(t, Options{DBFile: legacy, UIPort: -1, HTTPPort: -1, Stock: true}).Stop()
	startServer(t, Options{DBFile: legacy, UIPort: -1, HTTPPort: -1}).Stop()
	if _, err := os.Stat(VisibilityFile(legacy)); !os.IsNotExist(err) {
		t.Fatalf("a file created stock gained a visibility file (stat: %v)", err)
	}
	if n := len(visibilityIndexes(t, legacy)); n >= 58 {
		t.Fatalf("tuned start on a stock file left %d visibility indexes; want the unused ones dropped", n)
	}
}

// TestStaleVisibilityFileRefused: a new database file beside the visibility file of an
// older one would list workflows that no longer exist.
func TestStaleVisibilityFileRefused(t *testing.T) {
	t.Parallel()
	dbFile := filepath.Join(t.TempDir(), "herald.db")
	startServer(t, Options{DBFile: dbFile, UIPort: -1, HTTPPort: -1}).Stop()
	for _, f := range []string{dbFile, dbFile + "-wal", dbFile + "-shm"} {
		_ = os.Remove(f)
	}
	s, err := Start(context.Background(), Options{DBFile: dbFile, UIPort: -1, HTTPPort: -1})
	if err == nil {
		s.Stop()
		t.Fatal("started on a new database file beside an old visibility file")
	}
	if !strings.Contains(err.Error(), "holds records of an older one") || !strings.Contains(err.Error(), "delete") {
		t.Fatalf("error %q; want it to name the stale visibility file and what to do", err)
	}
}

func historyHas(ctx context.Context, c client.Client, run client.WorkflowRun, want enums.EventType) error {
	it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		if ev.GetEventType() == want {
			return nil
		}
	}
	return fmt.Errorf("no %v event yet", want)
}

func TestTwoServersHaveSeparateDatabases(t *testing.T) {
	t.Parallel()
	a := startServer(t, Options{UIPort: -1, Namespace: "herald-a"})
	b := startServer(t, Options{UIPort: -1, Namespace: "herald-a"})
	if a.FrontendAddress() == b.FrontendAddress() {
		t.Fatalf("both servers on %s", a.FrontendAddress())
	}
	ca, cb := dial(t, a), dial(t, b)
	ctx := context.Background()
	run, err := ca.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "only-in-a", TaskQueue: "nobody"}, "NoSuchWorkflow")
	if err != nil {
		t.Fatalf("start on a: %v", err)
	}
	if _, err := ca.DescribeWorkflowExecution(ctx, "only-in-a", run.GetRunID()); err != nil {
		t.Fatalf("describe on a: %v", err)
	}
	_, err = cb.DescribeWorkflowExecution(ctx, "only-in-a", "")
	var notFound *serviceerror.NotFound
	if !errors.As(err, &notFound) {
		t.Fatalf("describe on b = %v, want NotFound (servers share a database?)", err)
	}
}

func TestStartRefusesTakenPort(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port

	for _, tc := range []struct {
		name string
		o    Options
		what string
	}{
		{"frontend", Options{FrontendPort: taken, UIPort: -1}, "frontend port"},
		{"ui", Options{UIPort: taken}, "UI port"},
		{"http", Options{HTTPPort: taken, UIPort: -1}, "HTTP API port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(context.Background(), tc.o)
			if err == nil {
				s.Stop()
				t.Fatal("Start succeeded on a taken port")
			}
			if !errors.Is(err, ErrPortInUse) {
				t.Errorf("error %v does not wrap ErrPortInUse", err)
			}
			for _, want := range []string{tc.what, fmt.Sprint(taken), "choose another"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"ip", Options{IP: "localhost"}, "not an IP address"},
		{"frontend port", Options{FrontendPort: 70000}, "frontend port 70000 is out of range"},
		{"ui port", Options{UIPort: -2}, "UI port -2 is out of range"},
		{"same ports", Options{FrontendPort: 7233, UIPort: 7233}, "ports must differ"},
		{"http port", Options{HTTPPort: -3}, "HTTP API port -3 is out of range"},
		{"reserved attribute", Options{SearchAttributes: map[string]enums.IndexedValueType{"WorkflowId": enums.INDEXED_VALUE_TYPE_KEYWORD}}, "reserved"},
		{"untyped attribute", Options{SearchAttributes: map[string]enums.IndexedValueType{"X": enums.INDEXED_VALUE_TYPE_UNSPECIFIED}}, "invalid type"},
		{"pragma is a parameter", Options{UIPort: -1, SQLitePragmas: map[string]string{"Mode": "ro"}}, `"mode" is a connection parameter`},
		{"db file is a directory", Options{UIPort: -1, DBFile: t.TempDir()}, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(context.Background(), tc.o)
			if err == nil {
				s.Stop()
				t.Fatalf("Start succeeded, want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestAddSearchAttributeAliases(t *testing.T) {
	keyword, integer := enums.INDEXED_VALUE_TYPE_KEYWORD, enums.INDEXED_VALUE_TYPE_INT
	tooMany := map[string]enums.IndexedValueType{}
	for i := range 4 { // the SQLite store has 3 Bool fields
		tooMany[fmt.Sprintf("Flag%02d", i)] = enums.INDEXED_VALUE_TYPE_BOOL
	}
	for _, tc := range []struct {
		name        string
		aliases     map[string]string
		attrs       map[string]enums.IndexedValueType
		want        map[string]string
		wantChanged bool
		wantErr     string
	}{
		{
			name:        "new",
			attrs:       map[string]enums.IndexedValueType{"B": keyword, "A": keyword, "N": integer},
			want:        map[string]string{"Keyword01": "A", "Keyword02": "B", "Int01": "N"},
			wantChanged: true,
		},
		{
			name:    "already there",
			aliases: map[string]string{"Keyword01": "A"},
			attrs:   map[string]enums.IndexedValueType{"A": keyword},
			want:    map[string]string{"Keyword01": "A"},
		},
		{
			name:        "one added beside others",
			aliases:     map[string]string{"Keyword01": "A", "Keyword02": "Other"},
			attrs:       map[string]enums.IndexedValueType{"A": keyword, "C": keyword},
			want:        map[string]string{"Keyword01": "A", "Keyword02": "Other", "Keyword03": "C"},
			wantChanged: true,
		},
		{
			name:    "type changed",
			aliases: map[string]string{"Keyword01": "A"},
			attrs:   map[string]enums.IndexedValueType{"A": integer},
			wantErr: `"A" is registered as Keyword, not Int`,
		},
		{
			name:    "no free field",
			attrs:   tooMany,
			wantErr: "no free Bool field",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := addSearchAttributeAliases(tc.aliases, tc.attrs)
			if check.Err(t, "addSearchAttributeAliases", err, tc.wantErr) {
				return
			}
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("aliases = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFreePortCanBeBound(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for range 5 {
		port, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Fatalf("FreePort returned %d twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("listen on free port %d: %v", port, err)
		}
		l.Close()
	}
}
