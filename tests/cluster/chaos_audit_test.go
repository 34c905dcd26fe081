package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// The chaos run's audit works from what the receivers logged and what Herald says of the
// deliveries the receivers never answered 2xx to; it knows nothing of how Herald keeps its
// promises (leases, grants, queues), only what an endpoint's owner could check.

// hit is one request a chaos receiver got.
type hit struct {
	Endpoint string
	ID       string // webhook-id
	Type     string // the body's type
	Stamp    int64  // webhook-timestamp: the Unix second the request was signed in
	Start    time.Time
	End      time.Time // when the receiver had its answer ready
	Status   int
	// InFlight is how many requests the receiver was serving when this one arrived, itself
	// included.
	InFlight int
}

// chaosReceiver is one endpoint's receiver: it logs every request and answers with answer.
type chaosReceiver struct {
	*httptest.Server
	id       string
	mu       sync.Mutex
	inFlight int
	hits     []hit
	// answer is the status to answer a request arriving at now, and how long to hold it first.
	answer func(now time.Time) (int, time.Duration)
}

func newChaosReceiver(t *testing.T, id string, answer func(time.Time) (int, time.Duration)) *chaosReceiver {
	t.Helper()
	r := &chaosReceiver{id: id, answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		body, _ := io.ReadAll(req.Body)
		var env struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &env)
		stamp, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
		r.mu.Lock()
		r.inFlight++
		h := hit{Endpoint: id, ID: req.Header.Get("webhook-id"), Type: env.Type, Stamp: stamp, Start: start, InFlight: r.inFlight}
		status, hold := r.answer(start)
		r.mu.Unlock()
		time.Sleep(hold)
		r.mu.Lock()
		r.inFlight--
		h.End, h.Status = time.Now(), status
		r.hits = append(r.hits, h)
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

// log is a copy of the requests answered so far, and how many are being served now.
func (r *chaosReceiver) log() ([]hit, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hit(nil), r.hits...), r.inFlight
}

// endpointRule is what the audit checks at one endpoint.
type endpointRule struct {
	ID string
	// Cap is the endpoint's max_in_flight, checked exactly (caps under 4 are exact: no
	// spare permits); 0: not checked.
	Cap int
	// Rate is the endpoint's rate limit per aligned second; 0: none.
	Rate int
	// Types is the endpoint's subscription (nil: every type); a request of another type is
	// a request to an unsubscribed endpoint. Only fan-out sends reach endpoints with types.
	Types []string
	// DisabledFrom is when the endpoint was disabled (zero: never): no request may arrive after.
	DisabledFrom time.Time
	// Healthy receivers always answer 2xx: their deliveries measure recovery.
	Healthy bool
}

// subscribed reports whether an endpoint subscribed to types receives type typ.
func subscribed(types []string, typ string) bool {
	if len(types) == 0 {
		return true
	}
	for _, p := range types {
		if p == "*" || p == typ || (strings.HasSuffix(p, ".*") && strings.HasPrefix(typ, strings.TrimSuffix(p, "*"))) {
			return true
		}
	}
	return false
}

// pair names one delivery: an event at an endpoint.
type pair struct{ Endpoint, Event string }

// want is one delivery an accepted event owes: the event at an endpoint subscribed at send time.
type want struct {
	pair
	Tenant   string // for the status lookup of an event sent to a tenant; empty otherwise
	Accepted time.Time
}

// outcome is Herald's word on a delivery the receiver never answered 2xx to.
type outcome struct {
	State   string // dead_letter, skipped, waiting_endpoint, ...
	Circuit string // the endpoint's circuit when State is waiting_endpoint
}

// fault is one process killed and brought back.
type fault struct {
	Kind   string // worker, serve, frontend, history, matching, temporal-worker, postgresql
	Name   string
	How    string // SIGKILL, or pg_ctl stop -m immediate
	Killed time.Time
	Back   time.Time // started again (PostgreSQL: accepting connections)
	// Exit marks an exit no kill caused (a Temporal service started while PostgreSQL was
	// down exits at once), started again by the run's supervisor: Killed is the last check
	// that found it running or under a kill. It explains repeats like a kill, but is
	// counted in Crashes, not among the faults.
	Exit bool
}

