package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/heraldhq/herald"
)

// spillSignal is one spill a stats shard sent to an endpoint workflow.
type spillSignal struct {
	Endpoint string
	Counts   herald.SpilledCounts
}

// spillRecorder answers a stats shard's spill signals: it records them, fails those to
// the endpoints in gone (as the server does for a workflow that is not running) and
// tracks how many were in flight at once.
type spillRecorder struct {
	sent     tape[spillSignal]
	gone     map[string]bool
	mu       sync.Mutex
	inFlight int
	maxIn    int
}

func newStatsEnv(t *testing.T, gone ...string) (*testsuite.TestWorkflowEnvironment, *spillRecorder) {
	t.Helper()
	env := newTestEnv()
	env.RegisterWorkflowWithOptions(StatsWorkflow, workflow.RegisterOptions{Name: herald.StatsWorkflow})
	rec := &spillRecorder{gone: map[string]bool{}}
	for _, id := range gone {
		rec.gone[id] = true
	}
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", herald.SignalCounts, mock.Anything).Return(
		func(_, workflowID, _, _ string, arg any) error {
			c, ok := arg.(herald.SpilledCounts)
			if !ok {
				t.Errorf("spill to %s carries %T, want herald.SpilledCounts", workflowID, arg)
			}
			id, _ := herald.ParseEndpointWorkflowID(workflowID)
			rec.mu.Lock()
			rec.inFlight++
			rec.maxIn = max(rec.maxIn, rec.inFlight)
			rec.mu.Unlock()
			// Long enough that signals sent in one workflow task overlap here.
			time.Sleep(5 * time.Millisecond)
			rec.mu.Lock()
			rec.inFlight--
			rec.mu.Unlock()
			rec.sent.add(spillSignal{Endpoint: id, Counts: c})
			if rec.gone[id] {
				return errors.New("unknown external workflow execution")
			}
			return nil
		})
	return env, rec
}

// spills are the spilled endpoints, sorted, in one list per spill, and the spills'
// numbers, in order (the signals of one spill overlap in flight: their order here is not
// the order they were sent).
func (r *spillRecorder) spills() ([][]string, []int64) {
	sent := r.sent.all()
	slices.SortStableFunc(sent, func(a, b spillSignal) int {
		if a.Counts.Spill != b.Counts.Spill {
			return cmp.Compare(a.Counts.Spill, b.Counts.Spill)
		}
		return strings.Compare(a.Endpoint, b.Endpoint)
	})
	var out [][]string
	var nums []int64
	for i, s := range sent {
		if i == 0 || s.Counts.Spill != sent[i-1].Counts.Spill {
			out = append(out, nil)
			nums = append(nums, s.Counts.Spill)
		}
		out[len(out)-1] = append(out[len(out)-1], s.Endpoint)
	}
	return out, nums
}

// countsOf is a batch that counts n attempts, the last at at, for each of ids.
func countsOf(n int, at time.Time, ids ...string) []herald.EndpointCounts {
	var b []herald.EndpointCounts
	for _, id := range ids {
		b = append(b, herald.EndpointCounts{Endpoint: id, Counts: herald.Report{Attempts: n, Successes: n, LastAttemptAt: at, LastOutcome: "200 OK"}})
	}
	return b
}

func ids(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%03d", prefix, i))
	}
	return out
}

