package herald

import (
	"strings"
	"testing"
)

func TestValidateOrderingKey(t *testing.T) {
	for _, k := range []string{"a", "customer:42", "order-7_x.y@z", strings.Repeat("k", MaxOrderingKeyLen)} {
		if err := ValidateOrderingKey(k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	for _, k := range []string{"", "a b", "a'b", `a"b`, "a/b", "é", "a\x00", strings.Repeat("k", MaxOrderingKeyLen+1)} {
		if err := ValidateOrderingKey(k); err == nil {
			t.Errorf("%q: accepted", k)
		}
	}
}

func TestValidateOrderingOnDeadLetter(t *testing.T) {
	for _, v := range []string{"", OrderingBlock, OrderingSkip} {
		if err := ValidateOrderingOnDeadLetter(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	if err := (Overrides{OrderingOnDeadLetter: "drop"}).ValidateChange(); err == nil {
		t.Error("drop: accepted")
	}
}

// FuzzValidateOrderingKey: an accepted key is within the grammar, so that the sequencer's
// workflow id it makes parses back to the same endpoint and key.
func FuzzValidateOrderingKey(f *testing.F) {
	for _, s := range []string{"customer:42", "", "a b", "x@y.z", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if ValidateOrderingKey(k) != nil {
			return
		}
		if len(k) == 0 || len(k) > MaxOrderingKeyLen {
			t.Fatalf("accepted %d bytes", len(k))
		}
		for _, r := range k {
			if r > 0x7e || r <= ' ' || strings.ContainsRune(`'"\/`+"`", r) {
				t.Fatalf("accepted %q", k)
			}
		}
		id := SequencerWorkflowID("t1", "ep", k)
		if rest, ok := strings.CutPrefix(id, "ordering:t1:ep:"); !ok || rest != k {
			t.Fatalf("id %q does not end with the key %q", id, k)
		}
	})
}