// chaosReport is the audit's findings.
type chaosReport struct {
	Duration                                time.Duration
	Sent, Accepted, Unacknowledged          int // events
	Rejected                                map[int]int
	Deliveries                              int // (event, endpoint) pairs owed
	Delivered, DeadLetters, Skipped, OnOpen int
	Lost                                    []string
	Unsettled                               []string
	FalseDelivered                          []string // Herald says delivered, the receiver never answered 2xx
	Requests                                int
	Repeats                                 int
	RepeatsBy                               map[string]int // explanation → count
	Unexplained                             []string
	CapViolations, RateViolations           []string
	Unsubscribed, Disabled, Strays          []string
	PeakInFlight                            map[string]int
	MaxPerStamp, MaxPerArrival              map[string]int
	Replays                                 int
	FaultsBy                                map[string]int
	Pairs                                   int                      // faults of two processes at once
	Recovery                                map[string]time.Duration // worst, restart → first delivery
	RecoveryFromKill                        map[string]time.Duration // worst, kill → first delivery after restart
	NoRecovery                              []string
	// Crashes are exits no kill caused (a Temporal service started while PostgreSQL was
	// down exits), by process: the run's supervisor started each again (faults with Exit).
	Crashes map[string]int
}

// violations lists what breaks the invariants; empty when the run is clean.
func (r chaosReport) violations() []string {
	var v []string
	add := func(what string, list []string) {
		if len(list) == 0 {
			return
		}
		if len(list) > 10 {
			list = append(list[:10:10], fmt.Sprintf("... %d in all", len(list)))
		}
		v = append(v, fmt.Sprintf("%s: %s", what, strings.Join(list, "; ")))
	}
	add("lost (accepted, and Herald has no record of the delivery)", r.Lost)
	add("not settled within the bound (accepted, Herald holds it, but neither delivered, dead-lettered, skipped nor waiting on an open circuit)", r.Unsettled)
	add("recorded delivered without a 2xx at the receiver", r.FalseDelivered)
	add("repeats with no fault or replay to explain them", r.Unexplained)
	add("cap exceeded", r.CapViolations)
	add("rate limit exceeded in an aligned second (webhook-timestamp)", r.RateViolations)
	add("requests to an unsubscribed endpoint", r.Unsubscribed)
	add("requests to a disabled endpoint", r.Disabled)
	add("requests for events not sent toward the endpoint", r.Strays)
	if n := r.Rejected[http.StatusConflict]; n > 0 {
		v = append(v, fmt.Sprintf("%d sends retried with the same id were refused as conflicts (409)", n))
	}
	return v
}

