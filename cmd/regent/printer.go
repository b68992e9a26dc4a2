package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// ANSI styles used by the event log.
const (
	styleReset  = "\x1b[0m"
	styleBold   = "\x1b[1m"
	styleDim    = "\x1b[2m"
	styleRed    = "\x1b[31m"
	styleGreen  = "\x1b[32m"
	styleYellow = "\x1b[33m"
	styleBlue   = "\x1b[34m"
	styleCyan   = "\x1b[36m"
)

// printer writes one line per event, colored when its output is a terminal.
// Its lock guards w so lines from several goroutines never interleave.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
}

func newPrinter(w io.Writer, noColor bool) *printer {
	return &printer{w: w, color: !noColor && isTerminal(w)}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// event prints `15:04:05.000  who  WHAT  detail`, with what in style.
func (p *printer) event(at time.Time, who, what, style, detail string) {
	label := fmt.Sprintf("%-9s", what)
	if p.color && style != "" {
		label = style + label + styleReset
	}
	stamp := at.Format("15:04:05.000")
	if p.color {
		stamp = styleDim + stamp + styleReset
	}
	line := strings.TrimRight(fmt.Sprintf("%s  %-4s  %s %s", stamp, who, label, detail), " ")
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}

// say prints a narrative line (a step of a schedule).
func (p *printer) say(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if p.color {
		msg = styleBold + styleBlue + msg + styleReset
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s  %s\n", time.Now().Format("15:04:05.000"), msg)
}

// roleStyle picks the color of a role.
func roleStyle(role string) string {
	switch role {
	case "leader":
		return styleBold + styleGreen
	case "candidate":
		return styleYellow
	case "follower":
		return styleCyan
	}
	return styleRed
}

// millis formats a duration as milliseconds with one decimal.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
