package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
)

// slogLevel maps Regent's levels onto slog's scale; Trace sits below Debug
// and Panic above Error so handlers can still filter on them.
func slogLevel(l gen.LogLevel) slog.Level {
	switch l {
	case gen.LogLevelTrace:
		return slog.LevelDebug - 4
	case gen.LogLevelDebug:
		return slog.LevelDebug
	case gen.LogLevelWarning:
		return slog.LevelWarn
	case gen.LogLevelError:
		return slog.LevelError
	case gen.LogLevelPanic:
		return slog.LevelError + 4
	}
	return slog.LevelInfo
}

// logger is the gen.Log of a node or a process. Its level is atomic because
// SetLevel may be called from any goroutine while others log.
type logger struct {
	level  atomic.Int32
	parent *logger // the node's logger, whose level a default level follows
	// slog is made on first use, from the parent's and attrs: a process
	// whose lines are all below the level never pays for its handler.
	slog  atomic.Pointer[slog.Logger]
	attrs func() []any // a child's own attributes, asked for when slog is made
}

func newNodeLogger(name gen.Atom, opts gen.LogOptions) *logger {
	h := opts.Handler
	if h == nil {
		h = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug - 4})
	}
	l := &logger{}
	l.slog.Store(slog.New(h).With("node", string(name)))
	level := opts.Level
	if level == gen.LogLevelDefault {
		level = gen.LogLevelInfo
	}
	l.level.Store(int32(level))
	return l
}

// child makes a logger with extra attributes that inherits this logger's
// level unless level overrides it.
func (l *logger) child(level gen.LogLevel, attrs func() []any) *logger {
	c := &logger{parent: l, attrs: attrs}
	c.level.Store(int32(level))
	return c
}

// sl returns the slog.Logger, making a child's on first use.
func (l *logger) sl() *slog.Logger {
	if s := l.slog.Load(); s != nil {
		return s
	}
	s := l.parent.sl().With(l.attrs()...)
	if !l.slog.CompareAndSwap(nil, s) {
		return l.slog.Load()
	}
	return s
}

func (l *logger) Level() gen.LogLevel { return inherit(gen.LogLevel(l.level.Load()), l.parent) }

// inherit is the level of a log set to own under parent: parent's when own
// is the default.
func inherit(own gen.LogLevel, parent *logger) gen.LogLevel {
	if own == gen.LogLevelDefault && parent != nil {
		return parent.Level()
	}
	return own
}

func (l *logger) SetLevel(level gen.LogLevel) error {
	if level < gen.LogLevelDefault || level > gen.LogLevelDisabled {
		return fmt.Errorf("set log level %d: %w", level, gen.ErrIncorrect)
	}
	if level == gen.LogLevelDefault && l.parent == nil {
		level = gen.LogLevelInfo
	}
	l.level.Store(int32(level))
	return nil
}

func (l *logger) write(level gen.LogLevel, format string, args []any) {
	current := l.Level()
	if current == gen.LogLevelDisabled || level < current {
		return
	}
	sl := slogLevel(level)
	s := l.sl()
	if !s.Enabled(context.Background(), sl) {
		return
	}
	s.Log(context.Background(), sl, fmt.Sprintf(format, args...))
}

func (l *logger) Trace(format string, args ...any)   { l.write(gen.LogLevelTrace, format, args) }
func (l *logger) Debug(format string, args ...any)   { l.write(gen.LogLevelDebug, format, args) }
func (l *logger) Info(format string, args ...any)    { l.write(gen.LogLevelInfo, format, args) }
func (l *logger) Warning(format string, args ...any) { l.write(gen.LogLevelWarning, format, args) }
func (l *logger) Error(format string, args ...any)   { l.write(gen.LogLevelError, format, args) }
func (l *logger) Panic(format string, args ...any)   { l.write(gen.LogLevelPanic, format, args) }
func (l *logger) Logger() *slog.Logger               { return l.sl() }

// The budget of one repeated-failure log site: at most logBurst lines per
// logWindow. Lines past it are counted instead, and the site's first line
// in a later window says how many were suppressed.
const (
	logWindow = 10 * time.Second
	logBurst  = 5
)

// limitedLog writes the lines of sites that fail once per bad connection or
// frame (refused handshakes, bad frames, failed dials), each site within
// its budget, so that a flood of bad input cannot flood the log. Sites are
// named by the caller; every counter the lines report stays exact in
// NetworkStats.
type limitedLog struct {
	log *logger
	now func() time.Time

	mu    sync.Mutex // guards sites; taken last, and released before the line is written
	sites map[string]*logSite
}

// logSite is one site's budget in its current window.
type logSite struct {
	start      time.Time
	written    int
	suppressed int
}

func newLimitedLog(l *logger) *limitedLog {
	return &limitedLog{log: l, now: time.Now, sites: make(map[string]*logSite)}
}

func (l *limitedLog) Info(site, format string, args ...any) {
	l.write(gen.LogLevelInfo, site, format, args)
}

func (l *limitedLog) Warning(site, format string, args ...any) {
	l.write(gen.LogLevelWarning, site, format, args)
}

func (l *limitedLog) write(level gen.LogLevel, site, format string, args []any) {
	now := l.now()
	l.mu.Lock()
	s := l.sites[site]
	if s == nil {
		s = &logSite{start: now}
		l.sites[site] = s
	}
	var carried int
	if now.Sub(s.start) >= logWindow {
		carried = s.suppressed
		*s = logSite{start: now}
	}
	if s.written >= logBurst {
		s.suppressed++
		l.mu.Unlock()
		return
	}
	s.written++
	l.mu.Unlock()
	if carried > 0 {
		format += " (%d similar lines suppressed)"
		args = append(args[:len(args):len(args)], carried)
	}
	l.log.write(level, format, args)
}
