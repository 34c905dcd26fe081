package devserver

import (
	"fmt"
	"maps"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// clusterName names the single cluster; it is stored in the database, so it
// must not change between starts on the same file.
const clusterName = "active"

const storeName = "sqlite-default"

// visibilityStoreName names the visibility store when it has a database of its own.
const visibilityStoreName = "sqlite-visibility"

// defaultPragmas are the SQLite pragmas Start uses unless Options overrides
// them: WAL lets readers run beside the writer, synchronous=normal is safe
// with WAL and about three times faster than the default, and the busy
// timeout turns lock contention into waiting rather than errors.
var defaultPragmas = map[string]string{
	"journal_mode": "wal",
	"synchronous":  "normal",
	"busy_timeout": "10000",
}

// uriParameters are the SQLite connection parameters the plugin passes
// through as such; every other connect attribute becomes a pragma.
var uriParameters = map[string]bool{
	"cache": true, "immutable": true, "mode": true, "modeof": true,
	"nolock": true, "psow": true, "setup": true, "vfs": true,
}

// memoryDBs numbers in-memory databases so that each Start gets its own.
var memoryDBs atomic.Int64

// stores are the databases of the embedded server: the main one and the visibility
// store's, which is the main one unless Start tuned a new database (see tuning.go).
type stores struct {
	main, visibility *config.SQL
	// visibilityDSN opens the visibility database with the sqlite driver.
	visibilityDSN string
}

// separate reports whether the visibility store has a database of its own.
func (s stores) separate() bool { return s.visibility != s.main }

// sqlConfig returns the SQLite store configurations for path, an absolute file
// path in an existing directory or "" for memory, and sets up the schema of new
// files. Unless stock, a new database keeps its visibility store apart.
func sqlConfig(path string, pragmas map[string]string, stock bool) (stores, error) {
	attrs := maps.Clone(defaultPragmas)
	for k, v := range pragmas {
		k = strings.ToLower(strings.TrimSpace(k))
		if uriParameters[k] {
			return stores{}, fmt.Errorf("SQLite pragma %q is a connection parameter Start sets itself; remove it", k)
		}
		attrs[k] = v
	}
	conf := func(name string, memory bool) *config.SQL {
		a := maps.Clone(attrs)
		if memory {
			// The plugin creates the schema when it opens a memory database. A
			// named shared-cache database lives as long as the plugin's process-wide
			// connection pool holds it, which is until the process exits.
			a["mode"], a["cache"] = "memory", "shared"
		} else {
			a["mode"] = "rwc"
		}
		return &config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: a, DatabaseName: name}
	}

	if path == "" {
		name := fmt.Sprintf("herald-devserver-%d-%d", os.Getpid(), memoryDBs.Add(1))
		s := stores{main: conf(name, true)}
		s.visibility = s.main
		if !stock {
			name += "-visibility"
			s.visibility = conf(name, true)
		}
		s.visibilityDSN = "file:" + name + "?mode=memory&cache=shared"
		return s, nil
	}

	s := stores{main: conf(path, false)}
	s.visibility = s.main
	visPath := VisibilityFile(path)
	isNew, err := newFile(path)
	if err != nil {
		return s, err
	}
	visNew, err := newFile(visPath)
	if err != nil {
		return s, err
	}
	switch {
	case isNew && !visNew:
		return s, fmt.Errorf("database file %s is new but its visibility file %s holds records of an older one; "+
			"delete %s (and its -wal and -shm files) or put back the database file", path, visPath, visPath)
	case isNew:
		if err := sqliteschema.SetupSchema(s.main); err != nil {
			return s, fmt.Errorf("database file %s: set up schema: %w", path, err)
		}
		if !stock {
			s.visibility = conf(visPath, false)
			if err := sqliteschema.SetupSchema(s.visibility); err != nil {
				return s, fmt.Errorf("visibility file %s: set up schema: %w", visPath, err)
			}
		}
	case !visNew:
		s.visibility = conf(visPath, false)
	}
	file := path
	if s.separate() {
		file = visPath
	}
	s.visibilityDSN = "file:" + file + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)"
	return s, nil
}

