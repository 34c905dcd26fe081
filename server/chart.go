package server

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/heraldhq/herald"
)

// Chart geometry: one bar per minute over chartMinutes.
const (
	chartMinutes = 180
	chartBarW    = 4
	chartH       = 100
	chartLeft    = 40
	chartBottom  = 18
)

// chartSVG draws, as inline SVG, the attempts per minute over the last three hours by
// outcome (delivered in green, failed in red, stacked), from the attempts of statuses.
// Everything in it is numbers and clock times the server formats.
func chartSVG(statuses []herald.Status, now time.Time, loc *time.Location) template.HTML {
	end := now.Truncate(time.Minute).Add(time.Minute)
	start := end.Add(-chartMinutes * time.Minute)
	ok := make([]int, chartMinutes)
	bad := make([]int, chartMinutes)
	total := 0
	for _, st := range statuses {
		for _, a := range st.Attempts {
			t := a.Result.StartedAt
			if t.Before(start) || !t.Before(end) {
				continue
			}
			i := int(t.Sub(start) / time.Minute)
			if a.Result.Delivered() {
				ok[i]++
			} else {
				bad[i]++
			}
			total++
		}
	}
	peak := 1
	for i := range ok {
		peak = max(peak, ok[i]+bad[i])
	}
	w := chartLeft + chartMinutes*chartBarW
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`, w, chartH+chartBottom, w, chartH+chartBottom)
	fmt.Fprintf(&b, `<title>Attempts per minute over the last 3 hours: %d in all</title>`, total)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, chartLeft, chartH, w, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="10" font-size="10" text-anchor="end" fill="#555">%d/min</text>`, chartLeft-4, peak)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" text-anchor="end" fill="#555">0</text>`, chartLeft-4, chartH)
	for i := 0; i < chartMinutes; i++ {
		x := chartLeft + i*chartBarW
		minute := start.Add(time.Duration(i) * time.Minute).In(loc)
		if minute.Minute() == 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" text-anchor="middle" fill="#555">%s</text>`, x, chartH+13, minute.Format("15:04"))
		}
		if ok[i]+bad[i] == 0 {
			continue
		}
		hOK := ok[i] * chartH / peak
		hBad := bad[i] * chartH / peak
		fmt.Fprintf(&b, `<g><title>%s: %d delivered, %d failed</title>`, minute.Format("15:04"), ok[i], bad[i])
		if ok[i] > 0 {
			fmt.Fprintf(&b, `<rect class="ok" x="%d" y="%d" width="%d" height="%d" fill="#2e7d32"/>`, x, chartH-hOK, chartBarW-1, max(hOK, 1))
		}
		if bad[i] > 0 {
			fmt.Fprintf(&b, `<rect class="failed" x="%d" y="%d" width="%d" height="%d" fill="#c62828"/>`, x, chartH-hOK-hBad, chartBarW-1, max(hBad, 1))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and server-formatted times only
}
