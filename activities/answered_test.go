package activities

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

func TestAnsweredRecallsWithinItsTime(t *testing.T) {
	var m answered
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	m.store("run/1/0/1", herald.Result{Number: 1, Outcome: herald.OutcomeDelivered}, t0)
	if res, ok := m.recall("run/1/0/1", t0.Add(AnsweredFor)); !ok || res.Outcome != herald.OutcomeDelivered {
		t.Fatalf("recall at the end of its time: %v %v, want the delivered result", res, ok)
	}
	if _, ok := m.recall("run/1/0/1", t0.Add(AnsweredFor+time.Millisecond)); ok {
		t.Fatal("recalled after its time")
	}
	if _, ok := m.recall("run/2/0/1", t0); ok {
		t.Fatal("recalled a key never stored")
	}
	if _, ok := m.recall("", t0); ok {
		t.Fatal("recalled the empty key (outside an activity)")
	}
	m.store("", herald.Result{}, t0)
	if m.size() != 1 {
		t.Fatalf("size %d after storing under the empty key, want 1", m.size())
	}
}

// TestAnsweredBounded crosses both bounds with scaled-down ones: never more than max
// remembered, the oldest forgotten first, and expired ones dropped as new ones come.
func TestAnsweredBounded(t *testing.T) {
	m := answered{max: 100, ttl: time.Second}
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		m.store(fmt.Sprint(i), herald.Result{Number: i}, t0)
		if m.size() > 100 {
			t.Fatalf("%d remembered after %d stored, want at most 100", m.size(), i+1)
		}
	}
	if _, ok := m.recall("899", t0); ok {
		t.Fatal("the 900th of 1,000 is still remembered with room for 100")
	}
	if res, ok := m.recall("900", t0); !ok || res.Number != 900 {
		t.Fatal("the 100 newest are not all remembered")
	}
	if len(m.order) > 100 {
		t.Fatalf("order holds %d keys, want at most 100", len(m.order))
	}
	// A second later they have all expired: the next store drops them.
	m.store("late", herald.Result{}, t0.Add(2*time.Second))
	if m.size() != 1 {
		t.Fatalf("%d remembered after all expired, want 1", m.size())
	}
	// The same key stored again stays one entry.
	m.store("late", herald.Result{Number: 7}, t0.Add(2*time.Second))
	if m.size() != 1 || len(m.order) != 1 {
		t.Fatalf("a key stored twice: %d entries, %d in order, want 1 and 1", m.size(), len(m.order))
	}
}
