package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

func newEndpointCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoint",
		Short: "Register, inspect and list endpoints (the receivers events are sent to)",
	}
	cmd.AddCommand(newEndpointPutCmd(g), newEndpointGetCmd(g), newEndpointListCmd(g), newEndpointRotateCmd(g), newEndpointResetCmd(g))
	return cmd
}

func newEndpointPutCmd(g *globals) *cobra.Command {
	var (
		url, secret, schedule string
		attempts              int
		jitter                float64
		timeout, retention    time.Duration
		clear                 bool
		tenant                string
		maxInFlight           int
		rateLimit             int
		brk                   breakerFlags
	)
	cmd := &cobra.Command{
		Use:   "put ID --url URL",
		Short: "Register an endpoint, or change one",
		Long: `Register an endpoint under ID, or change it. Registering twice is safe: the second put
changes only what it gives. A changed URL is used by the next attempt of every pending
delivery. A new endpoint without --secret gets a generated signing secret, shown once.

Policy flags override the worker's defaults for this endpoint only.

` + zeroRule,
		Example: `  herald endpoint put acme --url https://acme.example.com/webhooks
  herald endpoint put acme --schedule 10s,1m,5m --attempts 4
  herald endpoint put acme --rate-limit 5`,
		Args: exactArgs(1, "give the endpoint ID, e.g. herald endpoint put acme --url https://..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseZero(cmd.Flags()); err != nil {
				return err
			}
			req := herald.PutEndpointRequest{ID: args[0], URL: url, Tenant: tenant, ClearOverrides: clear}
			if secret != "" {
				s, err := signature.ParseSecret(secret)
				if err != nil {
					return fmt.Errorf("%w: --secret: %v", starter.ErrInvalid, err)
				}
				req.Secret = s
			}
			var c herald.EndpointChange
			fl := cmd.Flags()
			if fl.Changed("schedule") {
				d, err := policy.ParseDelays(schedule)
				if err != nil {
					return fmt.Errorf("%w: --schedule: %v", starter.ErrInvalid, err)
				}
				c.Schedule = make([]herald.Duration, len(d))
				for i, v := range d {
					c.Schedule[i] = herald.Duration(v)
				}
			}
			setInt(fl, "attempts", &c.Attempts, attempts)
			setFloat(fl, "jitter", &c.Jitter, jitter)
			setDuration(fl, "timeout", &c.Timeout, timeout)
			setDuration(fl, "retention", &c.Retention, retention)
			setInt(fl, "max-in-flight", &c.MaxInFlight, maxInFlight)
			setInt(fl, "rate-limit", &c.RateLimit, rateLimit)
			c.Breaker = brk.change(fl)
			o, err := c.Overrides()
			if err != nil {
				return fmt.Errorf("%w: %v", starter.ErrInvalid, err)
			}
			req.Overrides = o
			return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
				res, err := s.PutEndpoint(ctx, req)
				if err != nil {
					return err
				}
				if g.output == "json" {
					return printJSON(cmd.OutOrStdout(), map[string]any{
						"id": res.Endpoint.ID, "url": res.Endpoint.URL, "created": res.Created,
						"version": res.Endpoint.Version, "secret": secretOnce(res),
					})
				}
				w := cmd.OutOrStdout()
				verb := "Updated"
				if res.Created {
					verb = "Registered"
				}
				fmt.Fprintf(w, "%s endpoint %s → %s (version %d)\n", verb, res.Endpoint.ID, res.Endpoint.URL, res.Endpoint.Version)
				if s := secretOnce(res); s != "" {
					fmt.Fprintf(w, "Signing secret (shown once, keep it for your receiver):\n  %s\n", s)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "where to POST events (http or https); required when registering")
	f.StringVar(&secret, "secret", "", "signing secret (whsec_ + base64 of 24-64 bytes); generated for a new endpoint when omitted")
	f.StringVar(&schedule, "schedule", "", "this endpoint's retry ladder, e.g. 30s,2m,10m")
	f.IntVar(&attempts, "attempts", 0, "this endpoint's number of attempts, the first included")
	f.Float64Var(&jitter, "jitter", 0, "this endpoint's jitter fraction (0.2 = ±20%)")
	f.DurationVar(&timeout, "timeout", 0, "this endpoint's attempt timeout (at most 2m)")
	f.DurationVar(&retention, "retention", 0, "how long this endpoint's dead letters wait for a replay")
	f.StringVar(&tenant, "tenant", "", "the customer this endpoint belongs to (default: default)")
	f.IntVar(&maxInFlight, "max-in-flight", 0, "most concurrent requests to this endpoint, 1..500 (default 100)")
	f.IntVar(&rateLimit, "rate-limit", 0, fmt.Sprintf("most requests per second to this endpoint, across all workers, 1..%d; 0 removes the limit (default: none)", policy.MaxRateLimit))
	brk.bind(f)
	f.BoolVar(&clear, "clear-policy", false, "drop this endpoint's policy overrides first (back to the worker's defaults)")
	return cmd
}

// secretOnce is the secret to show: only one Herald generated for this put.
func secretOnce(res herald.PutEndpointResult) string {
	if res.SecretGenerated {
		return string(res.Endpoint.Secret)
	}
	return ""
}

func newEndpointGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show an endpoint: URL, policy and counters",
		Args:  exactArgs(1, "give the endpoint ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (herald.EndpointState, error) {
				return s.GetEndpoint(ctx, args[0])
			}, printEndpoint)
		},
	}
}

