package proxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	settle = 10 * time.Second
	poll   = 10 * time.Millisecond
)

// rig is a switch of two members where member 0 dials member 1, whose
// "acceptor" is a plain listener the test reads from.
type rig struct {
	t      *testing.T
	sw     *Switch
	via    string // the listener member 0 dials to reach member 1
	target net.Listener
}

func newRig(t *testing.T) *rig {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sw := New(2, 1)
	via, err := sw.Listen(0, 1)
	require.NoError(t, err)
	require.NoError(t, sw.SetTarget(1, target.Addr().String()))
	t.Cleanup(func() {
		sw.Close()
		target.Close()
	})
	return &rig{t: t, sw: sw, via: via, target: target}
}

// dial connects member 0 to member 1 through the switch and returns both ends.
func (r *rig) dial() (dialler, acceptor net.Conn) {
	before := r.sw.Stats().Accepted
	dialler, err := net.Dial("tcp", r.via)
	require.NoError(r.t, err)
	acceptor, err = r.target.Accept()
	require.NoError(r.t, err)
	require.Eventually(r.t, func() bool { return r.sw.Stats().Accepted > before }, settle, poll, "the switch forwards the connection")
	r.t.Cleanup(func() {
		dialler.Close()
		acceptor.Close()
	})
	return dialler, acceptor
}

// readAll reads n bytes or fails the test.
func readAll(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(settle)))
	buf := make([]byte, n)
	_, err := io.ReadFull(c, buf)
	require.NoError(t, err)
	return buf
}

// silent reports whether nothing arrives on c within a short look; a
// positive answer proves bytes were held at least that long.
func silent(t *testing.T, c net.Conn) bool {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func cut(from, to int, mode Mode) func(int, int, *Faults) {
	return func(f, t int, x *Faults) {
		if f == from && t == to {
			x.Cut, x.Mode = true, mode
		}
	}
}

func healAll(_, _ int, f *Faults) { f.Cut = false }

func TestForwarding(t *testing.T) {
	t.Run("bytes cross in both directions unchanged", func(t *testing.T) {
		r := newRig(t)
		d, a := r.dial()
		_, err := d.Write([]byte("ping"))
		require.NoError(t, err)
		assert.Equal(t, "ping", string(readAll(t, a, 4)))
		_, err = a.Write([]byte("pong"))
		require.NoError(t, err)
		assert.Equal(t, "pong", string(readAll(t, d, 4)))
		assert.Equal(t, uint64(1), r.sw.Stats().Accepted)
	})
	t.Run("a dial to a member with no target is closed at once", func(t *testing.T) {
		sw := New(2, 1)
		defer sw.Close()
		via, err := sw.Listen(0, 1)
		require.NoError(t, err)
		c, err := net.Dial("tcp", via)
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(settle)))
		_, err = c.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF)
	})
}

func TestSilentCut(t *testing.T) {
	t.Run("a cut direction holds bytes and a heal delivers them in order", func(t *testing.T) {
		r := newRig(t)
		d, a := r.dial()
		r.sw.Update(cut(0, 1, ModeSilent))
		for _, s := range []string{"a", "b", "c"} {
			_, err := d.Write([]byte(s))
			require.NoError(t, err)
		}
		assert.True(t, silent(t, a), "nothing crosses a cut direction")
		r.sw.Update(healAll)
		assert.Equal(t, "abc", string(readAll(t, a, 3)))
	})
	t.Run("a one-way cut leaves the other direction open", func(t *testing.T) {
		r := newRig(t)
		d, a := r.dial()
		r.sw.Update(cut(0, 1, ModeSilent))
		_, err := a.Write([]byte("up"))
		require.NoError(t, err)
		assert.Equal(t, "up", string(readAll(t, d, 2)), "bytes from 1 to 0 still cross")
		_, err = d.Write([]byte("x"))
		require.NoError(t, err)
		assert.True(t, silent(t, a))
	})
	t.Run("a close behind a cut is held until the heal", func(t *testing.T) {
		r := newRig(t)
		d, a := r.dial()
		r.sw.Update(func(f, t int, x *Faults) { x.Cut = true })
		_, err := d.Write([]byte("last words"))
		require.NoError(t, err)
		require.NoError(t, d.Close())
		assert.True(t, silent(t, a), "the peer does not see the close across a partition")
		r.sw.Update(healAll)
		assert.Equal(t, "last words", string(readAll(t, a, 10)))
		_, err = a.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF)
		require.Eventually(t, func() bool { return r.sw.Stats().Open == 0 }, settle, poll)
	})
}

func TestNewConnectionsAcrossACut(t *testing.T) {
	t.Run("a silent cut refuses new connections at once", func(t *testing.T) {
		r := newRig(t)
		r.sw.Update(cut(1, 0, ModeSilent))
		c, err := net.Dial("tcp", r.via)
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(settle)))
		_, err = c.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF)
	})
	t.Run("a drop cut holds a new connection's bytes until the heal", func(t *testing.T) {
		r := newRig(t)
		r.sw.Update(cut(0, 1, ModeDrop))
		d, a := r.dial()
		_, err := d.Write([]byte("hello"))
		require.NoError(t, err)
		assert.True(t, silent(t, a), "the handshake hangs")
		r.sw.Update(healAll)
		assert.Equal(t, "hello", string(readAll(t, a, 5)))
	})
}

