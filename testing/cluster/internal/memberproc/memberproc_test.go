package memberproc

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSpec(t *testing.T) {
	t.Run("a spec survives the environment variable round trip", func(t *testing.T) {
		opts := leader.Options{ClusterID: "c", MinClusterSize: 2, ElectionTimeoutMin: 100, DisablePreVote: true,
			Bootstrap: []gen.ProcessID{{Name: "leader", Node: "m1@127.0.0.1"}}, StateFile: "/tmp/s", SameHost: "/tmp/cell",
			ConfirmInterval: 500, Prefer: leader.Preference{Kind: leader.PreferOldest}, PreferStableFor: 900}
		in := Spec{Name: "m0@127.0.0.1", Register: "leader", Cookie: "k", KeepAlivePeriod: time.Second,
			Routes: map[gen.Atom]string{"m1@127.0.0.1": "127.0.0.1:1"}, Options: opts}
		v, err := in.Encode()
		require.NoError(t, err)
		out, err := Decode(v)
		require.NoError(t, err)
		assert.Equal(t, in, out, "every option but the func ones crosses the process boundary")
	})
	t.Run("func options do not cross the boundary and do not break the encoding", func(t *testing.T) {
		in := Spec{Name: "m0@127.0.0.1", Options: leader.Options{ClusterID: "c", OnTransition: func(leader.Transition) {},
			Prefer: leader.Preference{Kind: leader.PreferFunc, Less: func(a, b leader.Candidate) bool { return a.Node < b.Node }}}}
		v, err := in.Encode()
		require.NoError(t, err)
		out, err := Decode(v)
		require.NoError(t, err)
		assert.Nil(t, out.Options.OnTransition)
		assert.Nil(t, out.Options.Prefer.Less)
		assert.Equal(t, leader.PreferFunc, out.Options.Prefer.Kind)
	})
	t.Run("a malformed spec is refused with ErrMalformed", func(t *testing.T) {
		_, err := Decode("{")
		require.ErrorIs(t, err, gen.ErrMalformed)
	})
}

func TestRun(t *testing.T) {
	t.Run("a member reports READY with its PID and address and stops when told", func(t *testing.T) {
		r, w := io.Pipe()
		stop, abort := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- Run(Spec{Name: "solo@127.0.0.1", Register: "leader", Cookie: "k", LogLevel: gen.LogLevelError,
				Options: leader.Options{ClusterID: "solo", MinClusterSize: 1}}, w, stop, abort, nil)
		}()
		line := make([]byte, 256)
		n, err := r.Read(line)
		require.NoError(t, err)
		fields := strings.Fields(string(line[:n]))
		require.Len(t, fields, 4)
		assert.Equal(t, "READY", fields[0])
		assert.True(t, strings.HasPrefix(fields[3], "127.0.0.1:"))
		close(stop)
		require.NoError(t, <-done)
	})
}
