package worker

import (
	"testing"
	"time"
)

func TestStickyTimeoutDefault(t *testing.T) {
	var o Options
	o.setDefaults()
	if o.StickyTimeout != DefaultStickyTimeout {
		t.Errorf("StickyTimeout %s, want the default %s", o.StickyTimeout, DefaultStickyTimeout)
	}
	o = Options{StickyTimeout: 7 * time.Second}
	o.setDefaults()
	if o.StickyTimeout != 7*time.Second {
		t.Errorf("StickyTimeout %s, want the 7s given", o.StickyTimeout)
	}
	o = Options{StickyTimeout: -time.Second}
	o.setDefaults()
	if o.StickyTimeout != DefaultStickyTimeout {
		t.Errorf("a negative StickyTimeout became %s, want the default %s", o.StickyTimeout, DefaultStickyTimeout)
	}
}