func newEndpointListCmd(g *globals) *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "list [--state open]",
		Short: "List registered endpoints, with their circuit state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return showList(g, cmd, func(ctx context.Context, s *starter.Client) ([]herald.EndpointState, error) {
				return s.ListEndpoints(ctx, state)
			}, "No endpoints yet. Register one: herald endpoint put ID --url URL", func(w io.Writer, list []herald.EndpointState) error {
				tw := newTable(w, "ID", "CIRCUIT", "IN-FLIGHT/CAP", "QUEUE", "ATTEMPTS", "FAILED", "URL")
				for _, e := range list {
					tw.row(e.ID, e.Circuit.State, fmt.Sprintf("%d/%d", e.InFlight, e.Cap), e.Queue, e.Counters.Attempts, e.Counters.Failures, e.URL)
				}
				return tw.flush()
			})
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only endpoints whose circuit is closed, open or half_open")
	return cmd
}

func newEndpointResetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "reset ID",
		Short: "Close an endpoint's circuit by hand",
		Long: `Close an endpoint's circuit breaker by hand, for when you know the receiver is healthy
again: deliveries waiting on the circuit flow out through the concurrency gate at once.`,
		Args: exactArgs(1, "give the endpoint ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (herald.EndpointState, error) {
				return s.ResetCircuit(ctx, args[0])
			}, func(w io.Writer, st herald.EndpointState) error {
				_, err := fmt.Fprintf(w, "Circuit of %s is %s; %d deliveries waiting.\n", st.ID, st.Circuit.State, st.Queue)
				return err
			})
		},
	}
}