func TestResetCut(t *testing.T) {
	t.Run("a reset cut closes live connections and refuses new ones until healed", func(t *testing.T) {
		r := newRig(t)
		d, _ := r.dial()
		r.sw.Update(cut(1, 0, ModeReset))
		require.NoError(t, d.SetReadDeadline(time.Now().Add(settle)))
		_, err := d.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF, "the live connection is closed at once")

		again, err := net.Dial("tcp", r.via)
		require.NoError(t, err)
		defer again.Close()
		require.NoError(t, again.SetReadDeadline(time.Now().Add(settle)))
		_, err = again.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF, "a new connection is refused while the cut holds")
		require.Eventually(t, func() bool { return r.sw.Stats().Refused == 1 }, settle, poll, "refused: %d", r.sw.Stats().Refused)

		r.sw.Update(healAll)
		d2, a2 := r.dial()
		_, err = d2.Write([]byte("ok"))
		require.NoError(t, err)
		assert.Equal(t, "ok", string(readAll(t, a2, 2)))
	})
}

func TestDelay(t *testing.T) {
	t.Run("delayed units arrive no sooner than the delay and in order", func(t *testing.T) {
		r := newRig(t)
		d, a := r.dial()
		const delay = 150 * time.Millisecond
		r.sw.Update(func(_, _ int, f *Faults) { f.Delay, f.Jitter = delay, 100*time.Millisecond })
		start := time.Now()
		var want []byte
		for i := 0; i < 50; i++ {
			_, err := d.Write([]byte{byte(i)})
			require.NoError(t, err)
			want = append(want, byte(i))
		}
		got := readAll(t, a, len(want))
		assert.GreaterOrEqual(t, time.Since(start), delay)
		assert.Equal(t, want, got)
	})
}

// handshake writes a Regent handshake through the switch, in the layout the
// parser expects, and checks it arrives intact.
func handshake(t *testing.T, d, a net.Conn) {
	t.Helper()
	hello := func(name string) []byte {
		b := make([]byte, helloFixed, helloFixed+len(name))
		copy(b, magic)
		b[6] = 1
		binary.BigEndian.PutUint16(b[helloNameLen:], uint16(len(name)))
		return append(b, name...)
	}
	proof := make([]byte, proofLen)
	for _, step := range []struct {
		from, to net.Conn
		data     []byte
	}{
		{d, a, hello("m0@127.0.0.1")},
		{a, d, append(hello("m1@127.0.0.1"), proof...)},
		{d, a, append([]byte{0}, proof...)},
		{a, d, []byte{0}},
	} {
		_, err := step.from.Write(step.data)
		require.NoError(t, err)
		assert.Equal(t, step.data, readAll(t, step.to, len(step.data)), "handshake messages are never dropped")
	}
}

func frame(payload string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	return append(b, payload...)
}

func TestLoss(t *testing.T) {
	t.Run("loss drops whole frames after the handshake and never the handshake", func(t *testing.T) {
		r := newRig(t)
		d, a := r.dial()
		r.sw.Update(func(_, _ int, f *Faults) { f.Loss = 1 })
		handshake(t, d, a)
		_, err := d.Write(frame("dropped"))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return r.sw.Stats().FramesDropped == 1 }, settle, poll)
		r.sw.Update(func(_, _ int, f *Faults) { f.Loss = 0 })
		_, err = d.Write(frame("kept"))
		require.NoError(t, err)
		assert.Equal(t, frame("kept"), readAll(t, a, len(frame("kept"))))
	})
	t.Run("partial loss leaves every delivered frame whole", func(t *testing.T) {
		r := newRig(t)
		d, a := r.dial()
		r.sw.Update(func(_, _ int, f *Faults) { f.Loss = 0.5 })
		handshake(t, d, a)
		const sent = 200
		for i := 0; i < sent; i++ {
			_, err := d.Write(frame("payload-of-one-frame"))
			require.NoError(t, err)
		}
		require.Eventually(t, func() bool { return r.sw.Stats().FramesDropped > 0 }, settle, poll)
		r.sw.Update(func(_, _ int, f *Faults) { f.Loss = 0 })
		_, err := d.Write(frame("end"))
		require.NoError(t, err)
		br := bufio.NewReader(a)
		require.NoError(t, a.SetReadDeadline(time.Now().Add(settle)))
		got := 0
		for {
			var head [4]byte
			_, err := io.ReadFull(br, head[:])
			require.NoError(t, err)
			body := make([]byte, binary.BigEndian.Uint32(head[:]))
			_, err = io.ReadFull(br, body)
			require.NoError(t, err)
			if string(body) == "end" {
				break
			}
			require.Equal(t, "payload-of-one-frame", string(body))
			got++
		}
		assert.Equal(t, sent, got+int(r.sw.Stats().FramesDropped))
		assert.Less(t, got, sent)
	})
	t.Run("a stream that is not Regent's handshake loses nothing", func(t *testing.T) {
		r := newRig(t)
		d, a := r.dial()
		r.sw.Update(func(_, _ int, f *Faults) { f.Loss = 1 })
		data := make([]byte, 3*helloFixed)
		for i := range data {
			data[i] = 'x'
		}
		_, err := d.Write(data)
		require.NoError(t, err)
		assert.Equal(t, data, readAll(t, a, len(data)))
	})
}

func TestMisuse(t *testing.T) {
	t.Run("an unknown member is refused with ErrIncorrect", func(t *testing.T) {
		sw := New(2, 1)
		defer sw.Close()
		_, err := sw.Listen(0, 2)
		require.ErrorIs(t, err, gen.ErrIncorrect)
		require.ErrorIs(t, sw.SetTarget(-1, "127.0.0.1:1"), gen.ErrIncorrect)
	})
	t.Run("listening after Close is refused with ErrNotAllowed", func(t *testing.T) {
		sw := New(2, 1)
		sw.Close()
		_, err := sw.Listen(0, 1)
		require.ErrorIs(t, err, gen.ErrNotAllowed)
	})
}
