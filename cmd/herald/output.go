package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/server"
)

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// printStatus prints the status of a delivery of tenant's for people.
func (g *globals) printStatus(w io.Writer, st herald.Status, tenant string) error {
	fmt.Fprintf(w, "Event      %s (%s → %s)\n", st.Event.ID, st.Event.Type, st.Event.EndpointID)
	fmt.Fprintf(w, "State      %s\n", st.State)
	if st.Round > 0 {
		fmt.Fprintf(w, "Replays    %d\n", st.Round)
	}
	switch {
	case st.Busy != nil:
		fmt.Fprintf(w, "Busy       an attempt in flight since %s; the attempts show once it ends\n", fmtTime(st.Busy.Since))
		return nil
	case st.Waiting != nil:
		fmt.Fprintf(w, "Waiting    since %s: %s", fmtTime(st.Waiting.Since), st.Waiting.Reason)
		if st.Waiting.Queued {
			fmt.Fprintf(w, " (position %d in the endpoint's queue)", st.Waiting.Position)
		}
		if st.Waiting.Full {
			fmt.Fprint(w, " (not queued: the endpoint nudges it back once its queue is half empty)")
		}
		fmt.Fprintln(w)
	case !st.NextAttemptAt.IsZero():
		fmt.Fprintf(w, "Next       attempt at %s\n", fmtTime(st.NextAttemptAt))
	case !st.DeliveredAt.IsZero() && st.State == herald.StateDelivered:
		fmt.Fprintf(w, "Delivered  %s\n", fmtTime(st.DeliveredAt))
	case st.State == herald.StateDeadLetter:
		fmt.Fprintf(w, "Dead since %s; expires %s unless replayed (%s)\n", fmtTime(st.DeadAt), fmtTime(st.ExpiresAt), g.herald(replayArgs(st.Event.ID, tenant)...))
	case st.State == herald.StateSkipped:
		fmt.Fprintf(w, "Skipped    no request was made: %s\n", st.Reason)
	case st.State == herald.StateScheduled && !st.DeliverAt.IsZero():
		fmt.Fprintf(w, "Scheduled  the first attempt goes at %s (%s)\n", fmtTime(st.DeliverAt), g.herald(cancelArgs(st.Event.ID, tenant)...))
	case st.State == herald.StateCancelled && st.Cancelled != nil:
		printCancelled(w, st.Cancelled)
	}
	if st.Reason != "" && st.State == herald.StateDeadLetter {
		fmt.Fprintf(w, "Why        %s\n", st.Reason)
	}
	if o := st.Ordering.Text(); o != "" {
		fmt.Fprintf(w, "Ordering   %s\n", o)
	}
	if st.Dropped > 0 {
		fmt.Fprintf(w, "(%d older attempts not shown)\n", st.Dropped)
	}
	if len(st.Attempts) == 0 {
		_, err := fmt.Fprintln(w, "No attempt yet.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "\nROUND\t#\tAT\tTOOK\tRESULT\tNEXT")
	for _, a := range st.Attempts {
		r := a.Result
		next := "-"
		if a.Next != nil {
			if a.Next.Retry {
				next = fmt.Sprintf("in %s (%s)", a.Next.Delay.Std().Round(time.Second), a.Next.Source)
			} else {
				next = "ladder exhausted"
			}
		}
		res := r.Summary()
		if r.Error != "" && r.Outcome == "http_status" {
			res += ": " + r.Error
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", a.Round+1, a.Number, fmtTime(r.StartedAt),
			r.Duration.Std().Round(time.Millisecond), oneLine(res, 80), next)
	}
	return tw.Flush()
}

// circuitBanner is the one-line warning shown whenever a circuit is not closed, or "".
func (g *globals) circuitBanner(st herald.EndpointState) string {
	if d := st.Disabled; d != nil {
		return fmt.Sprintf("endpoint %s is disabled since %s: %s; enable it with: %s", st.ID, fmtTime(d.At), d.Reason, g.herald("endpoint", "enable", st.ID))
	}
	// The same sentence, with the same times, as the dashboard's banner.
	return server.Banner(st, false, time.Local)
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("15:04:05")
}

func (g *globals) printEndpoint(w io.Writer, st herald.EndpointState) error {
	if b := g.circuitBanner(st); b != "" {
		fmt.Fprintf(w, "!! %s\n\n", b)
	}
	fmt.Fprintf(w, "Endpoint   %s (tenant %s)\n", st.ID, st.Tenant)
	fmt.Fprintf(w, "URL        %s\n", st.URL)
	fmt.Fprintf(w, "Secret     %s", st.SecretHint)
	if !st.Rotating.IsZero() {
		fmt.Fprintf(w, " (previous secret also signs until %s)", fmtTime(st.Rotating))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Auth       %s\n", authText(st.Auth))
	if st.Filter != "" {
		fmt.Fprintf(w, "Filter     %s\n", strings.ReplaceAll(st.Filter, "\n", "\n           "))
	}
	if st.Transform != "" {
		fmt.Fprintf(w, "Transform  %s\n", strings.ReplaceAll(st.Transform, "\n", "\n           "))
	}
	o := st.Overrides
	var ov []string
	if o.Ladder != nil {
		if o.Ladder.Delays != nil {
			ov = append(ov, "schedule "+policy.FormatDelays(o.Ladder.Delays))
		}
		if o.Ladder.Attempts != 0 {
			ov = append(ov, fmt.Sprintf("attempts %d", o.Ladder.Attempts))
		}
		if o.Ladder.Jitter != nil {
			ov = append(ov, fmt.Sprintf("jitter %.2f", *o.Ladder.Jitter))
		}
	}
	if o.Timeout != 0 {
		ov = append(ov, "timeout "+o.Timeout.String())
	}
	if o.Retention != 0 {
		ov = append(ov, "retention "+o.Retention.String())
	}
	if o.RateLimit != nil {
		ov = append(ov, fmt.Sprintf("rate limit %d/s", *o.RateLimit))
	}
	if o.DisableAfter != 0 {
		ov = append(ov, "disable after "+o.DisableAfter.String())
	}
	if o.OrderingOnDeadLetter != "" {
		ov = append(ov, "ordering on dead letter "+o.OrderingOnDeadLetter)
	}
	if len(ov) == 0 {
		ov = []string{"none (worker defaults)"}
	}
	fmt.Fprintf(w, "Policy     %s\n", strings.Join(ov, ", "))
	if len(st.HeaderNames) > 0 {
		fmt.Fprintf(w, "Headers    %s (values not shown)\n", strings.Join(st.HeaderNames, ", "))
	}
	fmt.Fprintf(w, "Types      %s\n", typesText(st.Types))
	fmt.Fprintf(w, "Version    %d, updated %s\n", st.Version, fmtTime(st.UpdatedAt))
	if d := st.Disabled; d != nil {
		fmt.Fprintf(w, "Disabled   %s since %s (%s)\n", d.Reason, fmtTime(d.At), d.Cause)
		if r := d.Recovery; r != nil {
			fmt.Fprintf(w, "Probing    %s\n", recoveryText(r))
		}
	} else if !st.FailingSince.IsZero() {
		fmt.Fprintf(w, "Failing    no attempt has succeeded since %s\n", fmtTime(st.FailingSince))
	}
	fmt.Fprintf(w, "Circuit    %s", st.Circuit.State)
	if st.Circuit.Reason != "" {
		fmt.Fprintf(w, " (%s)", st.Circuit.Reason)
	}
	if !st.Circuit.Since.IsZero() {
		fmt.Fprintf(w, " since %s", fmtTime(st.Circuit.Since))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "In flight  %d of cap %d (configured %d); %d waiting; latency p50 %s, p99 %s\n",
		st.InFlight, st.Cap, st.MaxInFlight, st.Queue, st.P50.Std().Round(time.Millisecond), st.P99.Std().Round(time.Millisecond))
	if st.RateLimit > 0 {
		fmt.Fprintf(w, "Rate limit %d requests per second, across all workers\n", st.RateLimit)
	}
	if !st.QueueFullAt.IsZero() {
		fmt.Fprintf(w, "Overflow   the queue was last full at %s: deliveries turned away wait for room, and are nudged back once it is half empty\n", fmtTime(st.QueueFullAt))
	}
	for _, l := range st.Leases {
		fmt.Fprintf(w, "  lease    %s: %d permits until %s\n", l.Holder, l.Permits, clock(l.Expires))
	}
	c := st.Counters
	fmt.Fprintf(w, "Attempts   %d (%d succeeded, %d failed) since %s\n", c.Attempts, c.Successes, c.Failures, fmtTime(st.CountersSince))
	fmt.Fprintf(w, "Retry-After honoured %d, capped %d, ignored %d; %d asked for 60-300s\n",
		c.RetryAfterHonoured, c.RetryAfterCapped, c.RetryAfterIgnored, c.RetryAfterBackpressure)
	if !c.LastAttemptAt.IsZero() {
		fmt.Fprintf(w, "Last       %s at %s\n", c.LastOutcome, fmtTime(c.LastAttemptAt))
	}
	return nil
}

// typesText shows an endpoint's subscribed event types.
func typesText(types []string) string {
	if len(types) == 0 {
		return "* (every event type)"
	}
	return strings.Join(types, ", ")
}

// printEventView prints an event sent to a tenant and each endpoint's delivery of it.
func printEventView(w io.Writer, v herald.EventView) error {
	fmt.Fprintf(w, "Event      %s (%s, tenant %s)\n", v.ID, v.Type, v.Tenant)
	if !v.SentAt.IsZero() {
		fmt.Fprintf(w, "Sent       %s\n", fmtTime(v.SentAt))
	}
	if v.NoDestination {
		fmt.Fprintln(w, "No destination: no endpoint of the tenant subscribed to this type when it was sent.")
	}
	if len(v.Deliveries) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "\nENDPOINT\tSTATE\tATTEMPTS\tLAST RESULT")
	missing := false
	for _, d := range v.Deliveries {
		switch {
		case d.Missing:
			missing = true
			fmt.Fprintf(tw, "%s\tmissing\t-\t-\n", d.EndpointID)
		case d.Status == nil:
			fmt.Fprintf(tw, "%s\tunknown\t-\t%s\n", d.EndpointID, oneLine(d.Error, 80))
		default:
			last := "-"
			if n := len(d.Status.Attempts); n > 0 {
				last = oneLine(d.Status.Attempts[n-1].Result.Summary(), 60)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", d.EndpointID, d.Status.State, len(d.Status.Attempts), last)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if missing {
		fmt.Fprintf(w, "\nMissing: the endpoint subscribes to %s now but has no delivery of this event (it subscribed\nafter the send, or the send was cut short). Sending the same event id again adds it.\n", v.Type)
	}
	return nil
}

func oneLine(s string, max int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > max {
		r = append(r[:max-1], '…')
	}
	return string(r)
}