func newEndpointRotateCmd(g *globals) *cobra.Command {
	var grace time.Duration
	var secret string
	cmd := &cobra.Command{
		Use:   "rotate-secret ID [--grace 24h]",
		Short: "Give an endpoint a new signing secret, keeping the old one valid for a grace period",
		Long: `Make a new signing secret current. During the grace period every attempt carries two
signatures in webhook-signature, one per secret (space-separated), so the receiver can
switch to the new secret at its own pace; after it, only the new secret signs.`,
		Args: exactArgs(1, "give the endpoint ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := herald.PutEndpointRequest{ID: args[0], RotateGrace: grace}
			if secret != "" {
				s, err := signature.ParseSecret(secret)
				if err != nil {
					return fmt.Errorf("%w: --secret: %v", starter.ErrInvalid, err)
				}
				req.RotateTo = s
			} else {
				s, err := signature.GenerateSecret()
				if err != nil {
					return err
				}
				req.RotateTo = s
			}
			if grace < 0 {
				return fmt.Errorf("%w: --grace %s is negative", errUsage, grace)
			}
			return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
				res, err := s.PutEndpoint(ctx, req)
				if err != nil {
					return err
				}
				until := res.Endpoint.PreviousUntil
				if g.output == "json" {
					return printJSON(cmd.OutOrStdout(), map[string]any{"id": res.Endpoint.ID, "secret": string(req.RotateTo), "previous_valid_until": until})
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "New signing secret for %s (shown once):\n  %s\n", res.Endpoint.ID, string(req.RotateTo))
				if until.IsZero() {
					fmt.Fprintln(w, "The old secret no longer signs.")
				} else {
					fmt.Fprintf(w, "The old secret also signs until %s.\n", fmtTime(until))
				}
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", 24*time.Hour, "how long the old secret keeps signing")
	cmd.Flags().StringVar(&secret, "secret", "", "the new secret (whsec_...); generated when omitted")
	return cmd
}

// breakerFlags are endpoint put's circuit breaker settings.
type breakerFlags struct {
	consecutive, volume, halfOpen int
	window, volumeWindow          time.Duration
	probe, maxProbe               time.Duration
}

func (b *breakerFlags) bind(f *pflag.FlagSet) {
	d := policy.DefaultBreakerConfig()
	f.IntVar(&b.consecutive, "breaker-consecutive", d.ConsecutiveFailures, "open the circuit after this many consecutive failures within --breaker-window")
	f.DurationVar(&b.window, "breaker-window", d.ConsecutiveWindow, "the window of --breaker-consecutive")
	f.IntVar(&b.volume, "breaker-volume", d.VolumeFailures, "or after this many failures within --breaker-volume-window")
	f.DurationVar(&b.volumeWindow, "breaker-volume-window", d.VolumeWindow, "the window of --breaker-volume")
	f.DurationVar(&b.probe, "probe-delay", d.ProbeDelay, "wait before the first probe of an open circuit (doubles after each failed probe)")
	f.DurationVar(&b.maxProbe, "max-probe-delay", d.MaxProbeDelay, "longest wait between probes")
	f.IntVar(&b.halfOpen, "half-open-attempts", d.HalfOpenSuccesses, "successes in a row, one at a time, that close a half-open circuit")
}

// change is the breaker settings the flags given change; nil if none was given. The
// endpoint workflow checks the breaker they make once merged with the stored settings;
// zero would be refused anyway, and is refused before (refuseZero).
func (b *breakerFlags) change(f *pflag.FlagSet) *herald.BreakerChange {
	var c herald.BreakerChange
	setInt(f, "breaker-consecutive", &c.ConsecutiveFailures, b.consecutive)
	setDuration(f, "breaker-window", &c.ConsecutiveWindow, b.window)
	setInt(f, "breaker-volume", &c.VolumeFailures, b.volume)
	setDuration(f, "breaker-volume-window", &c.VolumeWindow, b.volumeWindow)
	setDuration(f, "probe-delay", &c.ProbeDelay, b.probe)
	setDuration(f, "max-probe-delay", &c.MaxProbeDelay, b.maxProbe)
	setInt(f, "half-open-attempts", &c.HalfOpenSuccesses, b.halfOpen)
	if c == (herald.BreakerChange{}) {
		return nil
	}
	return &c
}

// setInt sets *dst to v when flag name was given.
func setInt(f *pflag.FlagSet, name string, dst **int, v int) {
	if f.Changed(name) {
		*dst = &v
	}
}

// setFloat sets *dst to v when flag name was given.
func setFloat(f *pflag.FlagSet, name string, dst **float64, v float64) {
	if f.Changed(name) {
		*dst = &v
	}
}

// setDuration sets *dst to v when flag name was given.
func setDuration(f *pflag.FlagSet, name string, dst **herald.Duration, v time.Duration) {
	if f.Changed(name) {
		d := herald.Duration(v)
		*dst = &d
	}
}