// A shard past its capacity hands the endpoints it heard from least recently (ties in id
// order) to their endpoint workflows, down to three quarters of the capacity; a spill to
// an endpoint that is gone is dropped and the shard goes on; it continues as new with at
// most its capacity, the clock and the next spill number.
func TestStatsShardSpillsLeastRecentlyTouched(t *testing.T) {
	env, rec := newStatsEnv(t, "e001")
	at := testStart.Add(time.Minute)
	var afterFirst, afterSecond []herald.EndpointCounts
	query := func(into *[]herald.EndpointCounts) {
		v, err := env.QueryWorkflow(herald.QueryStats, ids("e", 0, 12))
		if err == nil {
			err = v.Get(into)
		}
		if err != nil {
			t.Errorf("query: %v", err)
		}
	}
	send := func(d time.Duration, b []herald.EndpointCounts) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalStats, b) }, d)
	}
	send(time.Second, countsOf(1, at, ids("e", 0, 6)...)) // tick 1: e000..e005
	send(2*time.Second, countsOf(1, at, ids("e", 6, 8)...))
	// tick 3: nine endpoints, one past the capacity of 8: e000, e001, e002 go.
	send(3*time.Second, countsOf(2, at, "e008"))
	env.RegisterDelayedCallback(func() { query(&afterFirst) }, 4*time.Second)
	// tick 4: e003 counts again, three new ones: nine again; e004, e005 (tick 1), e006 (tick 2) go.
	send(5*time.Second, countsOf(1, at.Add(time.Minute), "e003", "e009", "e010", "e011"))
	env.RegisterDelayedCallback(func() { query(&afterSecond) }, 6*time.Second)
	env.RegisterDelayedCallback(func() {
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 0)
		env.SignalWorkflow(herald.SignalStats, countsOf(1, at, "e011"))
	}, 7*time.Second)
	env.ExecuteWorkflow(herald.StatsWorkflow, herald.StatsInput{Capacity: 8})

	_, next := continuedAsNew[herald.StatsInput](t, env)
	spills, nums := rec.spills()
	if want := [][]string{{"e000", "e001", "e002"}, {"e004", "e005", "e006"}}; fmt.Sprint(spills) != fmt.Sprint(want) {
		t.Fatalf("spilled %v, want %v", spills, want)
	}
	for _, s := range rec.sent.all() {
		if s.Counts.Counts.Attempts != 1 || !s.Counts.Counts.LastAttemptAt.Equal(at) {
			t.Errorf("spill to %s = %+v, want its one attempt at %s", s.Endpoint, s.Counts, at)
		}
	}
	if nums[0] < testStart.UnixNano() || nums[1] <= nums[0] {
		t.Errorf("spill numbers %v: want them from the start time on, increasing", nums)
	}
	var kept []string
	for _, e := range next.Entries {
		kept = append(kept, e.Endpoint)
	}
	if want := []string{"e003", "e007", "e008", "e009", "e010", "e011"}; !slices.Equal(kept, want) {
		t.Fatalf("continues with %v, want %v (sorted, at most the capacity)", kept, want)
	}
	if e := next.Entries[0].Report(); e.Attempts != 2 || !e.LastAttemptAt.Equal(at.Add(time.Minute)) {
		t.Errorf("e003 continues with %+v, want 2 attempts, the last at %s", e, at.Add(time.Minute))
	}
	if e := next.Entries[5].Report(); e.Attempts != 2 {
		t.Errorf("e011 continues with %+v, want 2 attempts", e)
	}
	if next.Capacity != 8 || next.Clock != 5 || next.NextSpill <= nums[1] {
		t.Errorf("continues with capacity %d, clock %d, next spill %d; want 8, 5, past %d", next.Capacity, next.Clock, next.NextSpill, nums[1])
	}
	// The answers between the spills: what was spilled is no longer there, what is there
	// says from which spill on the endpoint would hold it.
	names := func(cs []herald.EndpointCounts) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Endpoint)
			if c.Spill <= nums[0] {
				t.Errorf("answer %+v: want a spill number past the spill made (%d)", c, nums[0])
			}
		}
		return out
	}
	if got, want := names(afterFirst), ids("e", 3, 9); !slices.Equal(got, want) {
		t.Errorf("after the first spill the shard answers for %v, want %v", got, want)
	}
	if got, want := names(afterSecond), []string{"e003", "e007", "e008", "e009", "e010", "e011"}; !slices.Equal(got, want) {
		t.Errorf("after the second spill the shard answers for %v, want %v", got, want)
	}
}

