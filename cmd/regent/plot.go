package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Geometry of the plot, in SVG user units.
const (
	plotLeft   = 190.0
	plotRight  = 40.0
	plotTop    = 40.0
	plotRowH   = 26.0
	plotWidth  = 900.0
	plotBottom = 50.0
)

// plotSVG draws every row's samples on a logarithmic millisecond axis: a dot
// per sample, a box from p25 to p75 with the median, whiskers to min and
// max, and the theoretical bound as a red tick.
func plotSVG(res benchResult) string {
	lo, hi := math.Inf(1), 0.0
	for _, r := range res.Rows {
		for _, v := range r.Samples {
			lo, hi = math.Min(lo, msf(v)), math.Max(hi, msf(v))
		}
		if r.Bound > 0 {
			lo, hi = math.Min(lo, msf(r.Bound)), math.Max(hi, msf(r.Bound))
		}
	}
	if hi == 0 {
		lo, hi = 0.1, 1
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 1e-3))))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	x := func(v float64) float64 {
		v = math.Max(v, lo)
		return plotLeft + (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(plotWidth-plotLeft-plotRight)
	}
	height := plotTop + plotRowH*float64(len(res.Rows)) + plotBottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", plotWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14">Leader failover on loopback, timeouts %d-%d ms, heartbeat %d ms (ms, log scale)</text>`+"\n",
		plotLeft, res.ElectionTimeoutMin, res.ElectionTimeoutMax, res.HeartbeatInterval)
	axisY := plotTop + plotRowH*float64(len(res.Rows))
	for d := lo; d <= hi*1.0001; d *= 10 {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#ddd"/>`+"\n", x(d), x(d), plotTop-5, axisY)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%g</text>`+"\n", x(d), axisY+16, d)
	}
	for i, r := range res.Rows {
		y := plotTop + plotRowH*float64(i) + plotRowH/2
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s, N=%d</text>`+"\n", plotLeft-10, y+4, r.Case, r.Size)
		if len(r.Samples) == 0 {
			continue
		}
		s := slices.Clone(r.Samples)
		slices.Sort(s)
		q1, q3 := msf(percentile(s, 25)), msf(percentile(s, 75))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#555"/>`+"\n", x(msf(s[0])), x(msf(s[len(s)-1])), y, y)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#cfe3f7" stroke="#2a6db0"/>`+"\n", x(q1), y-8, math.Max(x(q3)-x(q1), 1), 16.0)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#2a6db0" stroke-width="2"/>`+"\n", x(msf(percentile(s, 50))), x(msf(percentile(s, 50))), y-8, y+8)
		for _, v := range s {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2" fill="#000" fill-opacity="0.35"/>`+"\n", x(msf(v)), y)
		}
		if r.Bound > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#d00" stroke-width="2"/>`+"\n", x(msf(r.Bound)), x(msf(r.Bound)), y-11, y+11)
		}
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">box: p25-p75 with median; whiskers: min-max; dots: trials; red: theoretical lower bound</text>`+"\n", plotLeft, axisY+36)
	b.WriteString("</svg>\n")
	return b.String()
}

// msf is a duration in milliseconds as a float.
func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