// newFile reports whether path is missing or empty.
func newFile(path string) (bool, error) {
	info, err := os.Stat(path)
	switch {
	case err == nil:
		return info.Size() == 0, nil
	case os.IsNotExist(err):
		return true, nil
	default:
		return false, fmt.Errorf("database file %s: %w", path, err)
	}
}

// servicePorts are the gRPC ports of the services other than the frontend.
type servicePorts struct {
	ip                        string
	history, matching, worker int
}

// internalPorts picks free ports on ip for the history, matching and worker
// services.
func internalPorts(ip string) (servicePorts, error) {
	p := servicePorts{ip: ip}
	for _, port := range []*int{&p.history, &p.matching, &p.worker} {
		var err error
		if *port, err = FreePort(ip); err != nil {
			return p, fmt.Errorf("internal service port: %w", err)
		}
	}
	return p, nil
}

// newTemporalServer assembles (but does not start) the Temporal server.
func newTemporalServer(o Options, db stores, frontendPort, httpPort int, internal servicePorts, logger serverLogger) (temporal.Server, error) {
	frontend := net.JoinHostPort(dialIP(o.IP), strconv.Itoa(frontendPort))
	httpAddress := ""
	if httpPort > 0 {
		httpAddress = net.JoinHostPort(dialIP(o.IP), strconv.Itoa(httpPort))
	}
	hostPort := func(port int) string { return net.JoinHostPort(internal.ip, strconv.Itoa(port)) }
	service := func(ip string, port int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: port, BindOnIP: ip}}
	}

	conf := &config.Config{}
	conf.Global.Membership.BroadcastAddress = internal.ip
	conf.Persistence = config.Persistence{
		DefaultStore:     storeName,
		VisibilityStore:  storeName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{storeName: {SQL: db.main}},
	}
	if db.separate() {
		conf.Persistence.VisibilityStore = visibilityStoreName
		conf.Persistence.DataStores[visibilityStoreName] = config.DataStore{SQL: db.visibility}
	}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend, HTTPAddress: httpAddress},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	frontendService := service(o.IP, frontendPort)
	frontendService.RPC.HTTPPort = max(httpPort, 0)
	conf.Services = map[string]config.Service{
		string(primitives.FrontendService): frontendService,
		string(primitives.HistoryService):  service(internal.ip, internal.history),
		string(primitives.MatchingService): service(internal.ip, internal.matching),
		string(primitives.WorkerService):   service(internal.ip, internal.worker),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend

	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("temporal server: authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("temporal server: claim mapper: %w", err)
	}

	dynamic := dynamicSettings(o)

	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static.SingleLocalHost(frontend),
			primitives.HistoryService:  static.SingleLocalHost(hostPort(internal.history)),
			primitives.MatchingService: static.SingleLocalHost(hostPort(internal.matching)),
			primitives.WorkerService:   static.SingleLocalHost(hostPort(internal.worker)),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamic),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	return srv, nil
}

// dynamicSettings is the server's dynamic configuration: Herald's settings (fewer with
// Options.Stock), then Options.DynamicConfig over them.
func dynamicSettings(o Options) dynamicconfig.StaticClient {
	const visibilityRPS = 5000
	dynamic := dynamicconfig.StaticClient{
		// Visibility reads are on Herald's hot paths: a send to a tenant finds its endpoints
		// with one, and a put reads its endpoint's record by id until it shows the put
		// (indexed reads of about a millisecond each); the UI lists workflows often too. The
		// default of 10/s would cap sends to tenants at 10/s.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): visibilityRPS,
	}
	if !o.Stock {
		// One matching host: a task queue's 4 default partitions only forward polls and
		// tasks between themselves (about a tenth of a delivery's CPU, see tuning.go).
		dynamic[dynamicconfig.MatchingNumTaskqueueReadPartitions.Key()] = 1
		dynamic[dynamicconfig.MatchingNumTaskqueueWritePartitions.Key()] = 1
		dynamic[dynamicconfig.EventsCacheMaxSizeBytes.Key()] = eventsCacheBytes
		dynamic[dynamicconfig.QueueReaderStuckCriticalAttempts.Key()] = readerStuckAttempts
		dynamic[dynamicconfig.TransferProcessorUpdateAckInterval.Key()] = queueCheckpointEvery
		dynamic[dynamicconfig.VisibilityProcessorUpdateAckInterval.Key()] = queueCheckpointEvery
	}
	for k, v := range o.DynamicConfig {
		dynamic[dynamicconfig.MakeKey(k)] = v
	}
	return dynamic
}