// A shard that starts with a 0.1.0 shard's state (every endpoint it counted: here 1,000,
// some 100 KB) spills it down to three quarters of its budget (herald.StatsBudget),
// statsSpillBatch signals at a time.
func TestStatsShardSpillsInBatches(t *testing.T) {
	env, rec := newStatsEnv(t)
	const n = 1000
	old := countsOf(3, testStart, ids("old-", 0, n)...)
	env.RegisterDelayedCallback(func() {
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 0)
		env.SignalWorkflow(herald.SignalStats, countsOf(1, testStart, fmt.Sprintf("old-%03d", n-1)))
	}, time.Minute)
	env.ExecuteWorkflow(herald.StatsWorkflow, herald.StatsInput{Counts: old})

	_, next := continuedAsNew[herald.StatsInput](t, env)
	// What the spill leaves: the last endpoints by id, as many as fit in three quarters.
	low := 0
	for size := 0; ; low++ {
		e := herald.NewStatsEntry(fmt.Sprintf("old-%03d", n-1-low), old[0].Counts, 0)
		if size += encodedSize(e); size > herald.StatsBudget-herald.StatsBudget/4 {
			break
		}
	}
	spills, _ := rec.spills()
	if want := ids("old-", 0, n-low); len(spills) != 1 || !slices.Equal(spills[0], want) {
		t.Fatalf("spilled %d times (%d endpoints first), want once the first %d by id", len(spills), len(spills[0]), len(want))
	}
	if rec.maxIn > statsSpillBatch || rec.maxIn < 2 {
		t.Errorf("%d spill signals were in flight at once, want at most %d (and more than one)", rec.maxIn, statsSpillBatch)
	}
	if len(next.Entries) != low || next.Entries[0].Endpoint != fmt.Sprintf("old-%03d", n-low) || len(next.Counts) != 0 {
		t.Fatalf("continues with %d entries from %q and %d old counts, want %d entries from old-%03d", len(next.Entries), next.Entries[0].Endpoint, len(next.Counts), low, n-low)
	}
	if r := next.Entries[low-1].Report(); r.Attempts != 4 {
		t.Errorf("old-%03d continues with %+v, want 4 attempts", n-1, r)
	}
	if next.Capacity != 0 || next.Budget != herald.StatsBudget {
		t.Errorf("continues with capacity %d and budget %d, want 0 and %d", next.Capacity, next.Budget, herald.StatsBudget)
	}
	t.Logf("%d endpoints of a 0.1.0 shard: %d spilled, %d kept", n, n-low, low)
}

// A shard holds entries up to its budget of bytes, however many: past it, it spills the
// least recently touched until three quarters of the budget are left, counting each entry
// at its size (a long outcome weighs more than a short one).
func TestStatsShardSpillsPastItsBudget(t *testing.T) {
	env, rec := newStatsEnv(t)
	at := testStart.Add(time.Minute)
	small := countsOf(1, at, ids("s", 0, 40)...)
	big := countsOf(1, at, ids("b", 0, 4)...)
	for i := range big {
		big[i].Counts.LastOutcome = "network: " + strings.Repeat("x", 100)
	}
	weigh := func(cs []herald.EndpointCounts) int {
		w := 0
		for _, c := range cs {
			w += encodedSize(herald.NewStatsEntry(c.Endpoint, c.Counts, 3))
		}
		return w
	}
	// The budget holds the 40 small ones (ticks 1 and 2) and two of the big ones; the
	// four big ones at tick 3 take it past, and the spill takes small ones first.
	budget := weigh(small) + weigh(big[:2])
	var kept []herald.EndpointCounts
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalStats, small[:20]) }, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalStats, small[20:]) }, 2*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(herald.SignalStats, big) }, 3*time.Second)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(herald.QueryStats, append(ids("s", 0, 40), ids("b", 0, 4)...))
		if err == nil {
			err = v.Get(&kept)
		}
		if err != nil {
			t.Error(err)
		}
	}, 4*time.Second)
	env.RegisterDelayedCallback(func() {
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 0)
		env.SignalWorkflow(herald.SignalStats, countsOf(1, at, "s039"))
	}, 5*time.Second)
	env.ExecuteWorkflow(herald.StatsWorkflow, herald.StatsInput{Budget: budget})

	_, next := continuedAsNew[herald.StatsInput](t, env)
	spills, _ := rec.spills()
	if len(spills) != 1 {
		t.Fatalf("spilled %d times, want once", len(spills))
	}
	// Tick order, then id order: s000.. go first, until what is left fits in 3/4.
	left := weigh(small) + weigh(big)
	var want []string
	for i := 0; left > budget-budget/4; i++ {
		want = append(want, small[i].Endpoint)
		left -= weigh(small[i : i+1])
	}
	if !slices.Equal(spills[0], want) {
		t.Fatalf("spilled %v, want %v", spills[0], want)
	}
	if len(kept) != 44-len(want) {
		t.Errorf("after the spill the shard answers for %d endpoints, want %d", len(kept), 44-len(want))
	}
	if next.Budget != budget || next.Capacity != 0 {
		t.Errorf("continues with budget %d and capacity %d, want %d and none", next.Budget, next.Capacity, budget)
	}
	size := 0
	for _, e := range next.Entries {
		size += encodedSize(e)
	}
	if size > budget {
		t.Errorf("continues with %d bytes of entries, want at most the budget %d", size, budget)
	}
	t.Logf("budget %d bytes: 44 endpoints, %d spilled, %d kept (%d bytes)", budget, len(want), len(next.Entries), size)
}

