package leader

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// lossyNode is a node whose sends to lost fail with gen.ErrNoConnection;
// its other sends are recorded, by target.
type lossyNode struct {
	gen.Node
	lost gen.Atom
	mu   sync.Mutex
	sent map[gen.PID][]any
}

func (n *lossyNode) Name() gen.Atom { return "n@h" }

func (n *lossyNode) Send(to any, message any) error {
	if id, ok := to.(gen.ProcessID); ok && id.Node == n.lost {
		return fmt.Errorf("send to %s: %w", id.Node, gen.ErrNoConnection)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if pid, ok := to.(gen.PID); ok {
		n.sent[pid] = append(n.sent[pid], message)
	}
	return nil
}

// A batch that cannot be sent is reported to each member whose entries it
// carried, once, as a direct send's failure is: the core hears SendFailed
// for that node either way.
func TestAFailedBatchIsReportedToEveryMemberItCarried(t *testing.T) {
	node := &lossyNode{lost: "lost@h", sent: make(map[gen.PID][]any)}
	c, _, _ := runningCoalescer(t, node)
	a, b := gen.PID{Node: "n@h", ID: 10, Creation: 1}, gen.PID{Node: "n@h", ID: 11, Creation: 1}
	hb := func(from gen.PID) *CoalescedHeartbeat {
		return &CoalescedHeartbeat{CoalescedRoute: CoalescedRoute{FromID: from.ID, FromCreation: from.Creation, ToID: 20, ToCreation: 1}}
	}
	for _, from := range []gen.PID{a, a, b} {
		require.True(t, c.enqueue("lost@h", hb(from), nil, time.Hour))
	}
	c.flush("lost@h")
	assert.Equal(t, uint64(1), c.Stats().FailedFrames)
	node.mu.Lock()
	defer node.mu.Unlock()
	for _, pid := range []gen.PID{a, b} {
		require.Len(t, node.sent[pid], 1, "%s is told once", pid)
		f, ok := node.sent[pid][0].(coalescedFailed)
		require.True(t, ok)
		assert.Equal(t, gen.Atom("lost@h"), f.node)
		assert.ErrorIs(t, f.err, gen.ErrNoConnection)
	}
}
