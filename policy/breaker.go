package policy

import (
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/duration"
)

// CircuitState is the state of an endpoint's circuit breaker.
type CircuitState string

// The three circuit states.
const (
	// CircuitClosed lets every attempt through.
	CircuitClosed CircuitState = "closed"
	// CircuitOpen lets nothing through except one probe once the probe is due.
	CircuitOpen CircuitState = "open"
	// CircuitHalfOpen lets a trickle through, one attempt at a time.
	CircuitHalfOpen CircuitState = "half_open"
)

// BreakerConfig holds the numbers of the circuit breaker.
type BreakerConfig struct {
	// ConsecutiveFailures failed attempts in a row, all within ConsecutiveWindow, open the circuit.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// ConsecutiveWindow is how recent the consecutive failures must be.
	ConsecutiveWindow duration.Duration `json:"consecutive_window"`
	// VolumeFailures failed attempts within VolumeWindow, successes or not in between, open the circuit.
	VolumeFailures int `json:"volume_failures"`
	// VolumeWindow is how recent the counted failures must be.
	VolumeWindow duration.Duration `json:"volume_window"`
	// ProbeDelay is how long after first opening the probe is due.
	ProbeDelay duration.Duration `json:"probe_delay"`
	// MaxProbeDelay caps the probe delay, which doubles each time the circuit re-opens.
	MaxProbeDelay duration.Duration `json:"max_probe_delay"`
	// HalfOpenSuccesses successful attempts in a row after a good probe close the circuit.
	HalfOpenSuccesses int `json:"half_open_successes"`
	// ProbeTimeout is how long a probe or half-open attempt may go without an outcome or a
	// release before its slot is treated as released (a lost worker must not wedge the circuit).
	ProbeTimeout duration.Duration `json:"probe_timeout"`
}

// DefaultBreakerConfig returns the retry-ladder article's numbers (the README's "Endpoint
// protection"): 5 consecutive failures within 60s or 20 failures within 5m open the
// circuit; the probe is due after 5m, doubling up to 1h; 5 good half-open attempts close
// it; a silent probe is given up after 2m.
func DefaultBreakerConfig() BreakerConfig {
	return BreakerConfig{
		ConsecutiveFailures: 5,
		ConsecutiveWindow:   duration.Duration(60 * time.Second),
		VolumeFailures:      20,
		VolumeWindow:        duration.Duration(5 * time.Minute),
		ProbeDelay:          duration.Duration(5 * time.Minute),
		MaxProbeDelay:       duration.Duration(time.Hour),
		HalfOpenSuccesses:   5,
		ProbeTimeout:        duration.Duration(2 * time.Minute),
	}
}

// BreakerOverride changes some fields of a BreakerConfig, for per-endpoint settings: a
// zero field (nil HalfOpenSuccesses) keeps the base's value, so a change names only what
// it changes.
type BreakerOverride struct {
	ConsecutiveFailures int               `json:"consecutive_failures,omitempty"`
	ConsecutiveWindow   duration.Duration `json:"consecutive_window,omitempty"`
	VolumeFailures      int               `json:"volume_failures,omitempty"`
	VolumeWindow        duration.Duration `json:"volume_window,omitempty"`
	ProbeDelay          duration.Duration `json:"probe_delay,omitempty"`
	MaxProbeDelay       duration.Duration `json:"max_probe_delay,omitempty"`
	HalfOpenSuccesses   *int              `json:"half_open_successes,omitempty"`
	ProbeTimeout        duration.Duration `json:"probe_timeout,omitempty"`
}

// Override returns the override that sets every field to c's.
func (c BreakerConfig) Override() BreakerOverride {
	h := c.HalfOpenSuccesses
	return BreakerOverride{
		ConsecutiveFailures: c.ConsecutiveFailures, ConsecutiveWindow: c.ConsecutiveWindow,
		VolumeFailures: c.VolumeFailures, VolumeWindow: c.VolumeWindow,
		ProbeDelay: c.ProbeDelay, MaxProbeDelay: c.MaxProbeDelay,
		HalfOpenSuccesses: &h, ProbeTimeout: c.ProbeTimeout,
	}
}

