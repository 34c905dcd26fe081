package server

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald"
)

// Chart geometry: one bar per minute over chartMinutes, in an SVG of chartW × chartH
// user units (it scales to the page's width).
const (
	chartMinutes = 60
	chartW       = 720
	chartH       = 250
	chartLeft    = 52
	chartRight   = 24
	chartTop     = 14
	chartBottom  = 44
)

// chartSeries are the outcomes the chart stacks, bottom up: class, label and colour
// (each colour has at least 3:1 contrast on white).
var chartSeries = []struct{ class, label, color string }{
	{"delivered", "Delivered (2xx)", "#2e7d32"},
	{"http", "HTTP error (other status)", "#c62828"},
	{"timeout", "Timeout", "#b45309"},
	{"network", "Network, TLS or refused", "#6d28d9"},
}

// series is the index in chartSeries of an attempt's outcome.
func series(o herald.Outcome) int {
	switch o {
	case herald.OutcomeDelivered:
		return 0
	case herald.OutcomeHTTPStatus:
		return 1
	case herald.OutcomeTimeout:
		return 2
	}
	return 3
}

// chartRow is one minute of the chart's text alternative.
type chartRow struct {
	Minute string
	Counts []int // per chartSeries
	Total  int
}

// chartView is the endpoint page's chart: the SVG, its text alternative and what it covers.
type chartView struct {
	SVG template.HTML
	// Rows are the minutes with attempts, oldest first.
	Rows []chartRow
	// Totals are the attempts per series over the window; Total their sum.
	Totals []int
	Total  int
	// P50 and P99 are the latencies of the window's attempts that got an answer or timed out.
	P50, P99 string
	// From and To are the window's ends (clock times); Deliveries is how many recent
	// deliveries the attempts come from.
	From, To   string
	Deliveries int
	Legend     []legendItem
}

// legendItem is one series in the legend.
type legendItem struct{ Class, Label, Color string }

// chartOf draws the attempts of statuses per minute over the last chartMinutes, stacked by
// outcome, with the window's latency quantiles. Everything in the SVG is numbers, fixed
// words and clock times the server formats.
func chartOf(statuses []herald.Status, now time.Time, loc *time.Location) chartView {
	end := now.Truncate(time.Minute).Add(time.Minute)
	start := end.Add(-chartMinutes * time.Minute)
	counts := make([][]int, chartMinutes)
	for i := range counts {
		counts[i] = make([]int, len(chartSeries))
	}
	cv := chartView{Totals: make([]int, len(chartSeries)), Deliveries: len(statuses),
		From: start.In(loc).Format("15:04"), To: end.In(loc).Format("15:04 MST"), P50: "–", P99: "–"}
	var lat []time.Duration
	for _, st := range statuses {
		for _, a := range st.Attempts {
			t := a.Result.StartedAt
			if t.Before(start) || !t.Before(end) {
				continue
			}
			k := series(a.Result.Outcome)
			counts[int(t.Sub(start)/time.Minute)][k]++
			cv.Totals[k]++
			cv.Total++
			if k <= 2 && a.Result.Duration > 0 {
				lat = append(lat, a.Result.Duration)
			}
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		q := func(p float64) time.Duration { return lat[int(math.Ceil(p*float64(len(lat))))-1] }
		cv.P50, cv.P99 = shortDuration(q(0.5)), shortDuration(q(0.99))
	}
	for _, sr := range chartSeries {
		cv.Legend = append(cv.Legend, legendItem{sr.class, sr.label, sr.color})
	}
	peak := 0
	for i, c := range counts {
		sum := 0
		for _, n := range c {
			sum += n
		}
		peak = max(peak, sum)
		if sum > 0 {
			cv.Rows = append(cv.Rows, chartRow{Minute: start.Add(time.Duration(i) * time.Minute).In(loc).Format("15:04"), Counts: c, Total: sum})
		}
	}
	cv.SVG = chartSVG(counts, peak, start, loc, cv.Total)
	return cv
}

// chartSVG draws the stacked bars with their axes.
func chartSVG(counts [][]int, peak int, start time.Time, loc *time.Location, total int) template.HTML {
	step := max(1, int(math.Ceil(float64(peak)/4))) // at most 5 gridlines
	top := max(1, step*int(math.Ceil(float64(peak)/float64(step))))
	plotW, plotH := chartW-chartLeft-chartRight, chartH-chartTop-chartBottom
	barW := float64(plotW) / chartMinutes
	y := func(n int) float64 { return float64(chartTop) + float64(plotH)*(1-float64(n)/float64(top)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-labelledby="chart-title chart-desc" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH)
	fmt.Fprintf(&b, `<title id="chart-title">Attempts per minute by outcome, %s to %s</title>`, start.In(loc).Format("15:04"), start.Add(chartMinutes*time.Minute).In(loc).Format("15:04"))
	fmt.Fprintf(&b, `<desc id="chart-desc">%d attempts in all; the table below the chart lists each minute.</desc>`, total)
	for n := 0; n <= top; n += step {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`, chartLeft, y(n), chartW-chartRight, y(n), map[bool]string{true: "#6b7280", false: "#e5e7eb"}[n == 0])
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#374151">%d</text>`, chartLeft-6, y(n)+4, n)
	}
	fmt.Fprintf(&b, `<text transform="translate(14 %d) rotate(-90)" font-size="11" text-anchor="middle" fill="#374151">attempts / minute</text>`, chartTop+plotH/2)
	for i := 0; i <= chartMinutes; i += 10 {
		x := float64(chartLeft) + float64(i)*barW
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#6b7280"/>`, x, chartTop+plotH, x, chartTop+plotH+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#374151">%s</text>`, x, chartTop+plotH+16, start.Add(time.Duration(i)*time.Minute).In(loc).Format("15:04"))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle" fill="#374151">time (%s)</text>`, chartLeft+plotW/2, chartH-6, start.In(loc).Format("MST"))
	for i, c := range counts {
		x := float64(chartLeft) + float64(i)*barW + 1
		base := 0
		for k, n := range c {
			if n == 0 {
				continue
			}
			sr := chartSeries[k]
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d %s</title></rect>`,
				sr.class, x, y(base+n), barW-2, y(base)-y(base+n), sr.color, start.Add(time.Duration(i)*time.Minute).In(loc).Format("15:04"), n, strings.ToLower(sr.label))
			base += n
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers, fixed words and server-formatted times only
}