// audit checks the receivers' logs against the deliveries owed, Herald's outcomes for those
// never answered 2xx, the faults and the replays the client asked for.
//
// sentTo holds every event sent toward each endpoint, accepted or not (a send given up may
// still have started a delivery); a request for an event not sent toward its endpoint is a
// stray (nil: not checked).
//
// taskFailed holds when a Herald worker logged that a workflow task of an event's delivery
// failed, or the history service that it aborted an update to it, by endpoint and event
// (Endpoint "" for a delivery whose id names no endpoint: a send to one endpoint).
func audit(rules map[string]endpointRule, hits []hit, wants []want, outcomes map[pair]outcome,
	faults []fault, replays map[pair][]time.Time, sentTo map[pair]bool, taskFailed map[pair][]taskEvent) chaosReport {
	r := chaosReport{
		Requests: len(hits), RepeatsBy: map[string]int{}, PeakInFlight: map[string]int{},
		MaxPerStamp: map[string]int{}, MaxPerArrival: map[string]int{}, FaultsBy: map[string]int{}, Crashes: map[string]int{},
		Recovery: map[string]time.Duration{}, RecoveryFromKill: map[string]time.Duration{},
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Start.Before(hits[j].Start) })
	byPair := map[pair][]hit{}
	perStamp := map[string]map[int64]int{}
	perArrival := map[string]map[int64]int{}
	for _, h := range hits {
		p := pair{h.Endpoint, h.ID}
		byPair[p] = append(byPair[p], h)
		rule := rules[h.Endpoint]
		if h.InFlight > r.PeakInFlight[h.Endpoint] {
			r.PeakInFlight[h.Endpoint] = h.InFlight
		}
		if rule.Cap > 0 && h.InFlight > rule.Cap {
			r.CapViolations = append(r.CapViolations, fmt.Sprintf("%s: %d in flight at %s (cap %d)", h.Endpoint, h.InFlight, h.Start.Format(time.StampMilli), rule.Cap))
		}
		if perStamp[h.Endpoint] == nil {
			perStamp[h.Endpoint], perArrival[h.Endpoint] = map[int64]int{}, map[int64]int{}
		}
		perStamp[h.Endpoint][h.Stamp]++
		perArrival[h.Endpoint][h.Start.Unix()]++
		if sentTo != nil && !sentTo[p] {
			r.Strays = append(r.Strays, fmt.Sprintf("%s got %s (type %s), not sent toward it", h.Endpoint, h.ID, h.Type))
		}
		if !subscribed(rule.Types, h.Type) {
			r.Unsubscribed = append(r.Unsubscribed, fmt.Sprintf("%s got %s of type %s (subscribes to %s)", h.Endpoint, h.ID, h.Type, strings.Join(rule.Types, ",")))
		}
		if !rule.DisabledFrom.IsZero() && !h.Start.Before(rule.DisabledFrom) {
			r.Disabled = append(r.Disabled, fmt.Sprintf("%s got %s at %s, disabled since %s", h.Endpoint, h.ID, h.Start.Format(time.StampMilli), rule.DisabledFrom.Format(time.StampMilli)))
		}
	}
	for ep, m := range perStamp {
		for sec, n := range m {
			if n > r.MaxPerStamp[ep] {
				r.MaxPerStamp[ep] = n
			}
			if rate := rules[ep].Rate; rate > 0 && n > rate {
				r.RateViolations = append(r.RateViolations, fmt.Sprintf("%s: %d requests signed in second %s (limit %d)", ep, n, time.Unix(sec, 0).Format(time.TimeOnly), rate))
			}
		}
		for _, n := range perArrival[ep] {
			if n > r.MaxPerArrival[ep] {
				r.MaxPerArrival[ep] = n
			}
		}
	}
	sort.Strings(r.RateViolations)

	// Repeats: requests for an event at an endpoint after one that was answered 2xx.
	delivered := map[pair]hit{}
	for p, hs := range byPair {
		first := -1
		for i, h := range hs {
			if h.Status >= 200 && h.Status < 300 {
				first = i
				break
			}
		}
		if first < 0 {
			continue
		}
		delivered[p] = hs[first]
		for _, rep := range hs[first+1:] {
			r.Repeats++
			failed := append(slices.Clone(taskFailed[p]), taskFailed[pair{Event: p.Event}]...)
			slices.SortFunc(failed, func(a, b taskEvent) int { return a.At.Compare(b.At) })
			why := explainRepeat(hs[first], rep, faults, replays[p], failed)
			if why == "" {
				r.Unexplained = append(r.Unexplained, fmt.Sprintf("%s at %s: answered 2xx at %s, again at %s", p.Event, p.Endpoint,
					hs[first].Start.Format(time.StampMilli), rep.Start.Format(time.StampMilli)))
				continue
			}
			r.RepeatsBy[why]++
		}
	}

	// Every delivery owed: delivered (the receiver answered 2xx), or Herald's outcome is one
	// the invariant allows.
	r.Deliveries = len(wants)
	for _, w := range wants {
		if _, ok := delivered[w.pair]; ok {
			r.Delivered++
			continue
		}
		o, ok := outcomes[w.pair]
		switch {
		case !ok:
			r.Lost = append(r.Lost, fmt.Sprintf("%s at %s: no 2xx and no outcome from Herald", w.Event, w.Endpoint))
		case o.State == "dead_letter":
			r.DeadLetters++
		case o.State == "skipped" && !rules[w.Endpoint].DisabledFrom.IsZero():
			r.Skipped++
		case o.State == "waiting_endpoint" && (o.Circuit == "open" || o.Circuit == "half_open"):
			r.OnOpen++
		case o.State == "delivered":
			r.FalseDelivered = append(r.FalseDelivered, fmt.Sprintf("%s at %s", w.Event, w.Endpoint))
		case o.State == "":
			r.Lost = append(r.Lost, fmt.Sprintf("%s at %s: no 2xx, and Herald does not know it", w.Event, w.Endpoint))
		default:
			r.Unsettled = append(r.Unsettled, fmt.Sprintf("%s at %s: %s (circuit %s)", w.Event, w.Endpoint, o.State, o.Circuit))
		}
	}
	sort.Strings(r.Lost)
	sort.Strings(r.Unsettled)

	for _, ts := range replays {
		r.Replays += len(ts)
	}

	// Faults, and how long each took to recover from: from the process's restart to the
	// first request that a healthy receiver answered 2xx.
	var healthy []time.Time
	for _, h := range hits {
		if rules[h.Endpoint].Healthy && h.Status >= 200 && h.Status < 300 {
			healthy = append(healthy, h.Start)
		}
	}
	var kills []fault
	for _, f := range faults {
		if f.Exit {
			r.Crashes[f.Name]++
		} else {
			kills = append(kills, f)
		}
	}
	for i, f := range kills {
		r.FaultsBy[f.Kind]++
		if i > 0 && kills[i-1].Killed.Equal(f.Killed) {
			r.Pairs++
		}
		k := sort.Search(len(healthy), func(j int) bool { return !healthy[j].Before(f.Back) })
		if k == len(healthy) {
			r.NoRecovery = append(r.NoRecovery, fmt.Sprintf("%s %s killed at %s", f.Kind, f.Name, f.Killed.Format(time.StampMilli)))
			continue
		}
		if d := healthy[k].Sub(f.Back); d > r.Recovery[f.Kind] {
			r.Recovery[f.Kind] = d
		}
		if d := healthy[k].Sub(f.Killed); d > r.RecoveryFromKill[f.Kind] {
			r.RecoveryFromKill[f.Kind] = d
		}
	}
	return r
}