// Apply returns c with o's fields in place. Validate the result; Apply does not.
func (c BreakerConfig) Apply(o BreakerOverride) BreakerConfig {
	setInt := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setDur := func(dst *duration.Duration, v duration.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	setInt(&c.ConsecutiveFailures, o.ConsecutiveFailures)
	setDur(&c.ConsecutiveWindow, o.ConsecutiveWindow)
	setInt(&c.VolumeFailures, o.VolumeFailures)
	setDur(&c.VolumeWindow, o.VolumeWindow)
	setDur(&c.ProbeDelay, o.ProbeDelay)
	setDur(&c.MaxProbeDelay, o.MaxProbeDelay)
	if o.HalfOpenSuccesses != nil {
		c.HalfOpenSuccesses = *o.HalfOpenSuccesses
	}
	setDur(&c.ProbeTimeout, o.ProbeTimeout)
	return c
}

// Merge sets the fields n sets, keeping the others.
func (o *BreakerOverride) Merge(n BreakerOverride) {
	merged := BreakerConfig{
		ConsecutiveFailures: o.ConsecutiveFailures, ConsecutiveWindow: o.ConsecutiveWindow,
		VolumeFailures: o.VolumeFailures, VolumeWindow: o.VolumeWindow,
		ProbeDelay: o.ProbeDelay, MaxProbeDelay: o.MaxProbeDelay, ProbeTimeout: o.ProbeTimeout,
	}.Apply(n)
	half := o.HalfOpenSuccesses
	if n.HalfOpenSuccesses != nil {
		half = n.HalfOpenSuccesses
	}
	*o = merged.Override()
	o.HalfOpenSuccesses = half
}

// maxBreakerFailures bounds the failure counts so the state stays small in workflow history.
const maxBreakerFailures = 10000

// Validate reports every field of c that is out of range, or nil.
func (c BreakerConfig) Validate() error {
	var errs []error
	if c.ConsecutiveFailures < 1 || c.ConsecutiveFailures > maxBreakerFailures {
		errs = append(errs, fmt.Errorf("breaker consecutive failures %d is out of range; use 1 to %d", c.ConsecutiveFailures, maxBreakerFailures))
	}
	if c.ConsecutiveWindow <= 0 {
		errs = append(errs, fmt.Errorf("breaker consecutive window %s is not positive; use a duration such as 60s", c.ConsecutiveWindow))
	}
	if c.VolumeFailures < 1 || c.VolumeFailures > maxBreakerFailures {
		errs = append(errs, fmt.Errorf("breaker volume failures %d is out of range; use 1 to %d", c.VolumeFailures, maxBreakerFailures))
	}
	if c.VolumeWindow <= 0 {
		errs = append(errs, fmt.Errorf("breaker volume window %s is not positive; use a duration such as 5m", c.VolumeWindow))
	}
	switch {
	case c.ProbeDelay <= 0:
		errs = append(errs, fmt.Errorf("breaker probe delay %s is not positive; use a duration such as 5m", c.ProbeDelay))
	case c.ProbeDelay.Std() < MinDelay:
		errs = append(errs, fmt.Errorf("breaker probe delay %s is under %s; use a duration such as 5m", c.ProbeDelay, MinDelay))
	}
	if c.MaxProbeDelay < c.ProbeDelay {
		errs = append(errs, fmt.Errorf("breaker max probe delay %s is below the probe delay %s; raise it to at least the probe delay", c.MaxProbeDelay, c.ProbeDelay))
	}
	if c.HalfOpenSuccesses < 0 || c.HalfOpenSuccesses > maxBreakerFailures {
		errs = append(errs, fmt.Errorf("breaker half-open successes %d is out of range; use 0 to %d", c.HalfOpenSuccesses, maxBreakerFailures))
	}
	if c.ProbeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("breaker probe timeout %s is not positive; use a duration longer than one attempt, such as 2m", c.ProbeTimeout))
	}
	return errors.Join(errs...)
}

// TicketKind says what kind of admission a Ticket stands for.
type TicketKind string

// The kinds of Ticket.
const (
	// TicketNormal is an attempt admitted while closed. One such ticket may cover any number of
	// attempts in the same closed period (for example a block of leased permits).
	TicketNormal TicketKind = "normal"
	// TicketProbe is the single probe of an open circuit.
	TicketProbe TicketKind = "probe"
	// TicketTrickle is one half-open attempt.
	TicketTrickle TicketKind = "trickle"
)