// While a spill is in flight the shard still answers for the endpoints it is sending,
// numbered with the spill, and for an endpoint counted again since, numbered with the next.
func TestStatsShardAnswersSpillInFlight(t *testing.T) {
	s := newStatsShard(herald.StatsInput{Capacity: 4}, 1000, true)
	s.add(countsOf(1, testStart, "a", "b"))
	s.spilling = []herald.EndpointCounts{{Endpoint: "a", Counts: herald.Report{Attempts: 5}, Spill: 1000}}
	s.next = 1001
	got := s.counts([]string{"a", "b", "c"})
	want := []herald.EndpointCounts{
		{Endpoint: "a", Counts: herald.Report{Attempts: 5}, Spill: 1000},
		{Endpoint: "a", Counts: s.entries[0].Report(), Spill: 1001},
		{Endpoint: "b", Counts: s.entries[1].Report(), Spill: 1001},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("answer = %+v, want %+v", got, want)
	}
	// The endpoint read after the shard: what it has merged is left out, once.
	for _, tc := range []struct {
		merged int64
		want   int
	}{{0, 6}, {999, 6}, {1000, 1}, {1001, 0}} {
		var r herald.Report
		for _, c := range got[:2] {
			if !c.IncludedIn(tc.merged) {
				r.Merge(c.Counts)
			}
		}
		if r.Attempts != tc.want {
			t.Errorf("endpoint merged spill %d: %d attempts from the shard, want %d", tc.merged, r.Attempts, tc.want)
		}
	}
}

// A shard as full as its budget lets it be continues as new with an input under 48 KB
// (the singleton limit is 64 KB), whatever its entries: the longest endpoint ids, every
// counter large and the longest outcome it keeps, in characters that encode longest ("<"
// takes 6 bytes in JSON, "é" 2). Entries of ordinary ids and outcomes fit by the hundred.
func TestStatsShardInputBound(t *testing.T) {
	long := strings.Repeat("é<", 100) // longer than the shard keeps
	worst := func(i int) herald.EndpointCounts {
		big := 1 << 40
		return herald.EndpointCounts{Endpoint: fmt.Sprintf("%03d%s", i, strings.Repeat("x", 125)), Counts: herald.Report{
			Attempts: big, Successes: big, Failures: big, RetryAfterHonoured: big, RetryAfterCapped: big,
			RetryAfterIgnored: big, RetryAfterBackpressure: big,
			LastAttemptAt: time.Date(2262, 1, 1, 0, 0, 0, 999999999, time.UTC), LastOutcome: "network: " + long,
		}}
	}
	ordinary := func(i int) herald.EndpointCounts {
		return herald.EndpointCounts{Endpoint: fmt.Sprintf("ep_01jd%020d", i), Counts: herald.Report{
			Attempts: 1234, Successes: 1200, Failures: 34, LastAttemptAt: testStart, LastOutcome: "204 No Content",
		}}
	}
	for _, tc := range []struct {
		name    string
		entry   func(int) herald.EndpointCounts
		atLeast int
	}{{"the longest", worst, 30}, {"ordinary", ordinary, 300}} {
		s := newStatsShard(herald.StatsInput{}, 1<<62, true)
		s.clock = 1 << 40
		var full *statsShard
		for i := 0; ; i++ {
			c := tc.entry(i)
			if err := herald.ValidateEndpointID(c.Endpoint); err != nil {
				t.Fatal(err)
			}
			prev := *s
			prev.entries = slices.Clone(s.entries)
			s.merge(c)
			if s.over() {
				full = &prev
				break
			}
		}
		for _, e := range full.entries {
			if len(e.LastOutcome) > herald.MaxStatsOutcome || strings.ContainsRune(e.LastOutcome, '\uFFFD') {
				t.Fatalf("outcome kept as %q (%d bytes), want at most %d bytes cut at a character", e.LastOutcome, len(e.LastOutcome), herald.MaxStatsOutcome)
			}
		}
		p, err := converter.GetDefaultDataConverter().ToPayloads(full.input())
		if err != nil {
			t.Fatal(err)
		}
		size := 0
		for _, pl := range p.GetPayloads() {
			size += len(pl.GetData())
			for k, v := range pl.GetMetadata() {
				size += len(k) + len(v)
			}
		}
		t.Logf("%s entries: a full shard holds %d and continues as new with %d bytes (%d counted)", tc.name, len(full.entries), size, full.size)
		if size >= 48<<10 || len(full.entries) < tc.atLeast {
			t.Errorf("%s entries: a full shard holds %d and its input is %d bytes: want at least %d, under 48 KB", tc.name, len(full.entries), size, tc.atLeast)
		}
	}
}

