package node

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/syncbuf"
)

func TestLimitedLog(t *testing.T) {
	out := &syncbuf.Buffer{}
	now := time.Unix(1000, 0)
	l := newLimitedLog(newNodeLogger("limited@host", gen.LogOptions{Handler: slog.NewTextHandler(out, nil)}))
	l.now = func() time.Time { return now }
	lines := func() []string { return strings.Split(strings.TrimSpace(out.String()), "\n") }

	t.Run("a site writes at most its burst of lines per window", func(t *testing.T) {
		for i := range 3 * logBurst {
			l.Warning("flood", "bad connection %d", i)
		}
		require.Len(t, lines(), logBurst)
		assert.Contains(t, lines()[logBurst-1], "bad connection 4")
	})
	t.Run("each site has a budget of its own", func(t *testing.T) {
		l.Info("other", "another failure")
		require.Len(t, lines(), logBurst+1)
	})
	t.Run("the first line of a later window says how many were suppressed", func(t *testing.T) {
		now = now.Add(logWindow)
		l.Warning("flood", "bad connection again")
		got := lines()
		require.Len(t, got, logBurst+2)
		assert.Contains(t, got[len(got)-1], "bad connection again (10 similar lines suppressed)")
		assert.Contains(t, got[len(got)-1], "level=WARN")
	})
	t.Run("a window without suppression adds no count", func(t *testing.T) {
		now = now.Add(logWindow)
		l.Warning("flood", "quiet now")
		got := lines()
		assert.True(t, strings.HasSuffix(got[len(got)-1], `msg="quiet now" node=limited@host`), got[len(got)-1])
	})
}
