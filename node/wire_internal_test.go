package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/codec"
)

func TestFrameDecoder(t *testing.T) {
	t.Run("a stream of frames decodes to what was sent, whether its PIDs repeat or change", func(t *testing.T) {
		nw := &network{registry: registry{reg: codec.NewRegistry()}, opts: gen.NetworkOptions{MaxFrameSize: defaultMaxFrameSize}}
		a := gen.PID{Node: "a@h", ID: 1001, Creation: 7}
		b := gen.PID{Node: "b@h", ID: 1001, Creation: 9}
		sent := []envelope{
			{kind: kindMessage, from: a, target: pidTarget(b), payload: "first"},
			{kind: kindMessage, from: a, target: pidTarget(b), payload: "same PIDs"},
			{kind: kindMessage, from: gen.PID{Node: "a@h", ID: 1002, Creation: 7}, target: pidTarget(b), payload: "another sender"},
			{kind: kindMessage, from: gen.PID{Node: "a@h", ID: 1002, Creation: 8}, target: pidTarget(b), payload: "a later creation"},
			{kind: kindMessage, from: a, target: target{name: "inbox", node: "b@h"}, payload: "by name"},
			{kind: kindMessage, from: a, target: pidTarget(gen.PID{Node: "b@h", ID: 100, Creation: 9}), payload: "a shorter ID"},
			{kind: kindMessage, from: gen.PID{Node: "a@hh", ID: 1001, Creation: 7}, target: pidTarget(b), payload: "a longer node name"},
			{kind: kindMessage, from: a, target: pidTarget(b), payload: "the first again"},
			{kind: kindDown, to: a, target: pidTarget(b), payload: gen.ErrProcessUnknown},
		}
		fd := newFrameDecoder(nw.reg, "b@h", "a@h")
		var got envelope
		for i := range sent {
			frame, err := nw.appendFrame(nil, &sent[i])
			require.NoError(t, err)
			require.NoError(t, fd.decode(frame[4:], &got))
			require.Equal(t, sent[i], got, "frame %d", i)
		}
	})
}

func TestKeptBuffer(t *testing.T) {
	c := &connection{nw: &network{opts: gen.NetworkOptions{SendQueueBytes: 256 << 10}}}
	t.Run("a large buffer is kept through a few small writes and let go after shrinkAfter in a row", func(t *testing.T) {
		large := make([]byte, 0, 64<<10)
		for range shrinkAfter - 1 {
			require.NotNil(t, c.keptBuffer(large[:100]))
		}
		require.NotNil(t, c.keptBuffer(large[:32<<10]), "a full write starts the count again")
		for range shrinkAfter - 1 {
			require.NotNil(t, c.keptBuffer(large[:100]))
		}
		require.Nil(t, c.keptBuffer(large[:100]))
	})
	t.Run("a small buffer is always kept and one past twice the queue's bound never", func(t *testing.T) {
		small := make([]byte, 0, keptWriteBuffer)
		for range 2 * shrinkAfter {
			require.NotNil(t, c.keptBuffer(small[:1]))
		}
		require.Nil(t, c.keptBuffer(make([]byte, 600<<10)))
	})
	t.Run("a large buffer no write filled since the last tick is let go at the tick; a small one is kept", func(t *testing.T) {
		c := &connection{nw: &network{opts: gen.NetworkOptions{SendQueueBytes: 256 << 10}}}
		large := make([]byte, 0, 64<<10)
		require.NotNil(t, c.keptBuffer(large[:32<<10]))
		require.NotNil(t, c.shrinkIdle(large), "kept at the tick after a write that filled a quarter of it")
		require.Nil(t, c.shrinkIdle(large), "let go at the next, no write having filled it")
		small := make([]byte, 0, keptWriteBuffer)
		require.NotNil(t, c.shrinkIdle(small))
		c.out = make([]byte, 0, 64<<10)
		c.shrinkIdle(nil)
		require.Nil(t, c.out, "the empty queue's large buffer goes too")
		c.out = append(make([]byte, 0, 64<<10), 1)
		c.shrinkIdle(nil)
		require.NotNil(t, c.out, "a queue holding frames keeps its buffer")
	})
}