// An endpoint workflow adds the counts its stats shard hands over to its own counters,
// shows them with the newest spill it holds, and continues as new with them, the last
// spill included even when it comes in the workflow task that continues as new.
func TestEndpointKeepsSpilledCounts(t *testing.T) {
	env, _ := newGuardEnv(t)
	register(t, env, nil)
	at := testStart.Add(time.Minute)
	var shown herald.EndpointState
	spill := func(n int, spill int64, outcome string) {
		env.SignalWorkflow(herald.SignalCounts, herald.SpilledCounts{
			Counts: herald.Report{Attempts: n, Failures: n, LastAttemptAt: at.Add(time.Duration(spill) * time.Second), LastOutcome: outcome},
			Spill:  spill,
		})
	}
	env.RegisterDelayedCallback(func() { spill(2, 10, "503 Service Unavailable") }, 5*time.Second)
	env.RegisterDelayedCallback(func() { spill(3, 12, "timeout") }, 6*time.Second)
	env.RegisterDelayedCallback(func() { shown = queryState(t, env) }, 7*time.Second)
	env.RegisterDelayedCallback(func() {
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 0)
		spill(1, 14, "network: refused")
	}, 8*time.Second)
	env.ExecuteWorkflow(herald.EndpointWorkflow, herald.EndpointInput{ID: testEndpointID})

	if c := shown.Counters; c.Attempts != 5 || c.Failures != 5 || c.LastOutcome != "timeout" || shown.CountsSpill != 12 {
		t.Errorf("state shows counters %+v, spill %d; want 5 failed attempts, the last a timeout, spill 12", c, shown.CountsSpill)
	}
	_, next := continuedAsNew[herald.EndpointInput](t, env)
	if c := next.Counts; c.Attempts != 6 || c.LastOutcome != "network: refused" || next.CountsSpill != 14 {
		t.Errorf("continues with counts %+v, spill %d; want 6 attempts, the last refused, spill 14", c, next.CountsSpill)
	}
}

// A spill stops once the history is past statsSpillHistoryLimit: what it has not sent goes
// back, sorted among the entries kept, and the run continues as new with it.
func TestStatsShardSpillStopsOnALongHistory(t *testing.T) {
	env, rec := newStatsEnv(t)
	in := herald.StatsInput{Budget: 3000} // 300 entries take some 9 KB
	for i, id := range ids("big-", 0, 300) {
		// Every other endpoint touched later: the spill takes endpoints from all over.
		in.Entries = append(in.Entries, herald.NewStatsEntry(id, herald.Report{Attempts: i + 1}, int64(i%2)))
	}
	env.SetCurrentHistoryLength(statsSpillHistoryLimit + 1)
	env.ExecuteWorkflow(herald.StatsWorkflow, in)

	_, next := continuedAsNew[herald.StatsInput](t, env)
	if n := len(rec.sent.all()); n != 0 {
		t.Errorf("%d spill signals sent past the history limit, want none", n)
	}
	var got []string
	for i, e := range next.Entries {
		got = append(got, e.Endpoint)
		if e.Attempts != i+1 {
			t.Errorf("%s continues with %d attempts, want %d", e.Endpoint, e.Attempts, i+1)
		}
	}
	if want := ids("big-", 0, 300); !slices.Equal(got, want) {
		t.Errorf("continues with %d entries (%v…), want all 300 sorted", len(got), got[:min(4, len(got))])
	}
}