// Ticket ties an attempt's outcome to the admission that let it go. The breaker counts an
// outcome only when its ticket belongs to the current epoch (and, for a probe or trickle
// attempt, to the slot now in flight); anything else is a late outcome and is ignored.
type Ticket struct {
	// Epoch is the breaker's epoch at admission; every state change starts a new epoch.
	Epoch uint64 `json:"epoch"`
	// Kind is the kind of admission.
	Kind TicketKind `json:"kind"`
	// Slot numbers the probe or trickle slot; zero for TicketNormal.
	Slot uint64 `json:"slot,omitempty"`
}

// Admission is the breaker's answer to Admit.
type Admission struct {
	// OK is true when the attempt may go now.
	OK bool `json:"ok"`
	// Probe is true when the admitted attempt is the open circuit's probe.
	Probe bool `json:"probe,omitempty"`
	// Reason says why the attempt must wait; empty when OK.
	Reason string `json:"reason,omitempty"`
	// RetryAt is the earliest time Admit could say yes if nothing is reported meanwhile;
	// zero when OK.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Ticket identifies the admission; pass it to Record or Release. Zero when not OK.
	Ticket Ticket `json:"ticket,omitzero"`
}

// Breaker is one endpoint's circuit breaker. It is a value with exported fields so that it
// round-trips through encoding/json (continue-as-new); read it through its methods.
//
// Outcomes are matched to admissions by Ticket. An outcome counts only if its ticket was
// issued in the current epoch: attempts admitted while closed that finish after the circuit
// opened neither extend nor re-trip the open circuit and are never taken for the probe's
// outcome; outcomes from before a close (or a Reset) do not count against the new closed period.
type Breaker struct {
	// Config is the breaker's configuration.
	Config BreakerConfig `json:"config"`
	// Circuit is the current state; empty means closed.
	Circuit CircuitState `json:"circuit"`
	// Entered is when the circuit entered its current state.
	Entered time.Time `json:"entered,omitzero"`
	// Reason says why the circuit last opened; empty while closed.
	Reason string `json:"reason,omitempty"`
	// TrippedAt is when the circuit last left closed; zero while closed.
	TrippedAt time.Time `json:"tripped_at,omitzero"`
	// Epoch counts state changes; tickets from older epochs are ignored.
	Epoch uint64 `json:"epoch"`
	// Delay is the current probe delay while open or half-open.
	Delay duration.Duration `json:"delay,omitempty"`
	// ProbeDue is when the next probe may go while open.
	ProbeDue time.Time `json:"probe_due,omitzero"`
	// Streak holds the times of the current run of consecutive failures (closed only).
	Streak []time.Time `json:"streak,omitzero"`
	// Failures holds the times of recent failures for the volume trigger (closed only).
	Failures []time.Time `json:"failures,omitzero"`
	// Successes counts good half-open attempts so far.
	Successes int `json:"successes,omitempty"`
	// Slot numbers the last probe or trickle slot handed out.
	Slot uint64 `json:"slot,omitempty"`
	// SlotBusy is true while that slot's attempt is in flight.
	SlotBusy bool `json:"slot_busy,omitempty"`
	// SlotAt is when that slot was handed out.
	SlotAt time.Time `json:"slot_at,omitzero"`
}

// NewBreaker returns a closed breaker with configuration c. Check c with Validate first.
func NewBreaker(c BreakerConfig) Breaker {
	return Breaker{Config: c, Circuit: CircuitClosed, Epoch: 1}
}

// State returns the circuit's state.
func (b *Breaker) State() CircuitState {
	if b.Circuit == "" {
		return CircuitClosed
	}
	return b.Circuit
}

// Since returns when the circuit entered its current state (zero for a breaker never changed).
func (b *Breaker) Since() time.Time { return b.Entered }

// TripReason says why the circuit opened, such as "5 consecutive failures",
// "20 failures in 5m0s", "probe failed" or "half-open attempt failed"; empty while closed.
func (b *Breaker) TripReason() string { return b.Reason }

// NextProbeAt returns when the open circuit's probe is due; zero unless open.
func (b *Breaker) NextProbeAt() time.Time {
	if b.State() != CircuitOpen {
		return time.Time{}
	}
	return b.ProbeDue
}

