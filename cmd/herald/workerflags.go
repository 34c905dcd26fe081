package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/tracing"
	"github.com/heraldhq/herald/worker"
	"github.com/heraldhq/herald/worker/gate"
)

// workerFlags are the flags of every command that runs a worker (dev, worker).
type workerFlags struct {
	allowCIDRs   []string
	requireHTTPS bool
	schedule     string
	attempts     int
	jitter       float64
	retention    time.Duration
	timeout      time.Duration
	plaintext    bool
	statsEvery   time.Duration
}

// Bounds of --stats-interval.
const (
	minStatsInterval = time.Second
	maxStatsInterval = 5 * time.Minute
)

func (f *workerFlags) bind(fs *pflag.FlagSet, allowDefault []string) {
	d := herald.DefaultSettings()
	allow := allowDefault
	if env := os.Getenv("HERALD_ALLOW_CIDRS"); env != "" {
		allow = strings.Split(env, ",")
	}
	fs.StringSliceVar(&f.allowCIDRs, "allow-cidr", allow, "address ranges attempts may dial although they are private, loopback or link-local (repeatable; env HERALD_ALLOW_CIDRS)")
	fs.BoolVar(&f.requireHTTPS, "require-https", false, "refuse endpoints and attempts that are not https")
	fs.StringVar(&f.schedule, "schedule", policy.FormatDelays(d.Ladder.Delays), "default retry ladder: waits before attempt 2, 3, ... (comma-separated durations, at most 99, each 1s..720h)")
	fs.IntVar(&f.attempts, "attempts", d.Ladder.Attempts, "default number of attempts, the first included (1..100)")
	fs.Float64Var(&f.jitter, "jitter", d.Ladder.Jitter, "default jitter of each wait, as a fraction, 0 to under 1 (0.2 = ±20%)")
	fs.DurationVar(&f.retention, "retention", d.Retention.Std(), "how long a dead letter waits for a replay before it expires (1h..8760h)")
	fs.DurationVar(&f.timeout, "timeout", d.Timeout.Std(), "default timeout of one attempt (1s..2m)")
	fs.DurationVar(&f.statsEvery, "stats-interval", gate.StatsInterval, "how often this worker sends the attempt counts it added up to the endpoints' counters (1s..5m): each send costs Temporal a signal and a workflow task per stats shard, whatever the rate; a worker killed loses up to one interval of counts")
	fs.BoolVar(&f.plaintext, "plaintext", false, "store payloads and secrets unencrypted in Temporal (development only)")
}

// command makes cmd (its Use, Short and Long set) a command that runs a worker: no
// arguments, f's flags bound (allowDefault is --allow-cidr's default), zeroRule at the end
// of Long, and run called with the worker options the flags give.
func (f *workerFlags) command(g *globals, cmd *cobra.Command, allowDefault []string, run func(cmd *cobra.Command, opts worker.Options) error) *cobra.Command {
	cmd.Long += "\n\n" + zeroRule + "\n\n" + tracing.EnvHelp
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		opts, err := f.options(cmd.Flags(), g.taskQueue)
		if err != nil {
			return err
		}
		stop, err := g.startTracing(cmd.Context())
		if err != nil {
			return err
		}
		defer stop()
		return run(cmd, opts)
	}
	f.bind(cmd.Flags(), allowDefault)
	return cmd
}

// options turns the flags set on fs (zeroRule applies) into worker options, with errors
// that name the flag.
func (f *workerFlags) options(fs *pflag.FlagSet, taskQueue string) (worker.Options, error) {
	var o worker.Options
	if err := refuseZero(fs); err != nil {
		return o, err
	}
	allow, err := netguard.ParseCIDRs(nonEmpty(f.allowCIDRs))
	if err != nil {
		return o, fmt.Errorf("%w: --allow-cidr: %v", errUsage, err)
	}
	delays, err := policy.ParseDelays(f.schedule)
	if err != nil {
		return o, fmt.Errorf("%w: --schedule: %v", errUsage, err)
	}
	d := herald.DefaultSettings()
	d.Ladder = policy.Ladder{Delays: delays, Attempts: f.attempts, Jitter: f.jitter}
	if err := d.Ladder.Validate(); err != nil {
		return o, fmt.Errorf("%w: --schedule/--attempts/--jitter: %v", errUsage, err)
	}
	if err := policy.ValidateRetention(f.retention); err != nil {
		return o, fmt.Errorf("%w: --retention: %v", errUsage, err)
	}
	d.Retention, d.Timeout = herald.Duration(f.retention), herald.Duration(f.timeout)
	if f.statsEvery < minStatsInterval || f.statsEvery > maxStatsInterval {
		return o, fmt.Errorf("%w: --stats-interval %s: give a duration from %s to %s, e.g. 10s", errUsage, f.statsEvery, minStatsInterval, maxStatsInterval)
	}
	return worker.Options{
		TaskQueue:     taskQueue,
		Defaults:      d,
		Net:           netguard.Policy{Allow: allow, RequireHTTPS: f.requireHTTPS},
		StatsInterval: f.statsEvery,
	}, nil
}

// startWorker starts a worker on c with opts, logging to g's logger and recording its
// attempts to rec (nil: no metrics).
func startWorker(c client.Client, opts worker.Options, g *globals, rec *metrics.Recorder) (*worker.Worker, error) {
	opts.Logger, opts.Metrics, opts.Tracing = g.logger(), rec, g.tracing
	w, err := worker.New(c, opts)
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	return w, nil
}

func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