// explainRepeat says why rep repeated first, an attempt answered 2xx: a process killed
// between the first request's start and the repeat's (the attempt was in flight, or its
// result not yet recorded, at the kill), or one still down when the first request started
// (an attempt made during an outage of history or PostgreSQL gets its answer, but its
// workflow task cannot be recorded until the process is back: the task times out and runs
// the attempt again), or a replay the client asked for in that time; "" when nothing
// explains it. herald serve takes no part in a delivery once it is accepted, so
// its kills explain nothing.
// The kind named is the likeliest of those killed in that time: a herald worker (the
// attempt's result dies with it), then history and PostgreSQL (the result not yet recorded),
// then the frontend and matching (on its way), then Temporal's own worker service. A
// process that exited on its own (a Temporal service started while PostgreSQL was still
// down) was down as surely as one killed, and explains a repeat the same way. So does a
// workflow task of the delivery that a Herald worker logged as failed in that time (taskFailed):
// an attempt's result is recorded only when the workflow task that ran it completes, and a
// task that fails runs again, its attempt with it.
//
// An update the history service logged as aborted (`workflow update was aborted`) explains
// one as well: a pass reaches its delivery as an update, which runs the attempt in the
// workflow task that takes it, and an update's task that the server drops takes the
// attempt's result with it. The abort may be logged up to abortLead before the request
// starts (the task's attempt was already on its way).
func explainRepeat(first, rep hit, faults []fault, replays []time.Time, taskFailed []taskEvent) string {
	for _, kind := range []string{"worker", "history", "postgresql", "frontend", "matching", "temporal-worker"} {
		for _, f := range faults {
			if f.Kind == kind && !f.Back.Before(first.Start) && !f.Killed.After(rep.Start) {
				if f.Exit {
					return "in flight at an exit of " + f.Kind
				}
				return "in flight at a kill of " + f.Kind
			}
		}
	}
	for _, e := range taskFailed {
		if e.Aborted && !e.At.Before(first.Start.Add(-abortLead)) && !e.At.After(rep.Start) {
			return "the server aborted an update to it (logged by history)"
		}
		if !e.Aborted && !e.At.Before(first.Start) && !e.At.After(rep.Start) {
			return "its workflow task failed (logged by the worker)"
		}
	}
	for _, at := range replays {
		if !at.Before(first.Start) && !at.After(rep.Start) {
			return "replay asked for by the client"
		}
	}
	return ""
}

