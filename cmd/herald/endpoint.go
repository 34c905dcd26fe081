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
	cmd.AddCommand(newEndpointPutCmd(g), newEndpointGetCmd(g), newEndpointListCmd(g), newEndpointRotateCmd(g), newEndpointResetCmd(g),
		newEndpointDisableCmd(g), newEndpointEnableCmd(g), newEndpointImportCmd(g))
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
		types                 []string
		brk                   breakerFlags
		disableAfter          time.Duration
		orderingOnDeadLetter  string
		headers               []string
		clearHeaders          bool
		auth                  authFlags
		filter, transform     string
	)
	cmd := &cobra.Command{
		Use:   "put ID --url URL",
		Short: "Register an endpoint, or change one",
		Long: `Register an endpoint under ID, or change it. Registering twice is safe: the second put
changes only what it gives. A changed URL is used by the next attempt of every pending
delivery. A new endpoint without --secret gets a generated signing secret, shown once.

Policy flags override the worker's defaults for this endpoint only.

--header sets a custom header sent with every attempt (repeat it for several); the headers
given replace the endpoint's headers, and --clear-headers removes them. Herald's own headers
(webhook-id, webhook-timestamp, webhook-signature, Content-Type, User-Agent, ...) cannot be
set. An endpoint whose every attempt fails for --disable-after (5 days unless set) is
disabled, as is one that answers 410 Gone; see herald endpoint enable.

--types sets the event types the endpoint receives when events are sent to its tenant
(herald send --tenant): exact names (order.paid), prefixes (order.* matches order.paid and
order.refund.created) or * for every type. An endpoint registered without --types receives
every type. The put returns once sends to the tenant use the new list.

` + authHelp + `

--filter sets a CEL expression over the event (id, type, tenant, data) that must be true
for an event sent to the tenant to go to this endpoint, e.g. 'data.amount > 100'; --filter ''
removes it. --transform sets a CEL expression that builds each attempt's request: a map
with "body" (any JSON value; a string is sent as is), "headers" (name → value), or
"cancel" (a reason: the delivery ends, cancelled, without a request). Both are checked
when put: an error names the line and column. See the README, "Filters and
transformations".

` + zeroRule,
		Example: `  herald endpoint put acme --url https://acme.example.com/webhooks
  herald endpoint put acme --schedule 10s,1m,5m --attempts 4
  herald endpoint put acme --rate-limit 5
  herald endpoint put acme --header 'X-Team: billing' --disable-after 72h
  herald endpoint put acme-billing --tenant acme --url https://acme.example.com/billing --types order.paid,invoice.*
  herald endpoint put acme --auth-basic herald:s3cret
  herald endpoint put acme --oauth2-token-url https://auth.acme.example.com/token --oauth2-client-id herald --oauth2-client-secret s3cret
  herald endpoint put acme --client-cert herald.crt --client-key herald.key

  herald endpoint put acme-big --filter 'type == "order.paid" && data.amount > 100'
  herald endpoint put acme-slack --transform '{"body": {"text": "Order " + string(data.order_id) + " paid"}}'`,
		Args: exactArgs(1, "give the endpoint ID, e.g. herald endpoint put acme --url https://..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseZero(cmd.Flags()); err != nil {
				return err
			}
			if tenant != "" {
				if err := herald.ValidateGrantedTenant(tenant); err != nil {
					return fmt.Errorf("%w: --tenant: %v", errUsage, err)
				}
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
			setDuration(fl, "disable-after", &c.DisableAfter, disableAfter)
			if fl.Changed("ordering-on-dead-letter") {
				c.OrderingOnDeadLetter = &orderingOnDeadLetter
			}
			if fl.Changed("types") {
				if len(types) == 0 {
					return fmt.Errorf("%w: --types is empty: give event types such as order.paid,order.*, or * for every type", errUsage)
				}
				c.Types = types
			}
			o, err := c.Overrides()
			if err != nil {
				return fmt.Errorf("%w: %v", starter.ErrInvalid, err)
			}
			req.Overrides, req.Types = o, c.Types
			if fl.Changed("filter") {
				req.Filter = &filter
			}
			if fl.Changed("transform") {
				req.Transform = &transform
			}
			if err := herald.ValidateExpressions(req.Filter, req.Transform); err != nil {
				return fmt.Errorf("%w: %v", starter.ErrInvalid, err)
			}
			if req.Headers, err = headerFlags(headers, clearHeaders); err != nil {
				return err
			}
			if req.Auth, err = auth.change(fl); err != nil {
				return err
			}
			req.ClearAuth = auth.clear
			return runPut(g, cmd, req, (*starter.Client).PutEndpoint, func(res herald.PutEndpointResult) string {
				verb := "Updated"
				if res.Created {
					verb = "Registered"
				}
				line := fmt.Sprintf("%s endpoint %s → %s (version %d)\nReceives %s from tenant %s", verb, res.Endpoint.ID, res.Endpoint.URL, res.Endpoint.Version,
					typesText(res.Endpoint.Types), res.Endpoint.Tenant)
				if v := res.Endpoint.Auth.View(); v != nil {
					line += "\nAuthenticates with " + authText(v)
				}
				return line
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "where to POST events (http or https); required when registering")
	f.StringVar(&secret, "secret", "", "signing secret (whsec_ + base64 of 24-64 bytes); generated for a new endpoint when omitted")
	f.StringVar(&schedule, "schedule", "", "this endpoint's retry ladder, e.g. 30s,2m,10m (at most 99 waits, each 1s..720h)")
	f.IntVar(&attempts, "attempts", 0, "this endpoint's number of attempts, the first included (1..100)")
	f.Float64Var(&jitter, "jitter", 0, "this endpoint's jitter fraction, 0 to under 1 (0.2 = ±20%)")
	f.DurationVar(&timeout, "timeout", 0, "this endpoint's attempt timeout (1s..2m)")
	f.DurationVar(&retention, "retention", 0, "how long this endpoint's dead letters wait for a replay (1h..8760h)")
	f.StringVar(&tenant, "tenant", "", "the customer this endpoint belongs to (default: default; herald-ops is reserved)")
	f.IntVar(&maxInFlight, "max-in-flight", 0, fmt.Sprintf("most concurrent requests to this endpoint, %d..%d (default %d)", policy.MinMaxInFlight, policy.MaxMaxInFlight, policy.DefaultMaxInFlight))
	f.IntVar(&rateLimit, "rate-limit", 0, fmt.Sprintf("most requests per second to this endpoint, across all workers, 1..%d; 0 removes the limit (default: none)", policy.MaxRateLimit))
	f.StringSliceVar(&types, "types", nil, "event types this endpoint receives from sends to its tenant: names, prefixes like order.* or * (default: every type)")
	brk.bind(f)
	f.DurationVar(&disableAfter, "disable-after", policy.DefaultDisableAfter, "disable the endpoint once every attempt has failed for this long (1h..2160h)")
	f.StringVar(&orderingOnDeadLetter, "ordering-on-dead-letter", herald.OrderingBlock, "what a dead letter at the head of an ordering key does: block (the key waits for its replay) or skip (the key goes on)")
	f.StringArrayVar(&headers, "header", nil, "a custom header sent with every attempt, as 'Name: value' (repeatable; replaces the endpoint's headers)")
	f.BoolVar(&clearHeaders, "clear-headers", false, "remove the endpoint's custom headers")
	auth.bind(f)
	f.StringVar(&filter, "filter", "", "a CEL expression over the event (id, type, tenant, data) that must be true for it to go to this endpoint; '' removes it")
	f.StringVar(&transform, "transform", "", `a CEL expression giving each attempt's {"body": ..., "headers": {...}} or {"cancel": "reason"}; '' removes it`)
	f.BoolVar(&clear, "clear-policy", false, "drop this endpoint's policy overrides first (back to the worker's defaults)")
	return cmd
}

// headerFlags is the headers change of --header and --clear-headers: nil when neither is given.
func headerFlags(given []string, clear bool) (*[]herald.Header, error) {
	if clear && len(given) > 0 {
		return nil, fmt.Errorf("%w: give --header or --clear-headers, not both", errUsage)
	}
	if !clear && len(given) == 0 {
		return nil, nil
	}
	hs := make([]herald.Header, 0, len(given))
	for _, s := range given {
		h, err := herald.ParseHeader(s)
		if err != nil {
			return nil, fmt.Errorf("%w: --header: %v", starter.ErrInvalid, err)
		}
		hs = append(hs, h)
	}
	hs, err := herald.NormalizeHeaders(hs)
	if err != nil {
		return nil, fmt.Errorf("%w: --header: %v", starter.ErrInvalid, err)
	}
	return &hs, nil
}

func newEndpointDisableCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "disable ID [--reason TEXT]",
		Short: "Stop sending anything to an endpoint until it is enabled again",
		Long: `Disable an endpoint: once this returns, no request goes to it. A delivery that has made
no attempt yet ends as skipped (no request, nothing to replay); one whose attempts had
begun parks as a dead letter at its next attempt, so that a replay after
herald endpoint enable can recover it.`,
		Example: `  herald endpoint disable acme --reason "customer asked us to pause"`,
		Args:    exactArgs(1, "give the endpoint ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (herald.EndpointState, error) {
				return s.DisableEndpoint(ctx, args[0], reason)
			}, func(w io.Writer, st herald.EndpointState) error {
				_, err := fmt.Fprintf(w, "Endpoint %s is disabled: %s. Enable it again with: %s\n", st.ID, disabledReason(st), g.herald("endpoint", "enable", st.ID))
				return err
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for whoever looks at the endpoint later")
	return cmd
}

func newEndpointEnableCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "enable ID",
		Short: "Send to a disabled endpoint again",
		Long: `Enable a disabled endpoint, whether disabled by hand, by a 410 Gone answer or after
failing for too long: it starts afresh, with its circuit closed. Deliveries that parked as
dead letters while it was disabled wait for a replay (herald replay --endpoint ID).`,
		Args: exactArgs(1, "give the endpoint ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(g, cmd, func(ctx context.Context, s *starter.Client) (herald.EndpointState, error) {
				return s.EnableEndpoint(ctx, args[0])
			}, func(w io.Writer, st herald.EndpointState) error {
				_, err := fmt.Fprintf(w, "Endpoint %s is enabled; its circuit is %s.\n", st.ID, st.Circuit.State)
				return err
			})
		},
	}
}

