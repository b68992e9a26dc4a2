package faultproxy

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// handshake writes a Regent handshake from d to a and back, in the layout
// the parser expects, and checks every message arrives intact.
func handshake(t *testing.T, d, a net.Conn) {
	t.Helper()
	hello := func(name string) []byte {
		b := make([]byte, helloFixed, helloFixed+len(name))
		copy(b, magic)
		b[6] = 2
		binary.BigEndian.PutUint16(b[helloNameLen:], uint16(len(name)))
		return append(b, name...)
	}
	proof := make([]byte, proofLen)
	for _, step := range []struct {
		from, to net.Conn
		data     []byte
	}{
		{d, a, hello("a@127.0.0.1")},
		{a, d, hello("b@127.0.0.1")},
		{d, a, proof},
		{a, d, append([]byte{0}, proof...)},
		{d, a, []byte{0}},
	} {
		_, err := step.from.Write(step.data)
		require.NoError(t, err)
		assert.Equal(t, step.data, recv(t, step.to, len(step.data)), "handshake messages are never dropped")
	}
}

func frame(payload string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

// lossEverywhere sets loss p on every direction, keeping the rest.
func lossEverywhere(m *Mesh, p float64) {
	m.Update(func(_, _ gen.Atom, f *Fault) { f.Loss = p })
}

func TestLoss(t *testing.T) {
	t.Run("loss drops whole frames after the handshake and never the handshake", func(t *testing.T) {
		r := newRig(t, Options{Seed: 1})
		d, a := r.dial("a", "b")
		lossEverywhere(r.mesh, 1)
		handshake(t, d, a)
		_, err := d.Write(frame("dropped"))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return r.mesh.Stats().FramesDropped == 1 }, settle, poll)
		lossEverywhere(r.mesh, 0)
		_, err = d.Write(frame("kept"))
		require.NoError(t, err)
		assert.Equal(t, frame("kept"), recv(t, a, len(frame("kept"))))
	})
	t.Run("partial loss leaves every delivered frame whole", func(t *testing.T) {
		r := newRig(t, Options{Seed: 1})
		d, a := r.dial("a", "b")
		lossEverywhere(r.mesh, 0.5)
		handshake(t, d, a)
		const sent = 200
		for range sent {
			_, err := d.Write(frame("payload-of-one-frame"))
			require.NoError(t, err)
		}
		require.Eventually(t, func() bool { return r.mesh.Stats().FramesDropped > 0 }, settle, poll)
		lossEverywhere(r.mesh, 0)
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
		assert.Equal(t, sent, got+int(r.mesh.Stats().FramesDropped))
		assert.Less(t, got, sent)
	})
	t.Run("a stream that is not Regent's handshake loses nothing", func(t *testing.T) {
		r := newRig(t, Options{Seed: 1})
		d, a := r.dial("a", "b")
		lossEverywhere(r.mesh, 1)
		data := make([]byte, 3*helloFixed)
		for i := range data {
			data[i] = 'x'
		}
		_, err := d.Write(data)
		require.NoError(t, err)
		assert.Equal(t, data, recv(t, a, len(data)))
		assert.Zero(t, r.mesh.Stats().FramesDropped)
	})
}