// markdown is the report as the tables docs/reliability.md shows.
func (r chaosReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	row("traffic and faults for", r.Duration)
	row("events sent (API calls that got an answer or were given up)", r.Sent)
	row("events accepted (2xx)", r.Accepted)
	row("events given up by the client (no 2xx within 60 s of retries)", r.Unacknowledged)
	if len(r.Rejected) > 0 {
		row("sends refused (status: count)", fmt.Sprint(r.Rejected))
	}
	row("deliveries owed (event × subscribed endpoint)", r.Deliveries)
	row("delivered (2xx at the receiver)", r.Delivered)
	row("dead letters", r.DeadLetters)
	row("waiting on an open circuit", r.OnOpen)
	row("skipped (disabled endpoint)", r.Skipped)
	row("**lost**", len(r.Lost))
	row("**not settled within the bound**", len(r.Unsettled))
	row("requests at the receivers", r.Requests)
	row("repeats (same webhook-id after a 2xx)", r.Repeats)
	for _, k := range sortedKeys(r.RepeatsBy) {
		row("&nbsp;&nbsp;explained: "+k, r.RepeatsBy[k])
	}
	row("**unexplained repeats**", len(r.Unexplained))
	row("replays of dead letters asked for", r.Replays)
	row("**cap exceeded**", len(r.CapViolations))
	row("**rate limit exceeded (aligned second)**", len(r.RateViolations))
	row("**requests to unsubscribed endpoints**", len(r.Unsubscribed))
	row("**requests to disabled endpoints**", len(r.Disabled))
	row("**requests for events not sent toward the endpoint**", len(r.Strays))
	fmt.Fprintf(&b, "\n| endpoint | peak in flight | most requests signed in one second | most arriving in one second |\n|---|---|---|---|\n")
	for _, ep := range sortedKeys(r.PeakInFlight) {
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", ep, r.PeakInFlight[ep], r.MaxPerStamp[ep], r.MaxPerArrival[ep])
	}
	fmt.Fprintf(&b, "\n| process killed | faults | worst: restart → first delivery | worst: kill → first delivery |\n|---|---|---|---|\n")
	for _, k := range sortedKeys(r.FaultsBy) {
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", k, r.FaultsBy[k], r.Recovery[k].Round(10*time.Millisecond), r.RecoveryFromKill[k].Round(10*time.Millisecond))
	}
	fmt.Fprintf(&b, "\n%d faults in all, %d of them two processes at once.\n", sumValues(r.FaultsBy)-r.Pairs, r.Pairs)
	if len(r.Crashes) > 0 {
		fmt.Fprintf(&b, "\nExits no kill caused, each started again by the run's supervisor (as systemd or Kubernetes would):")
		for _, k := range sortedKeys(r.Crashes) {
			fmt.Fprintf(&b, " %s %d;", k, r.Crashes[k])
		}
		fmt.Fprintln(&b)
	}
	if len(r.NoRecovery) > 0 {
		fmt.Fprintf(&b, "\nFaults with no delivery after them: %s\n", strings.Join(r.NoRecovery, "; "))
	}
	if v := r.violations(); len(v) > 0 {
		fmt.Fprintf(&b, "\nViolations:\n\n")
		for _, s := range v {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestChaosAudit checks the audit itself on made-up logs: each invariant it must catch, and
// a clean log it must pass. It needs no cluster (go test -short -run TestChaosAudit).
func TestChaosAudit(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rules := map[string]endpointRule{
		"h":    {ID: "h", Healthy: true},
		"slow": {ID: "slow", Cap: 2},
		"rate": {ID: "rate", Rate: 2},
		"sub":  {ID: "sub", Types: []string{"order.*"}},
		"off":  {ID: "off", DisabledFrom: at(0)},
		"down": {ID: "down"},
	}
	ok := func(ep, id string, ms, inFlight int) hit {
		return hit{Endpoint: ep, ID: id, Type: "order.paid", Stamp: at(ms).Unix(), Start: at(ms), End: at(ms + 5), Status: 200, InFlight: inFlight}
	}
	clean := []hit{ok("h", "e1", 10, 1), ok("slow", "e2", 20, 1), ok("slow", "e3", 21, 2), ok("rate", "e4", 30, 1), ok("rate", "e5", 40, 1),
		ok("sub", "e6", 50, 1), ok("h", "e1", 3000, 1)}
	wants := []want{{pair: pair{"h", "e1"}}, {pair: pair{"slow", "e2"}}, {pair: pair{"slow", "e3"}}, {pair: pair{"rate", "e4"}},
		{pair: pair{"rate", "e5"}}, {pair: pair{"sub", "e6"}}, {pair: pair{"off", "e7"}}, {pair: pair{"down", "e8"}}, {pair: pair{"down", "e9"}}}
	outcomes := map[pair]outcome{{"off", "e7"}: {State: "skipped"}, {"down", "e8"}: {State: "dead_letter"},
		{"down", "e9"}: {State: "waiting_endpoint", Circuit: "open"}}
	faults := []fault{{Kind: "worker", Name: "herald-worker-1", Killed: at(1000), Back: at(2000)}}
	r := audit(rules, append([]hit(nil), clean...), wants, outcomes, faults, nil, nil, nil)
	if v := r.violations(); len(v) > 0 || r.Delivered != 6 || r.Skipped != 1 || r.DeadLetters != 1 || r.OnOpen != 1 || r.Repeats != 1 {
		t.Fatalf("clean log: violations %q, report %+v", v, r)
	}
	// An attempt made while PostgreSQL was down (killed before the request, back after it)
	// explains its repeat: its result could not be recorded.
	down := []fault{{Kind: "postgresql", Name: "postgresql", Killed: at(5), Back: at(2000)}}
	if r := audit(rules, append([]hit(nil), clean...), wants, outcomes, down, nil, nil, nil); len(r.violations()) > 0 || r.RepeatsBy["in flight at a kill of postgresql"] != 1 {
		t.Errorf("a repeat of an attempt made during an outage: violations %q, explained %v", r.violations(), r.RepeatsBy)
	}
	if r.Recovery["worker"] != time.Second || r.RecoveryFromKill["worker"] != 2*time.Second {
		t.Errorf("recovery %v / %v: want 1s from the restart, 2s from the kill", r.Recovery, r.RecoveryFromKill)
	}
	for _, c := range []struct {
		name     string
		hits     []hit
		outcomes map[pair]outcome
		faults   []fault
		want     string
	}{
		{"repeat without a fault", clean, outcomes, nil, "repeats with no fault"},
		{"repeat explained only by a serve kill", clean, outcomes, []fault{{Kind: "serve", Killed: at(1000), Back: at(2000)}}, "repeats with no fault"},
		{"repeat after an outage that was over", clean, outcomes, []fault{{Kind: "postgresql", Killed: at(1), Back: at(5)}}, "repeats with no fault"},
		{"cap", append(clean, ok("slow", "e2", 22, 3)), outcomes, faults, "cap exceeded"},
		{"rate", append(clean, ok("rate", "e4", 50, 1)), outcomes, faults, "rate limit exceeded"},
		{"unsubscribed", append(clean, hit{Endpoint: "sub", ID: "e10", Type: "invoice.created", Start: at(60), Status: 200, InFlight: 1}), outcomes, faults, "unsubscribed"},
		{"disabled", append(clean, ok("off", "e7", 70, 1)), outcomes, faults, "disabled endpoint"},
		{"lost", clean, map[pair]outcome{{"off", "e7"}: {State: "skipped"}, {"down", "e8"}: {State: "dead_letter"}}, faults, "lost"},
		{"waiting on a closed circuit", clean, map[pair]outcome{{"off", "e7"}: {State: "skipped"}, {"down", "e8"}: {State: "dead_letter"},
			{"down", "e9"}: {State: "waiting_endpoint", Circuit: "closed"}}, faults, "not settled"},
		{"delivered on record only", clean, map[pair]outcome{{"off", "e7"}: {State: "skipped"}, {"down", "e8"}: {State: "dead_letter"},
			{"down", "e9"}: {State: "delivered"}}, faults, "without a 2xx"},
	} {
		r := audit(rules, append([]hit(nil), c.hits...), wants, c.outcomes, c.faults, nil, nil, nil)
		if v := strings.Join(r.violations(), "\n"); !strings.Contains(v, c.want) {
			t.Errorf("%s: violations %q, want one about %q", c.name, v, c.want)
		}
	}
	// A request for an event sent elsewhere is a stray.
	sentTo := map[pair]bool{}
	for _, h := range clean {
		sentTo[pair{h.Endpoint, h.ID}] = true
	}
	if v := audit(rules, append([]hit(nil), clean...), wants, outcomes, faults, nil, sentTo, nil).violations(); len(v) > 0 {
		t.Errorf("strays: violations %q on the clean log", v)
	}
	delete(sentTo, pair{"sub", "e6"})
	if v := strings.Join(audit(rules, append([]hit(nil), clean...), wants, outcomes, faults, nil, sentTo, nil).violations(), "\n"); !strings.Contains(v, "not sent toward") {
		t.Errorf("stray: violations %q, want one about a request not sent toward its endpoint", v)
	}
	// A process that exited on its own explains a repeat like a kill, but is no fault of
	// the run's: the faults table leaves it out.
	exit := []fault{{Kind: "history", Name: "temporal-history", Killed: at(5), Back: at(2000), Exit: true}}
	r = audit(rules, append([]hit(nil), clean...), wants, outcomes, exit, nil, nil, nil)
	if v := r.violations(); len(v) > 0 || r.RepeatsBy["in flight at an exit of history"] != 1 || len(r.FaultsBy) != 0 {
		t.Errorf("an exit: violations %q, explained %v, faults %v", v, r.RepeatsBy, r.FaultsBy)
	}
	if r.Crashes["temporal-history"] != 1 {
		t.Errorf("an exit: crashes %v, want temporal-history counted once", r.Crashes)
	}
	// A workflow task of the delivery that failed between the two requests explains the
	// repeat, whether its id names the endpoint (fan-out) or not; one of the same event's
	// delivery to another endpoint, or one after the repeat, does not.
	for _, c := range []struct {
		name   string
		failed map[pair][]taskEvent
		ok     bool
	}{
		{"fan-out id", map[pair][]taskEvent{{"h", "e1"}: {{At: at(500)}}}, true},
		{"direct id", map[pair][]taskEvent{{"", "e1"}: {{At: at(500)}}}, true},
		{"another endpoint's", map[pair][]taskEvent{{"slow", "e1"}: {{At: at(500)}}}, false},
		{"after the repeat", map[pair][]taskEvent{{"h", "e1"}: {{At: at(3500)}}}, false},
		{"before the first request", map[pair][]taskEvent{{"h", "e1"}: {{At: at(5)}}}, false},
		{"an update aborted just before the first request", map[pair][]taskEvent{{"h", "e1"}: {{At: at(5), Aborted: true}}}, true},
		{"an update aborted long before", map[pair][]taskEvent{{"h", "e1"}: {{At: at(10).Add(-abortLead - time.Millisecond), Aborted: true}}}, false},
	} {
		r := audit(rules, append([]hit(nil), clean...), wants, outcomes, nil, nil, nil, c.failed)
		if explained := r.RepeatsBy["its workflow task failed (logged by the worker)"]+r.RepeatsBy["the server aborted an update to it (logged by history)"] == 1; explained != c.ok || (len(r.violations()) == 0) != c.ok {
			t.Errorf("task failed, %s: explained %v, violations %q; want explained %v", c.name, r.RepeatsBy, r.violations(), c.ok)
		}
	}
	// A replay the client asked for explains a repeat.
	r = audit(rules, append([]hit(nil), clean...), wants, outcomes, nil, map[pair][]time.Time{{"h", "e1"}: {at(100)}}, nil, nil)
	if v := r.violations(); len(v) > 0 || r.RepeatsBy["replay asked for by the client"] != 1 {
		t.Errorf("replayed: violations %q, repeats %v", v, r.RepeatsBy)
	}
}

// abortLead is how long before a request an update to its delivery that the server aborted
// may be logged and still explain its repeat.
const abortLead = time.Second

// taskEvent is a workflow task of a delivery that failed (a Herald worker's log), or an
// update to it that the server aborted (Aborted: the history service's log).
type taskEvent struct {
	At      time.Time
	Aborted bool
}

// taskFailures reads, in the Herald workers' logs (text, as `herald worker` writes them),
// when a workflow task of a delivery failed, and in the history service's (JSON lines)
// when it aborted an update to one, by endpoint and event (Endpoint "" for a delivery
// whose id names no endpoint).
func taskFailures(logs ...io.Reader) map[pair][]taskEvent {
	out := map[pair][]taskEvent{}
	add := func(id string, e taskEvent) {
		if _, ep, ev, ok := herald.ParseFanoutDeliveryID(id); ok {
			out[pair{ep, ev}] = append(out[pair{ep, ev}], e)
		} else if _, ev, ok := herald.ParseDeliveryID(id); ok {
			out[pair{"", ev}] = append(out[pair{"", ev}], e)
		}
	}
	for _, l := range logs {
		sc := bufio.NewScanner(l)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, `msg="Failed to process workflow task."`):
				if at, err := time.Parse(time.RFC3339Nano, logField(line, "time")); err == nil {
					add(logField(line, "WorkflowID"), taskEvent{At: at})
				}
			case strings.HasPrefix(line, "{") && strings.Contains(line, "workflow update was aborted"):
				var j struct {
					TS    time.Time `json:"ts"`
					WfID  string    `json:"wf-id"`
					Error string    `json:"error"`
				}
				if json.Unmarshal([]byte(line), &j) == nil && j.Error == "workflow update was aborted" {
					add(j.WfID, taskEvent{At: j.TS, Aborted: true})
				}
			}
		}
	}
	return out
}

