package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// Log formats for --log-format.
const (
	logText = "text"
	logJSON = "json"
)

// ANSI styles of the text format.
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

// newLogHandler returns the one handler every line of a command goes
// through, the runtime's and the command's own: slog's JSON handler, or a
// text handler that writes `15:04:05.000 LEVEL message key=value ...`,
// colored when color is set. It passes every level: the runtime filters its
// own lines by --log-level, and the command's lines are always wanted.
func newLogHandler(w io.Writer, format string, color bool) (slog.Handler, error) {
	switch format {
	case logJSON:
		return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug - 4}), nil
	case logText:
		return &textHandler{out: &lockedWriter{w: w}, color: color}, nil
	}
	return nil, usageError("--log-format %q: want %s or %s", format, logText, logJSON)
}

// lockedWriter serialises the lines of every handler derived from one
// textHandler; its lock guards w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) writeLine(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(b) // a log line that cannot be written has nowhere else to go
}

// textHandler is the terminal format. Attributes added with WithAttrs come
// after the record's own, so a line reads message first, then the node.
type textHandler struct {
	out    *lockedWriter
	color  bool
	attrs  []slog.Attr // preformatted by WithAttrs, group prefixes applied
	prefix string      // the open group, "a.b."
}

func (h *textHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *textHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), prefixed(h.prefix, attrs)...)
	return &c
}

func (h *textHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix += name + "."
	return &c
}

func prefixed(prefix string, attrs []slog.Attr) []slog.Attr {
	if prefix == "" {
		return attrs
	}
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = slog.Attr{Key: prefix + a.Key, Value: a.Value}
	}
	return out
}

func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	stamp := r.Time.Format("15:04:05.000")
	level := fmt.Sprintf("%-5s", levelName(r.Level))
	msg := r.Message
	var role string
	var attrs []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "role" {
			role = a.Value.String()
		}
		attrs = append(attrs, prefixed(h.prefix, []slog.Attr{a})...)
		return true
	})
	attrs = append(attrs, h.attrs...)
	if h.color {
		stamp = styleDim + stamp + styleReset
		level = levelStyle(r.Level) + level + styleReset
		switch {
		case r.Message == "STEPDOWN":
			msg = styleRed + msg + styleReset
		case role != "":
			msg = roleStyle(leader.Role(role)) + msg + styleReset
		}
	}
	b.WriteString(stamp)
	b.WriteByte(' ')
	b.WriteString(level)
	b.WriteByte(' ')
	b.WriteString(msg)
	for _, a := range attrs {
		writeAttr(&b, a.Key, a.Value)
	}
	b.WriteByte('\n')
	h.out.writeLine([]byte(b.String()))
	return nil
}

// writeAttr writes " key=value", quoting a value with spaces or quotes and
// flattening groups to key.sub=value.
func writeAttr(b *strings.Builder, key string, v slog.Value) {
	v = v.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, a := range v.Group() {
			writeAttr(b, key+"."+a.Key, a.Value)
		}
		return
	}
	s := v.String()
	if v.Kind() == slog.KindDuration {
		s = v.Duration().Round(10 * time.Microsecond).String()
	}
	if s == "" || strings.ContainsAny(s, " \"=\t\n") {
		s = strconv.Quote(s)
	}
	b.WriteByte(' ')
	b.WriteString(key)
	b.WriteByte('=')
	b.WriteString(s)
}

// levelName names slog's levels as the runtime's: TRACE below DEBUG, PANIC
// above ERROR.
func levelName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "TRACE"
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARN"
	case l < slog.LevelError+4:
		return "ERROR"
	}
	return "PANIC"
}

func levelStyle(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return styleDim
	case l < slog.LevelWarn:
		return styleBlue
	case l < slog.LevelError:
		return styleYellow
	}
	return styleBold + styleRed
}

// roleStyle picks the color of a role.
func roleStyle(role leader.Role) string {
	switch role {
	case leader.RoleLeader:
		return styleBold + styleGreen
	case leader.RoleCandidate:
		return styleYellow
	case leader.RoleFollower:
		return styleCyan
	}
	return styleRed
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

// printer is a command's own log: role events and narrative lines, through
// the same handler as the runtime's lines.
type printer struct {
	h slog.Handler
}

// newPrinter builds the handler for --log-format (color only in the text
// format on a terminal, and never with noColor) and a printer on it.
func newPrinter(w io.Writer, format string, noColor bool) (*printer, error) {
	h, err := newLogHandler(w, format, !noColor && isTerminal(w))
	if err != nil {
		return nil, err
	}
	return &printer{h: h}, nil
}

// nodeLog is the runtime's log options for a node of this command: its
// lines go through the printer's handler, filtered at level.
func (p *printer) nodeLog(level gen.LogLevel) gen.LogOptions {
	return gen.LogOptions{Level: level, Handler: p.h}
}

// event logs what happened to a member at a given time: the message is the
// event in capitals (LEADER, STEPDOWN, ...), the attributes its details.
func (p *printer) event(at time.Time, what string, attrs ...slog.Attr) {
	r := slog.NewRecord(at, slog.LevelInfo, what, 0)
	r.AddAttrs(attrs...)
	_ = p.h.Handle(context.Background(), r) // both handlers write or drop, never fail
}

// say logs a narrative line (a step of a schedule) at INFO.
func (p *printer) say(format string, args ...any) {
	p.log(slog.LevelInfo, format, args...)
}

// warn logs a problem the operator should act on.
func (p *printer) warn(format string, args ...any) {
	p.log(slog.LevelWarn, format, args...)
}

func (p *printer) log(level slog.Level, format string, args ...any) {
	r := slog.NewRecord(time.Now(), level, fmt.Sprintf(format, args...), 0)
	_ = p.h.Handle(context.Background(), r)
}

// transitionAttrs are a transition's details as log attributes.
func transitionAttrs(t leader.Transition) []slog.Attr {
	return []slog.Attr{
		slog.String("member", shortNode(t.Member.Node)),
		slog.String("role", string(t.Role)),
		slog.Uint64("term", t.Term),
		slog.String("leader", orNone(t.Leader)),
		slog.Int("view", t.ViewSize),
		slog.Int("quorum", t.Quorum),
		slog.Int("min_cluster_size", t.MinClusterSize),
	}
}

// millis formats a duration as milliseconds with one decimal.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
