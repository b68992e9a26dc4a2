package gen

import "log/slog"

// LogLevel orders log messages by severity; a logger drops messages below its level.
type LogLevel int

// Levels, from the most verbose. LogLevelDefault (zero) means "inherit".
const (
	LogLevelDefault LogLevel = iota
	LogLevelTrace
	LogLevelDebug
	LogLevelInfo
	LogLevelWarning
	LogLevelError
	LogLevelPanic
	LogLevelDisabled
)

// String names the level.
func (l LogLevel) String() string {
	switch l {
	case LogLevelDefault:
		return "default"
	case LogLevelTrace:
		return "trace"
	case LogLevelDebug:
		return "debug"
	case LogLevelInfo:
		return "info"
	case LogLevelWarning:
		return "warning"
	case LogLevelError:
		return "error"
	case LogLevelPanic:
		return "panic"
	case LogLevelDisabled:
		return "disabled"
	}
	return "unknown"
}

// Log is ergo's printf-style logger, written through log/slog. Panic logs at
// the highest level; it does not call panic().
type Log interface {
	Level() LogLevel
	SetLevel(level LogLevel) error
	Trace(format string, args ...any)
	Debug(format string, args ...any)
	Info(format string, args ...any)
	Warning(format string, args ...any)
	Error(format string, args ...any)
	Panic(format string, args ...any)
	// Logger returns the structured logger underneath, carrying the
	// node and process attributes.
	Logger() *slog.Logger
}

// LogOptions configures a node's logging.
type LogOptions struct {
	// Level is the node's level; the zero value means LogLevelInfo.
	Level LogLevel
	// Handler receives every record; nil means a text handler on stderr.
	Handler slog.Handler
}
