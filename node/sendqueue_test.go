package node_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node"
)

// The wire bytes a fake peer needs (see node/wire.go): a frame is a 4-byte
// big-endian length and a payload of kind, flags, a presence byte and the
// fields present.
const (
	wireKindKeepalive = 1
	wireKindWatch     = 6
	wireRelMonitor    = 1
	wireHasFrom       = 1
	wireHasTargetPID  = 4
)

func wireFrame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

func wirePID(dst []byte, p gen.PID) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p.Node)))
	dst = append(dst, p.Node...)
	dst = binary.AppendUvarint(dst, p.ID)
	return binary.BigEndian.AppendUint64(dst, uint64(p.Creation))
}

// mute is a fake peer that is alive (it sends keepalives) but never reads
// what the node sends it, so the node's send queue to it fills up.
type mute struct {
	conn net.Conn
	name gen.Atom
	stop chan struct{}
	wg   sync.WaitGroup // the keepalive goroutine
}

func newMute(t *testing.T, n gen.Node, name gen.Atom) *mute {
	t.Helper()
	m := &mute{conn: dialRaw(t, n, name), name: name, stop: make(chan struct{})}
	require.NoError(t, m.conn.SetDeadline(time.Time{}))
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
				if _, err := m.conn.Write(wireFrame([]byte{wireKindKeepalive, 0, 0})); err != nil {
					return
				}
			}
		}
	}()
	t.Cleanup(func() { close(m.stop); m.conn.Close(); m.wg.Wait() })
	require.Eventually(t, func() bool { return containsNode(n.Network().Nodes(), name) }, wait, time.Millisecond)
	return m
}

func containsNode(nodes []gen.Atom, name gen.Atom) bool {
	for _, n := range nodes {
		if n == name {
			return true
		}
	}
	return false
}

// fillQueue sends large messages to the mute peer until a send fails, and
// returns that error.
func fillQueue(t *testing.T, n gen.Node, m *mute) error {
	t.Helper()
	to := gen.PID{Node: m.name, ID: 1000, Creation: 1}
	big := ping{Text: strings.Repeat("x", 16<<10)}
	for i := 0; i < 64<<10; i++ { // 1 GiB: far beyond any socket's buffers
		big.Seq = i
		if err := n.Send(to, big); err != nil {
			return err
		}
	}
	t.Fatal("every send was accepted although the peer reads nothing")
	return nil
}

func smallQueue(wait time.Duration) gen.NetworkOptions {
	opts := fastNet(testCookie)
	opts.SendQueueBytes = 4 << 10
	opts.SendQueueWait = wait
	return opts
}