// logField is the value of key in a slog text line ("" when absent), unquoted.
func logField(line, key string) string {
	i := strings.Index(" "+line, " "+key+"=")
	if i < 0 {
		return ""
	}
	v := line[i+len(key)+1:]
	if strings.HasPrefix(v, `"`) {
		if q, err := strconv.QuotedPrefix(v); err == nil {
			u, _ := strconv.Unquote(q)
			return u
		}
		return ""
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}

func TestTaskFailures(t *testing.T) {
	logs := strings.Join([]string{
		`time=2026-12-05T06:35:27.983Z level=WARN msg="Failed to process workflow task." Namespace=herald-cluster TaskQueue=herald WorkflowType=Delivery WorkflowID=delivery:evt_a RunID=r1 Attempt=1 Error="history_events: premature end of stream"`,
		`time=2026-12-05T06:35:28.040Z level=WARN msg="Failed to process workflow task." WorkflowType=Delivery WorkflowID=delivery+chaos-ta@chaos-t:evt_b Attempt=1`,
		`time=2026-12-05T06:35:29.000Z level=WARN msg="Failed to process workflow task." WorkflowType=Endpoint WorkflowID=endpoint:chaos-h1 Attempt=1`,
		`time=2026-12-05T06:35:30.000Z level=WARN msg="Failed to poll for task." WorkflowID=delivery:evt_c`,
		`time=garbled level=WARN msg="Failed to process workflow task." WorkflowID=delivery:evt_d`,
		`time=2026-12-05T06:35:31.000Z level=WARN msg="Failed to process workflow task." WorkflowID="delivery@acme:evt e"`,
		`{"level":"error","ts":"2026-12-05T06:58:26.513Z","msg":"service failures","operation":"UpdateWorkflowExecution","grpc_code":"Unavailable","wf-id":"delivery:evt_f","wf-run-id":"","error":"workflow update was aborted"}`,
		`{"level":"error","ts":"2026-12-05T06:58:27.000Z","msg":"service failures","operation":"UpdateWorkflowExecution","wf-id":"delivery:evt_g","error":"workflow execution already completed"}`,
	}, "\n")
	got := taskFailures(strings.NewReader(logs))
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339Nano, s); return v }
	want := map[pair][]taskEvent{
		{"", "evt_a"}:         {{At: at("2026-12-05T06:35:27.983Z")}},
		{"chaos-ta", "evt_b"}: {{At: at("2026-12-05T06:35:28.040Z")}},
		{"", "evt e"}:         {{At: at("2026-12-05T06:35:31.000Z")}},
		{"", "evt_f"}:         {{At: at("2026-12-05T06:58:26.513Z"), Aborted: true}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("taskFailures = %v, want %v", got, want)
	}
}
