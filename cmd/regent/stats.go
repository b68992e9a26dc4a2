package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// summary is the distribution of one measured case.
type summary struct {
	Min, P50, P90, P99, Max, Mean time.Duration
	N                             int
}

// summarize sorts a copy of samples and reads nearest-rank percentiles.
func summarize(samples []time.Duration) summary {
	if len(samples) == 0 {
		return summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var total time.Duration
	for _, v := range s {
		total += v
	}
	return summary{
		Min: s[0], P50: percentile(s, 50), P90: percentile(s, 90), P99: percentile(s, 99), Max: s[len(s)-1],
		Mean: total / time.Duration(len(s)), N: len(s),
	}
}

// percentile is the nearest-rank percentile p of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// ms renders a duration as milliseconds with two decimals, for tables.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond))
}

// progress draws a one-line progress bar on a terminal; it stays silent when
// its output is not one.
type progress struct {
	w     io.Writer
	on    bool
	total int
	done  int
}

func newProgress(w io.Writer, total int, disabled bool) *progress {
	return &progress{w: w, on: !disabled && isTerminal(w), total: total}
}

// step counts one finished unit of work and redraws the bar with label.
func (p *progress) step(label string) {
	p.done++
	p.say(label)
}

// say redraws the bar with a new label, for a phase that counts no steps.
func (p *progress) say(label string) {
	if !p.on || p.total == 0 {
		return
	}
	const width = 30
	filled := width * p.done / p.total
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d  %-28s", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), p.done, p.total, label)
}

// finish clears the bar.
func (p *progress) finish() {
	if p.on {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 80))
	}
}