// Admit says whether one attempt may go at now. Closed admits everything. Open admits one
// probe once it is due and none is in flight. Half-open admits one attempt at a time. A yes
// from an open or half-open circuit takes its single slot until Record or Release (or until
// ProbeTimeout passes).
func (b *Breaker) Admit(now time.Time) Admission {
	b.expireSlot(now)
	switch b.State() {
	case CircuitOpen:
		if b.SlotBusy {
			return Admission{Reason: fmt.Sprintf("circuit open (%s): probe in flight", b.Reason), RetryAt: b.SlotAt.Add(b.Config.ProbeTimeout.Std())}
		}
		if now.Before(b.ProbeDue) {
			return Admission{Reason: fmt.Sprintf("circuit open (%s): probe due at %s", b.Reason, b.ProbeDue.UTC().Format(time.RFC3339)), RetryAt: b.ProbeDue}
		}
		return Admission{OK: true, Probe: true, Ticket: b.takeSlot(now, TicketProbe)}
	case CircuitHalfOpen:
		if b.SlotBusy {
			return Admission{Reason: "circuit half-open: one attempt in flight", RetryAt: b.SlotAt.Add(b.Config.ProbeTimeout.Std())}
		}
		return Admission{OK: true, Ticket: b.takeSlot(now, TicketTrickle)}
	default:
		return Admission{OK: true, Ticket: Ticket{Epoch: b.Epoch, Kind: TicketNormal}}
	}
}

// Ticket returns a ticket for attempts admitted while closed, for a caller that admits a
// block of attempts at once (leased permits); ok is false unless the circuit is closed.
func (b *Breaker) Ticket() (t Ticket, ok bool) {
	if b.State() != CircuitClosed {
		return Ticket{}, false
	}
	return Ticket{Epoch: b.Epoch, Kind: TicketNormal}, true
}

// Record takes the outcome of one admitted attempt that really ran (ok is true for success)
// and reports whether it counted. Outcomes with a ticket from an older epoch, or for a slot
// no longer in flight (already reported, released or timed out), do not count and change nothing.
func (b *Breaker) Record(now time.Time, t Ticket, ok bool) bool {
	b.expireSlot(now)
	if t.Epoch != b.Epoch {
		return false
	}
	switch b.State() {
	case CircuitClosed:
		if t.Kind != TicketNormal {
			return false
		}
		b.recordClosed(now, ok)
		return true
	case CircuitOpen:
		if t.Kind != TicketProbe || !b.ownsSlot(t) {
			return false
		}
		b.SlotBusy = false
		if !ok {
			b.reopen(now, "probe failed")
			return true
		}
		b.Circuit = CircuitHalfOpen
		b.Entered = now
		b.Epoch++
		b.Successes = 0
		b.ProbeDue = time.Time{}
		if b.Successes >= b.Config.HalfOpenSuccesses {
			b.close(now)
		}
		return true
	case CircuitHalfOpen:
		if t.Kind != TicketTrickle || !b.ownsSlot(t) {
			return false
		}
		b.SlotBusy = false
		if !ok {
			b.reopen(now, "half-open attempt failed")
			return true
		}
		b.Successes++
		if b.Successes >= b.Config.HalfOpenSuccesses {
			b.close(now)
		}
		return true
	}
	return false
}

// Release frees the probe or trickle slot of an admitted attempt that never ran (lost
// lease, cancelled) without counting an outcome, and reports whether it freed one. A
// released probe leaves the probe due, so the next attempt to arrive becomes the probe.
// Releasing a TicketNormal does nothing.
func (b *Breaker) Release(now time.Time, t Ticket) bool {
	b.expireSlot(now)
	if t.Epoch != b.Epoch || t.Kind == TicketNormal || !b.ownsSlot(t) {
		return false
	}
	b.SlotBusy = false
	return true
}

// Reset closes the circuit by hand and forgets recorded failures. Resetting an open or
// half-open circuit starts a new epoch, so outcomes of attempts admitted before it are ignored;
// resetting a closed circuit keeps the epoch, so closed tickets already handed out stay valid.
func (b *Breaker) Reset(now time.Time) {
	if b.State() != CircuitClosed {
		b.close(now)
		return
	}
	b.Streak, b.Failures = nil, nil
}

