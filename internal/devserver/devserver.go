// Package devserver runs a real Temporal server (SQLite persistence) and the
// Temporal Web UI inside the current process, for `herald dev` and for tests.
// Nothing is downloaded at run time and no container is needed.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Defaults applied by Start to zero-valued Options fields.
const (
	DefaultIP        = "127.0.0.1"
	DefaultNamespace = "default"
)

// startTimeout bounds Start when ctx has no deadline.
const startTimeout = 2 * time.Minute

// Options configures Start. Zero values pick sensible defaults.
type Options struct {
	// IP is the address the frontend and the UI bind to; default "127.0.0.1".
	IP string
	// FrontendPort is the gRPC frontend port; 0 picks a free port.
	FrontendPort int
	// UIPort is the Web UI port; 0 picks a free port, -1 runs no UI.
	UIPort int
	// HTTPPort is the frontend's HTTP API port (also Nexus); 0 picks a free
	// port, -1 runs no HTTP API.
	HTTPPort int
	// DBFile is the SQLite database file; "" keeps everything in memory, in a
	// database of its own for each Start. The file's parent directory is
	// created if missing; a new file gets the schema, an existing one is
	// opened as is and its workflows carry on.
	DBFile string
	// Namespace is registered before the server starts (also on an existing
	// DBFile); default "default".
	Namespace string
	// SearchAttributes are custom search attributes of Namespace, registered
	// before the server starts. Attributes missing from an existing DBFile are
	// added; an attribute registered with another type is an error.
	SearchAttributes map[string]enums.IndexedValueType
	// CodecEndpoint is an optional remote codec endpoint the UI uses to
	// decode payloads.
	CodecEndpoint string
	// SQLitePragmas override or extend the default pragmas
	// journal_mode=wal, synchronous=normal and busy_timeout=10000.
	SQLitePragmas map[string]string
	// Stock runs the engine as Temporal ships it for SQLite: a new database keeps its
	// visibility store inside, the visibility table keeps every index, task queues have 4
	// partitions and the events cache 512 KB.
	// Otherwise Start tunes both (see VisibilityFile), which costs about a quarter less CPU
	// per workflow (docs/sizing.md); the default suits every use of Herald.
	Stock bool
	// DynamicConfig holds extra dynamic config values by key, such as
	// "limit.maxIDLength"; they override Start's own.
	DynamicConfig map[string]any
	// Logger receives the server's logs; default: Warn and above to stderr.
	Logger *slog.Logger
	// LogLevel is the lowest level of server logs passed to Logger; nil means
	// slog.LevelWarn (the server is very chatty at Info).
	LogLevel slog.Leveler
}

// Server is a running embedded Temporal server (and UI).
type Server struct {
	temporal  temporal.Server
	ui        *uiserver.Server
	frontend  string
	httpURL   string
	uiURL     string
	namespace string
	logger    *slog.Logger
	quiet     *atomic.Bool
	lock      *dbLock
	stopOnce  sync.Once
}

// Start starts the Temporal server and, unless o.UIPort is -1, the Web UI. It
// returns once the frontend answers for the namespace and the UI accepts
// connections, or with an error when ctx ends first. Call Stop when done.
func Start(ctx context.Context, o Options) (*Server, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}

	frontendPort, err := choosePort(o.IP, o.FrontendPort, "frontend")
	if err != nil {
		return nil, err
	}
	uiPort := -1
	if o.UIPort >= 0 {
		if uiPort, err = choosePort(o.IP, o.UIPort, "UI"); err != nil {
			return nil, err
		}
	}
	httpPort := -1
	if o.HTTPPort >= 0 {
		if httpPort, err = choosePort(o.IP, o.HTTPPort, "HTTP API"); err != nil {
			return nil, err
		}
	}

	var lock *dbLock
	if o.DBFile != "" {
		if lock, err = lockDBFile(o.DBFile); err != nil {
			return nil, err
		}
	}
	s, err := start(ctx, o, frontendPort, httpPort, uiPort, lock)
	if err != nil {
		lock.Unlock()
		return nil, err
	}
	return s, nil
}

// start continues Start once the ports are chosen and the database file, if
// any, is locked. On success the Server owns lock.
func start(ctx context.Context, o Options, frontendPort, httpPort, uiPort int, lock *dbLock) (*Server, error) {
	internal, err := internalPorts(loopbackFor(o.IP))
	if err != nil {
		return nil, err
	}
	db, err := sqlConfig(o.DBFile, o.SQLitePragmas, o.Stock)
	if err != nil {
		return nil, err
	}
	aliases, err := ensureNamespace(ctx, db.main, clusterName, o.Namespace, o.SearchAttributes)
	if err != nil {
		return nil, err
	}
	if err := tuneStores(ctx, db, aliases, o.Stock); err != nil {
		return nil, err
	}

	frontend := net.JoinHostPort(dialIP(o.IP), strconv.Itoa(frontendPort))
	quiet := &atomic.Bool{}
	logger := serverLogger{out: o.Logger, min: o.LogLevel, quiet: quiet}
	srv, err := newTemporalServer(o, db, frontendPort, httpPort, internal, logger)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		quiet.Store(true)
		_ = srv.Stop()
		return nil, fmt.Errorf("start temporal server on %s: %w", frontend, err)
	}
	s := &Server{temporal: srv, frontend: frontend, namespace: o.Namespace, logger: o.Logger, quiet: quiet, lock: lock}
	if httpPort > 0 {
		s.httpURL = "http://" + net.JoinHostPort(dialIP(o.IP), strconv.Itoa(httpPort))
	}
	if err := waitFrontend(ctx, frontend, o.Namespace); err != nil {
		s.Stop()
		return nil, err
	}

	if uiPort >= 0 {
		// Check again: the port was free a moment ago, but the UI library
		// ends the process when it cannot bind.
		if err := checkPortFree(o.IP, uiPort, "UI"); err != nil {
			s.Stop()
			return nil, err
		}
		s.ui = newUIServer(o, uiPort, frontend)
		go func() { _ = s.ui.Start() }()
		s.uiURL = "http://" + net.JoinHostPort(dialIP(o.IP), strconv.Itoa(uiPort))
		if err := waitUI(ctx, s.uiURL); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// FrontendAddress returns the frontend's host:port, for client.Dial.
func (s *Server) FrontendAddress() string { return s.frontend }

// Connection is how a client in this process should connect to the server: without
// compressing its requests (the SDK gzips them by default), which over loopback only costs
// CPU — a few percent of a delivery's, measured with herald bench.
func (s *Server) Connection() client.ConnectionOptions {
	return client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}
}

