package policy

import (
	"slices"
	"testing"
	"time"
)

func TestJudgeLink(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	const grace = 10 * time.Second
	for _, c := range []struct {
		presence string
		ago      time.Duration
		want     LinkFate
	}{
		{LinkRunning, 0, FateWait},
		{LinkRunning, time.Hour, FateWait},
		{LinkClosed, 0, FateTurn},
		{LinkMissing, 0, FateStarting},
		{LinkMissing, grace - time.Millisecond, FateStarting},
		{LinkMissing, grace, FatePassed},
		{LinkUnknown, time.Hour, FateStarting},
		{"", time.Hour, FateStarting},
	} {
		if got := JudgeLink(c.presence, at, at.Add(c.ago), grace); got != c.want {
			t.Errorf("%s %s ago: %v, want %v", c.presence, c.ago, got, c.want)
		}
	}
}

func TestChainWalk(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 10, 0, time.UTC)
	const grace = 10 * time.Second
	link := func(id string, ago time.Duration) ChainLink { return ChainLink{ID: id, At: now.Add(-ago)} }
	ids := func(ls []ChainLink) []string {
		var s []string
		for _, l := range ls {
			s = append(s, l.ID)
		}
		return s
	}
	for _, c := range []struct {
		name     string
		links    []ChainLink
		base     string
		where    map[string]string
		asked    []string
		starting []string
		wantBase string
		closed   bool
		ready    bool
	}{
		{name: "empty key", ready: true},
		{name: "no links, a base", base: "s", wantBase: "s"},
		{name: "tail running", links: []ChainLink{link("t", time.Second)}, base: "s",
			where: map[string]string{"t": LinkRunning}, asked: []string{"t"}, wantBase: "t"},
		{name: "tail closed", links: []ChainLink{link("t", time.Second)}, base: "s",
			where: map[string]string{"t": LinkClosed}, asked: []string{"t"}, wantBase: "t", closed: true, ready: true},
		{name: "appended in this task: not asked", links: []ChainLink{link("u", 0), link("t", 0)}, base: "s",
			starting: []string{"u", "t"}, wantBase: "s"},
		{name: "burst: this task's and the one started before", links: []ChainLink{link("u", 0), link("t", time.Second), link("r", 2*time.Second)}, base: "q",
			where: map[string]string{"t": LinkRunning}, asked: []string{"t"}, starting: []string{"u"}, wantBase: "t"},
		{name: "missing, young: kept", links: []ChainLink{link("t", time.Second), link("r", 2*time.Second)}, base: "q",
			where: map[string]string{"t": LinkMissing, "r": LinkRunning}, asked: []string{"t", "r"}, starting: []string{"t"}, wantBase: "r"},
		{name: "missing past the grace: passed over", links: []ChainLink{link("t", grace), link("r", 2*grace)}, base: "q",
			where: map[string]string{"t": LinkMissing, "r": LinkMissing}, asked: []string{"t", "r"}, wantBase: "q"},
		{name: "unknown: kept for the delivery to ask", links: []ChainLink{link("t", time.Hour)}, base: "q",
			where: map[string]string{"t": LinkUnknown}, asked: []string{"t"}, starting: []string{"t"}, wantBase: "q"},
		{name: "asked in this task already: not again", links: []ChainLink{{ID: "t", At: now.Add(-time.Second), Asked: now}, link("r", 2*time.Second)}, base: "q",
			where: map[string]string{"r": LinkRunning}, asked: []string{"r"}, starting: []string{"t"}, wantBase: "r"},
		{name: "all passed, no base", links: []ChainLink{link("t", grace)},
			where: map[string]string{"t": LinkMissing}, asked: []string{"t"}, ready: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			p := ChainWalk(c.links, c.base, now, grace, func(id string) string {
				asked = append(asked, id)
				return c.where[id]
			})
			if !slices.Equal(asked, c.asked) {
				t.Errorf("asked %v, want %v", asked, c.asked)
			}
			if got := ids(p.Starting); !slices.Equal(got, c.starting) {
				t.Errorf("starting %v, want %v", got, c.starting)
			}
			if p.Base != c.wantBase || p.Closed != c.closed || p.Ready() != c.ready {
				t.Errorf("base %q closed %v ready %v, want %q %v %v", p.Base, p.Closed, p.Ready(), c.wantBase, c.closed, c.ready)
			}
		})
	}
}