func TestSendQueueBackPressure(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
	}{
		{"after waiting SendQueueWait", 20 * time.Millisecond},
		{"at once when SendQueueWait is negative", -1},
	} {
		t.Run("a send to a peer that does not read fails with ErrTimeout "+tc.name+", and is counted", func(t *testing.T) {
			n, _ := startNet(t, "sender@127.0.0.1", smallQueue(tc.wait))
			m := newMute(t, n, "mute@127.0.0.1")
			err := fillQueue(t, n, m)
			require.ErrorIs(t, err, gen.ErrTimeout)
			assert.Contains(t, err.Error(), "send queue")
			stats := n.Network().Stats()
			assert.Equal(t, uint64(1), stats.Dropped["send_queue_full"])
			assert.Zero(t, stats.Dropped["send_queue_overflow"])
			assert.True(t, containsNode(n.Network().Nodes(), m.name), "a full queue alone does not close the connection")

			require.ErrorIs(t, fillQueue(t, n, m), gen.ErrTimeout, "the queue fills again while the peer does not read")
			assert.Equal(t, uint64(2), n.Network().Stats().Dropped["send_queue_full"])
		})
	}

	t.Run("the runtime's own frames never wait: past twice the bound the connection closes, counted, and watchers learn it", func(t *testing.T) {
		n, _ := startNet(t, "sender@127.0.0.1", smallQueue(10*time.Millisecond))
		m := newMute(t, n, "mute@127.0.0.1")
		watcher := newProbe()
		pid := spawnProbe(t, n, watcher)
		require.NoError(t, n.Send(pid, "ready"))
		require.Equal(t, "ready", watcher.next(t))
		monitor := newProbe()
		monitor.onInit = func(p *probe, args ...any) error { return p.Monitor(m.name) }
		spawnProbe(t, n, monitor)

		// The mute peer monitors a process the node does not have: the
		// reader answers with a down notice, which finds the queue full
		// once the socket's buffers are (a busy machine may still be
		// writing after the first refused send, so both repeat).
		watch := []byte{wireKindWatch, wireRelMonitor, wireHasFrom | wireHasTargetPID}
		watch = wirePID(watch, gen.PID{Node: m.name, ID: 7, Creation: 1})
		watch = wirePID(watch, gen.PID{Node: n.Name(), ID: 999_999, Creation: 1})
		require.Eventually(t, func() bool {
			if containsNode(n.Network().Nodes(), m.name) && errors.Is(fillQueue(t, n, m), gen.ErrTimeout) {
				_, _ = m.conn.Write(wireFrame(watch)) // fails once the node has closed the connection
			}
			return n.Network().Stats().Dropped["send_queue_overflow"] > 0
		}, wait, 10*time.Millisecond)

		down, ok := monitor.next(t).(gen.MessageDownNode)
		require.True(t, ok, "the node's monitor learns the connection is gone")
		assert.Equal(t, m.name, down.Name)
		assert.Equal(t, uint64(1), n.Network().Stats().Dropped["send_queue_overflow"])
		assert.False(t, containsNode(n.Network().Nodes(), m.name))
	})

	t.Run("TrySend to a peer that does not read fails at once with ErrWouldBlock where Send would wait, uncounted, and the connection stays", func(t *testing.T) {
		n, _ := startNet(t, "sender@127.0.0.1", smallQueue(time.Hour)) // a Send that waited would hang the test
		m := newMute(t, n, "mute@127.0.0.1")
		try, ok := n.(interface {
			TrySend(to any, message any) error
		})
		require.True(t, ok, "the node has TrySend")
		to := gen.PID{Node: m.name, ID: 1000, Creation: 1}
		big := ping{Text: strings.Repeat("x", 16<<10)}
		var err error
		for i := 0; i < 64<<10 && err == nil; i++ { // 1 GiB: far beyond any socket's buffers
			big.Seq = i
			err = try.TrySend(to, big)
		}
		require.ErrorIs(t, err, gen.ErrWouldBlock)
		assert.Contains(t, err.Error(), "bound")
		stats := n.Network().Stats()
		assert.Zero(t, stats.Dropped["send_queue_full"], "a refused TrySend is the sender's, not a drop")
		assert.Zero(t, stats.Dropped["send_queue_overflow"])
		assert.True(t, containsNode(n.Network().Nodes(), m.name), "a full queue alone does not close the connection")
	})

	t.Run("a negative SendQueueBytes is refused", func(t *testing.T) {
		opts := fastNet(testCookie)
		opts.SendQueueBytes = -1
		_, err := node.Start("refused@127.0.0.1", gen.NodeOptions{Network: opts})
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
}

// sequencer is a receiver that checks, per sender, that sequence numbers
// arrive in order, and signals when it has seen want messages.
type sequencer struct {
	mu     sync.Mutex // guards last, seen and errors
	last   map[gen.PID]int
	seen   int
	want   int
	errors []string
	done   chan struct{}
}

func (s *sequencer) onMessage(p *probe, from gen.PID, message any) error {
	m := message.(ping)
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, ok := s.last[from]; ok && m.Seq != last+1 {
		s.errors = append(s.errors, fmt.Sprintf("%s: %d then %d", from, last, m.Seq))
	} else if !ok && m.Seq != 0 {
		s.errors = append(s.errors, fmt.Sprintf("%s: %d first", from, m.Seq))
	}
	s.last[from] = m.Seq
	s.seen++
	if s.seen == s.want {
		close(s.done)
	}
	return nil
}

// blaster sends count pings numbered from 0 to its target when told "go".
// A send refused because the send queue stayed full (gen.ErrTimeout) was
// not queued, so the blaster sends the same message again: the order
// holds.
func blaster(to gen.PID, count int) *probeConfig {
	c := newProbe()
	c.onMessage = func(p *probe, from gen.PID, message any) error {
		for i := 0; i < count; i++ {
			err := p.Send(to, ping{Seq: i, Text: "batched"})
			for errors.Is(err, gen.ErrTimeout) {
				err = p.Send(to, ping{Seq: i, Text: "batched"})
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return c
}

// blastInOrder has senders processes on a send each pings to one process
// on b, each sender retrying what the send queue refused, checks that every pair kept its order, and returns a's network
// counters before and after.
func blastInOrder(t *testing.T, a, b gen.Node, senders, each int) (before, after gen.NetworkStats) {
	t.Helper()
	seq := &sequencer{last: map[gen.PID]int{}, want: senders * each, done: make(chan struct{})}
	recv := newProbe()
	recv.onMessage = seq.onMessage
	to, err := b.Spawn(recv.factory(), gen.ProcessOptions{})
	require.NoError(t, err)
	_, err = a.Call(to, ping{Seq: -1}) // connected before the burst, so nothing waits for a dial
	require.NoError(t, err)
	var pids []gen.PID
	for i := 0; i < senders; i++ {
		pids = append(pids, spawnProbe(t, a, blaster(to, each)))
	}
	before = a.Network().Stats()
	for _, pid := range pids {
		require.NoError(t, a.Send(pid, "go"))
	}
	select {
	case <-seq.done:
	case <-time.After(wait):
		seq.mu.Lock()
		defer seq.mu.Unlock()
		t.Fatalf("%d of %d messages arrived", seq.seen, seq.want)
	}
	seq.mu.Lock()
	assert.Empty(t, seq.errors, "messages of one sender overtook each other")
	seq.mu.Unlock()
	return before, a.Network().Stats()
}

func TestFramesAreBatched(t *testing.T) {
	t.Run("messages from many processes share writes, and each pair keeps its order", func(t *testing.T) {
		const senders, each = 8, 2000
		a, b := pair(t)
		before, after := blastInOrder(t, a, b, senders, each)
		frames, writes := after.FramesOut-before.FramesOut, after.Writes-before.Writes
		t.Logf("%d frames in %d writes; %d sends waited out SendQueueWait and were sent again",
			frames, writes, after.Dropped["send_queue_full"])
		assert.GreaterOrEqual(t, frames, uint64(senders*each))
		assert.Less(t, writes, frames, "frames queued while a write is in progress share the next one")
	})

	t.Run("a queue smaller than one write throttles the senders instead of refusing them while the peer reads", func(t *testing.T) {
		opts := fastNet(testCookie)
		opts.SendQueueBytes = 1 << 10
		opts.SendQueueWait = 5 * time.Second // far beyond any one write on loopback, however loaded
		a, _ := startNet(t, "throttled@127.0.0.1", opts)
		b, _ := startNet(t, "reader@127.0.0.1", fastNet(testCookie))
		route(t, a, b)
		before, after := blastInOrder(t, a, b, 4, 2000)
		assert.Equal(t, before.Dropped["send_queue_full"], after.Dropped["send_queue_full"], "no send was refused")
		assert.Greater(t, after.Writes-before.Writes, uint64(8000*70/(1<<10)/2), "the small queue made many writes")
	})
}