// Reconfigure replaces the configuration, keeping the state. A probe delay above the new
// maximum is lowered to it; recorded failures beyond the new thresholds are dropped.
func (b *Breaker) Reconfigure(c BreakerConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	b.Config = c
	if b.Delay > c.MaxProbeDelay {
		b.Delay = c.MaxProbeDelay
		if b.State() == CircuitOpen {
			if due := b.Entered.Add(b.Delay.Std()); due.Before(b.ProbeDue) {
				b.ProbeDue = due
			}
		}
	}
	b.Streak = lastTimes(b.Streak, c.ConsecutiveFailures)
	b.Failures = lastTimes(b.Failures, c.VolumeFailures)
	return nil
}

func (b *Breaker) recordClosed(now time.Time, ok bool) {
	if ok {
		b.Streak = nil
		return
	}
	b.Streak = pushTime(b.Streak, now, b.Config.ConsecutiveWindow.Std(), b.Config.ConsecutiveFailures)
	b.Failures = pushTime(b.Failures, now, b.Config.VolumeWindow.Std(), b.Config.VolumeFailures)
	switch {
	case len(b.Streak) >= b.Config.ConsecutiveFailures:
		b.trip(now, fmt.Sprintf("%d consecutive failures", b.Config.ConsecutiveFailures), b.Config.ProbeDelay.Std())
	case len(b.Failures) >= b.Config.VolumeFailures:
		b.trip(now, fmt.Sprintf("%d failures in %s", b.Config.VolumeFailures, b.Config.VolumeWindow), b.Config.ProbeDelay.Std())
	}
}

// reopen sends an open or half-open circuit back to open with the probe delay doubled.
func (b *Breaker) reopen(now time.Time, reason string) {
	d := b.Delay * 2
	if b.Delay <= 0 {
		d = b.Config.ProbeDelay
	}
	if d > b.Config.MaxProbeDelay || d <= 0 {
		d = b.Config.MaxProbeDelay
	}
	b.trip(now, reason, d.Std())
}

func (b *Breaker) trip(now time.Time, reason string, delay time.Duration) {
	if b.State() == CircuitClosed {
		b.TrippedAt = now
	}
	b.Circuit = CircuitOpen
	b.Entered = now
	b.Epoch++
	b.Reason = reason
	b.Delay = duration.Duration(delay)
	b.ProbeDue = now.Add(delay)
	b.Streak, b.Failures = nil, nil
	b.Successes = 0
	b.SlotBusy = false
}

func (b *Breaker) close(now time.Time) {
	b.Circuit = CircuitClosed
	b.Entered = now
	b.Epoch++
	b.Reason = ""
	b.TrippedAt = time.Time{}
	b.Delay = 0
	b.ProbeDue = time.Time{}
	b.Streak, b.Failures = nil, nil
	b.Successes = 0
	b.SlotBusy = false
}

func (b *Breaker) takeSlot(now time.Time, kind TicketKind) Ticket {
	b.Slot++
	b.SlotBusy = true
	b.SlotAt = now
	return Ticket{Epoch: b.Epoch, Kind: kind, Slot: b.Slot}
}

func (b *Breaker) ownsSlot(t Ticket) bool {
	return b.SlotBusy && t.Slot == b.Slot
}

// expireSlot frees a slot whose attempt has been silent for ProbeTimeout.
func (b *Breaker) expireSlot(now time.Time) {
	if b.SlotBusy && now.Sub(b.SlotAt) >= b.Config.ProbeTimeout.Std() {
		b.SlotBusy = false
	}
}

// pushTime returns a fresh slice of the times in ts less than window before now, then now,
// keeping at most the n newest. It never writes into ts, so copies of a Breaker stay independent.
func pushTime(ts []time.Time, now time.Time, window time.Duration, n int) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= window {
		i++
	}
	out := make([]time.Time, 0, len(ts)-i+1)
	out = append(out, ts[i:]...)
	out = append(out, now)
	return lastTimes(out, n)
}

// lastTimes keeps at most the n newest times, in a fresh slice when it drops any.
func lastTimes(ts []time.Time, n int) []time.Time {
	if n < 0 {
		n = 0
	}
	if len(ts) <= n {
		return ts
	}
	return append([]time.Time(nil), ts[len(ts)-n:]...)
}