// HTTPAddress returns the frontend HTTP API's base URL, "http://host:port",
// or "" when it is not running.
func (s *Server) HTTPAddress() string { return s.httpURL }

// UIAddress returns the Web UI's base URL, "http://host:port", or "" when the
// UI is not running.
func (s *Server) UIAddress() string { return s.uiURL }

// Namespace returns the namespace registered at start.
func (s *Server) Namespace() string { return s.namespace }

// Stop stops the UI and the server. It is safe to call more than once.
// While stopping, server logs below Error are dropped.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.quiet.Store(true)
		if s.ui != nil {
			s.ui.Stop()
		}
		if err := s.temporal.Stop(); err != nil {
			s.logger.Warn("stop temporal server", "frontend", s.frontend, "error", err)
		}
		s.lock.Unlock()
	})
}

func (o Options) withDefaults() (Options, error) {
	if o.IP == "" {
		o.IP = DefaultIP
	}
	if net.ParseIP(o.IP) == nil {
		return o, fmt.Errorf("IP %q is not an IP address; use one such as 127.0.0.1", o.IP)
	}
	if o.FrontendPort < 0 || o.FrontendPort > 65535 {
		return o, fmt.Errorf("frontend port %d is out of range; use 1-65535, or 0 to pick a free one", o.FrontendPort)
	}
	if o.UIPort < -1 || o.UIPort > 65535 {
		return o, fmt.Errorf("UI port %d is out of range; use 1-65535, 0 to pick a free one, or -1 for no UI", o.UIPort)
	}
	if o.HTTPPort < -1 || o.HTTPPort > 65535 {
		return o, fmt.Errorf("HTTP API port %d is out of range; use 1-65535, 0 to pick a free one, or -1 for no HTTP API", o.HTTPPort)
	}
	if p := o.FrontendPort; p > 0 && (p == o.UIPort || p == o.HTTPPort) || o.UIPort > 0 && o.UIPort == o.HTTPPort {
		return o, errors.New("frontend, UI and HTTP API ports must differ; give each its own port, or 0 to pick free ones")
	}
	if o.DBFile != "" {
		path, err := filepath.Abs(o.DBFile)
		if err != nil {
			return o, fmt.Errorf("database file %s: %w", o.DBFile, err)
		}
		if info, err := os.Stat(path); err == nil && info.IsDir() {
			return o, fmt.Errorf("database file %s is a directory; give a file path", path)
		}
		o.DBFile = path
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if err := validateSearchAttributes(o.SearchAttributes); err != nil {
		return o, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.LogLevel == nil {
		o.LogLevel = slog.LevelWarn
	}
	return o, nil
}

// choosePort returns port if it is free on ip, or a free port when port is 0.
func choosePort(ip string, port int, what string) (int, error) {
	if port == 0 {
		p, err := FreePort(ip)
		if err != nil {
			return 0, fmt.Errorf("%s port: %w", what, err)
		}
		return p, nil
	}
	return port, checkPortFree(ip, port, what)
}

// dialIP returns the address a local client dials to reach a listener bound
// to ip: the loopback address when ip is unspecified (0.0.0.0 or ::).
func dialIP(ip string) string {
	if net.ParseIP(ip).IsUnspecified() {
		return loopbackFor(ip)
	}
	return ip
}

// loopbackFor returns the loopback address of ip's family. The internal
// services (history, matching, worker) bind there whatever IP is.
func loopbackFor(ip string) string {
	if net.ParseIP(ip).To4() == nil {
		return "::1"
	}
	return "127.0.0.1"
}

// waitFrontend polls DescribeNamespace on the frontend until it answers.
func waitFrontend(ctx context.Context, addr, namespace string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("frontend %s: %w", addr, err)
	}
	defer conn.Close()
	svc := workflowservice.NewWorkflowServiceClient(conn)
	return poll(ctx, func(ctx context.Context) error {
		_, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		if err != nil {
			return fmt.Errorf("frontend %s: describe namespace %s: %w", addr, namespace, err)
		}
		return nil
	})
}

// waitUI polls the UI's health route until it answers 200.
func waitUI(ctx context.Context, baseURL string) error {
	transport := &http.Transport{} // no proxy: the UI is local
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	return poll(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("UI %s: %w", baseURL, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("UI %s: health check: %s", baseURL, resp.Status)
		}
		return nil
	})
}

// poll calls try until it succeeds or ctx ends; then it returns try's last
// error.
func poll(ctx context.Context, try func(context.Context) error) error {
	const interval = 50 * time.Millisecond
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := try(attemptCtx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready before start deadline (%w): %w", context.Cause(ctx), err)
		case <-time.After(interval):
		}
	}
}
