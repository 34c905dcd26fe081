package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress shows how far a long command has got, on standard error: a bar redrawn in
// place on a terminal, or a plain line every interval otherwise (a log, a CI job).
type progress struct {
	w        io.Writer
	tty      bool
	what     string // the unit counted, e.g. "lines"
	total    int    // 0: unknown
	interval time.Duration

	mu    sync.Mutex
	start time.Time
	last  time.Time // of the last line or redraw
	done  int
}

// newProgress returns a progress of total units (0 if unknown) written to w, drawn as a
// bar if w is a terminal.
func newProgress(w io.Writer, what string, total int, interval time.Duration) *progress {
	now := time.Now()
	return &progress{w: w, tty: isTerminal(w), what: what, total: total, interval: interval, start: now, last: now}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// set records that done units are done, and shows it if it is time to.
func (p *progress) set(done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = done
	now := time.Now()
	every := p.interval
	if p.tty {
		every = 100 * time.Millisecond
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	p.show(now)
}

// finish shows the final count and ends the bar's line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		p.show(time.Now())
		fmt.Fprintln(p.w)
	}
}

// rate is the units done per second so far.
func (p *progress) rate(now time.Time) float64 {
	secs := now.Sub(p.start).Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(p.done) / secs
}

func (p *progress) show(now time.Time) {
	rate := p.rate(now)
	if !p.tty {
		if p.total > 0 {
			fmt.Fprintf(p.w, "%d of %d %s (%.0f%%), %.0f/s\n", p.done, p.total, p.what, 100*float64(p.done)/float64(p.total), rate)
		} else {
			fmt.Fprintf(p.w, "%d %s, %.0f/s\n", p.done, p.what, rate)
		}
		return
	}
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%d %s  %.0f/s ", p.done, p.what, rate)
		return
	}
	const width = 30
	frac := min(float64(p.done)/float64(p.total), 1)
	filled := int(frac * width)
	eta := "-"
	if rate > 0 {
		eta = time.Duration(float64(p.total-p.done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d %s %3.0f%%  %.0f/s  ETA %s ", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), p.done, p.total, p.what, 100*frac, rate, eta)
}