// disabledReason is why st is disabled, or "not disabled".
func disabledReason(st herald.EndpointState) string {
	if st.Disabled == nil {
		return "not disabled"
	}
	return st.Disabled.Reason
}

// runPut sends req with put and prints the result: headline, and the secret once if Herald
// generated it (or, with -o json, the endpoint's id, URL, version and that secret).
func runPut(g *globals, cmd *cobra.Command, req herald.PutEndpointRequest,
	put func(*starter.Client, context.Context, herald.PutEndpointRequest) (herald.PutEndpointResult, error),
	headline func(herald.PutEndpointResult) string) error {
	return g.withStarter(cmd, func(ctx context.Context, s *starter.Client) error {
		res, err := put(s, ctx, req)
		if err != nil {
			return err
		}
		if g.output == "json" {
			return printJSON(cmd.OutOrStdout(), map[string]any{
				"id": res.Endpoint.ID, "url": res.Endpoint.URL, "created": res.Created,
				"version": res.Endpoint.Version, "secret": secretOnce(res),
				"tenant": res.Endpoint.Tenant, "types": res.Endpoint.Types,
				"filter": res.Endpoint.Filter, "transform": res.Endpoint.Transform,
			})
		}
		w := cmd.OutOrStdout()
		fmt.Fprintln(w, headline(res))
		if s := secretOnce(res); s != "" {
			fmt.Fprintf(w, "Signing secret (shown once, keep it for your receiver):\n  %s\n", s)
		}
		return nil
	})
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
			}, g.printEndpoint)
		},
	}
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
			req := herald.PutEndpointRequest{ID: args[0], RotateGrace: herald.Duration(grace)}
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
	cmd.Flags().DurationVar(&grace, "grace", 24*time.Hour, "how long the old secret keeps signing (0..720h)")
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
	f.IntVar(&b.consecutive, "breaker-consecutive", d.ConsecutiveFailures, "open the circuit after this many consecutive failures within --breaker-window (1..10000)")
	f.DurationVar(&b.window, "breaker-window", d.ConsecutiveWindow.Std(), "the window of --breaker-consecutive (at most 24h)")
	f.IntVar(&b.volume, "breaker-volume", d.VolumeFailures, "or after this many failures within --breaker-volume-window (1..10000)")
	f.DurationVar(&b.volumeWindow, "breaker-volume-window", d.VolumeWindow.Std(), "the window of --breaker-volume (at most 24h)")
	f.DurationVar(&b.probe, "probe-delay", d.ProbeDelay.Std(), "wait before the first probe of an open circuit, doubling after each failed probe (1s..168h)")
	f.DurationVar(&b.maxProbe, "max-probe-delay", d.MaxProbeDelay.Std(), "longest wait between probes (at most 168h)")
	f.IntVar(&b.halfOpen, "half-open-attempts", d.HalfOpenSuccesses, "successes in a row, one at a time, that close a half-open circuit (0..10000)")
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