// newUIServer assembles (but does not start) the Web UI server for the
// frontend at frontend. Its assets are embedded in the ui-server module.
func newUIServer(o Options, port int, frontend string) *uiserver.Server {
	return uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                bracketIPv6(o.IP),
		Port:                port,
		TemporalGRPCAddress: frontend,
		EnableUI:            true,
		DefaultNamespace:    o.Namespace,
		Codec:               uiconfig.Codec{Endpoint: o.CodecEndpoint},
		// Plain http on a local address: a Secure cookie would never come back.
		CORS:             uiconfig.CORS{CookieInsecure: true},
		HideLogs:         true,
		DisableNewsFetch: true,
	}))
}

// bracketIPv6 returns ip as it appears before ":port" in an address.
func bracketIPv6(ip string) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]"
	}
	return ip
}

// eventsCacheBytes is the size of the history shard's events cache (the server's default is
// 512 KB). Every DescribeWorkflowExecution reads the run's start event (for its summary),
// and a worker's gate describes an endpoint workflow to read its admission: with the
// default, the start events of a burst's new deliveries push the endpoints' out within
// seconds, and each describe reads the endpoint's first history batch from the database.
// Measured with `herald bench --scenario throughput --endpoints 1000 --events 4000`:
// describes fell from 4.1 % to 1.0 % of the run's CPU (docs/sizing.md).
const eventsCacheBytes = 64 << 20

// readerStuckAttempts is how many loads of a history queue's reader in a row may end on
// tasks of the same second of fire time before the server takes that second for a stuck
// range and moves its tasks to a reader of their own (history.queueReaderStuckCriticalAttempts,
// default 3). A load reads at most 100 tasks (history.timerTaskBatchSize), so with the
// default a single shard that has more than about 300 timer tasks due in one second (timers,
// and every workflow task's timeouts: a burst of a few hundred deliveries has that many)
// splits off seconds that were never stuck, and their timers fired late: in `herald bench
// --scenario ratelimit`, booked deliveries' timers were 7.7 to 17 s late in 7 of 8 runs
// with the default (2.4 s in the eighth), and at most 1.0 s late in 11 runs with 100.
// At 100, a second must hold about 10,000 timer tasks to look stuck.
const readerStuckAttempts = 100

// queueCheckpointEvery is how often the transfer and visibility queues checkpoint
// (history.transferProcessorUpdateAckInterval and visibilityProcessorUpdateAckInterval,
// default 30 s). A queue's reader keeps every task it loaded, done or not, until its next
// checkpoint, and each new range of tasks merges into its last slice by walking all of them:
// under a sustained load the walk grows with the time since the checkpoint, and the work
// with its square. In `herald bench --scenario ordered` (a phase of 30 to 45 s at 100 to 170
// workflows/s) that walk (queues.executableTracker.split) took 20 % of the process's CPU in
// a slow run; with 1 s it took under 1 %, and the ordered rate was 114 to 168/s in four runs
// against 82 to 130/s with the default (docs/sizing.md). A checkpoint deletes the tasks done
// since the last one (when there are any: an idle server writes nothing); the shard's state
// is still written at most every 5 minutes or 1,000 tasks (history.shardUpdateMin*).
const queueCheckpointEvery = time.Second
