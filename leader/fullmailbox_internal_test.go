package leader

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// stallable is a probe whose HandleMessage, given a stall, tells the test it
// is held and waits for release: a test can hold its goroutine while its
// bounded mailbox fills.
type stallable struct{ probe }

type stall struct{ held, release chan struct{} }

type junk struct{}

func (s *stallable) HandleMessage(from gen.PID, message any) error {
	if st, ok := message.(stall); ok {
		close(st.held)
		<-st.release
	}
	return nil
}

// spawnStallables starts one stallable per node with a bounded mailbox.
func spawnStallables(t *testing.T, nodes []gen.Node, log *stepLog, opts Options, mailbox int64) []gen.PID {
	pids := make([]gen.PID, len(nodes))
	for i, nd := range nodes {
		o := opts
		for j, other := range nodes {
			if j != i {
				o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: "m", Node: other.Name()})
			}
		}
		var err error
		pids[i], err = nd.SpawnRegister("m", func() gen.ProcessBehavior {
			return &stallable{probe{opts: o, log: log}}
		}, gen.ProcessOptions{MailboxSize: mailbox})
		require.NoError(t, err)
	}
	return pids
}

// stallWithFullMailbox holds pid's goroutine with its mailbox full for d,
// then lets it go.
func stallWithFullMailbox(t *testing.T, n gen.Node, pid gen.PID, d time.Duration) {
	st := stall{held: make(chan struct{}), release: make(chan struct{})}
	require.NoError(t, n.Send(pid, st))
	<-st.held
	for {
		if err := n.Send(pid, junk{}); err != nil {
			require.True(t, errors.Is(err, gen.ErrProcessMailboxFull), "%v", err)
			break
		}
	}
	time.Sleep(d)
	close(st.release)
}

// A leader whose heartbeat timer fires while its (bounded) mailbox is full
// must still tick afterwards: the shell's timer is the only thing that
// wakes it for its quorum-evidence check. Were the firing lost, the leader
// would never check its evidence again and would keep visible leadership
// after losing every follower. Found by the second adversarial review.
func TestLeaderStillTicksAfterATimerFiringMetAFullMailbox(t *testing.T) {
	nodes := startTestNodes(t, "fm", 3)
	log := &stepLog{steps: map[gen.PID][]observed{}}
	pids := spawnStallables(t, nodes, log,
		Options{ClusterID: "fullmailbox", HeartbeatInterval: 20, ElectionTimeoutMin: 300, ElectionTimeoutMax: 600}, 8)
	li := waitLeader(t, nodes, pids)
	ln, lpid := nodes[li], pids[li]

	// Its heartbeat timer fires into a full mailbox; then its followers
	// vanish, before they time out and elect another leader.
	stallWithFullMailbox(t, ln, lpid, 60*time.Millisecond)
	before := tally(log.snapshot(lpid)).ticks
	for i, nd := range nodes {
		if i != li {
			nd.StopForce()
		}
	}
	// The evidence window is 300ms: it must step down soon after.
	assert.Eventually(t, func() bool {
		in, err := ReadInspection(ln, lpid, "ergo:state")
		return err == nil && in.Role != RoleLeader
	}, 5*time.Second, 20*time.Millisecond, "the leader kept visible leadership with no follower left")
	assert.Greater(t, tally(log.snapshot(lpid)).ticks, before,
		"the leader never ticked again after its heartbeat timer met a full mailbox")
}

// A coalesced heartbeat for a live member whose bounded mailbox is full is
// counted as mailbox_full, not as gone: the member has not ended. Found by
// the second adversarial review.
func TestCoalescerCountsAFullMailboxApartFromAGoneMember(t *testing.T) {
	nodes := startTestNodes(t, "fc", 3)
	log := &stepLog{steps: map[gen.PID][]observed{}}
	pids := spawnStallables(t, nodes, log,
		Options{ClusterID: "fullcount", HeartbeatInterval: 20, ElectionTimeoutMin: 300, ElectionTimeoutMax: 600}, 8)
	li := waitLeader(t, nodes, pids)
	fi := (li + 1) % 3
	stallWithFullMailbox(t, nodes[fi], pids[fi], 100*time.Millisecond)
	s := ReadCoalescer(nodes[fi])
	assert.Positive(t, s.Dropped["mailbox_full"], "heartbeats met the follower's full mailbox: %v", s.Dropped)
	assert.Zero(t, s.Dropped[dropGone], "the follower never ended: %v", s.Dropped)
}

// An acknowledgement held for a member as the member ends, or a heartbeat
// answered ahead for it, is either dropped and counted with the inbox or not
// held at all (then delivered, and counted gone): never held in an inbox
// nobody will read again, counted as held and nothing else. Found by the
// second adversarial review (acknowledgements).
func TestNoAcknowledgementIsHeldInARemovedInbox(t *testing.T) {
	c, leaderPID, beat := runningCoalescer(t, &stalledNode{})
	var stranded int
	for i := range 2000 {
		pid := gen.PID{Node: "n@h", ID: uint64(i + 2), Creation: 1}
		ib := &inbox{}
		ib.ticking.Store(true)
		ib.publish(&steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: leaderPID, Heartbeat: steadyOf(beat)}, linger: time.Hour})
		c.addInbox(pid, ib)
		done, started := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for j := range 200 {
				if j%2 == 0 {
					c.hold(pid, leaderPID, time.Now(), &MessageHeartbeatAck{})
				} else if !c.answer(pid, leaderPID, time.Now(), &beat) && j == 1 {
					t.Error("a published steady answer answered nothing")
				}
				if j == 1 {
					close(started)
				}
			}
		}()
		<-started
		c.removeInbox(pid)
		<-done
		acks, beats, ahead := ib.take()
		stranded += len(acks) + len(beats) + ahead.entries()
		c.take(leaderPID.Node) // the answers sent ahead, which would fill the outbox
	}
	assert.Zero(t, stranded, "entries held in removed inboxes, counted held and never stepped nor dropped")
}

// confirmCounting counts its HandleConfirmLeader calls.
type confirmCounting struct {
	stallable
	confirms *atomic.Int64
}

func (c *confirmCounting) HandleConfirmLeader() (bool, error) {
	c.confirms.Add(1)
	return true, nil
}

// A leader's ConfirmInterval tick that meets its full mailbox is sent again,
// not lost: the tick re-arms only when handled, so a lost one meant
// HandleConfirmLeader was never consulted again for that leadership, which
// kept leading whatever the application's condition became. The same-host
// tick shares the mechanism. Found by the second adversarial review.
func TestReconfirmTickSurvivesAFullMailbox(t *testing.T) {
	nodes := startTestNodes(t, "rc", 1)
	log := &stepLog{steps: map[gen.PID][]observed{}}
	var confirms atomic.Int64
	o := Options{ClusterID: "reconfirm", MinClusterSize: 1, HeartbeatInterval: 20, ElectionTimeoutMin: 300, ElectionTimeoutMax: 600, ConfirmInterval: 50}
	pid, err := nodes[0].SpawnRegister("m", func() gen.ProcessBehavior {
		return &confirmCounting{stallable{probe{opts: o, log: log}}, &confirms}
	}, gen.ProcessOptions{MailboxSize: 8})
	require.NoError(t, err)
	waitLeader(t, nodes, []gen.PID{pid})
	require.Eventually(t, func() bool { return confirms.Load() >= 2 }, 5*time.Second, 10*time.Millisecond, "it reconfirms every 50ms")
	// Three intervals with a full mailbox: the pending tick meets it.
	stallWithFullMailbox(t, nodes[0], pid, 150*time.Millisecond)
	before := confirms.Load()
	assert.Eventually(t, func() bool { return confirms.Load() > before }, 2*time.Second, 10*time.Millisecond,
		"HandleConfirmLeader was never consulted again after its tick met a full mailbox")
}

// A batch too large for the nodes' MaxFrameSize is split until its frames
// fit, not failed whole: with many clusters between two nodes and a small
// MaxFrameSize, every coalesced heartbeat between them was lost and their
// followers campaigned over and over. Found by the second adversarial review.
// A pair beat is never split (coalescer.go, rule 8): one too large fails
// once, and the pair's beats carry half as many joins from then on, so the
// failures stop after a few halvings and the heartbeats flow.
func TestCoalescedBatchesFitASmallMaxFrameSize(t *testing.T) {
	nodes := startTestNodes(t, "mf", 2, 2048)
	log := &stepLog{steps: map[gen.PID][]observed{}}
	const clusters = 40
	var all [][]gen.PID
	for k := range clusters {
		all = append(all, spawnProbes(t, nodes, gen.Atom(fmt.Sprintf("c%d", k)), log,
			Options{ClusterID: fmt.Sprintf("c%d", k), MinClusterSize: 2, HeartbeatInterval: 20, ElectionTimeoutMin: 300, ElectionTimeoutMax: 600}))
	}
	for _, pids := range all {
		waitLeader(t, nodes, pids)
	}
	time.Sleep(500 * time.Millisecond)
	settled := make([]CoalescerStats, len(nodes))
	for i, nd := range nodes {
		settled[i] = ReadCoalescer(nd)
		assert.LessOrEqual(t, settled[i].FailedFrames, uint64(6), "node %d: the pair beats' joins halve from 40 to 1 at most", i)
	}
	time.Sleep(500 * time.Millisecond)
	for i, nd := range nodes {
		s := ReadCoalescer(nd)
		assert.Equal(t, settled[i].FailedFrames, s.FailedFrames, "node %d: coalesced frames kept failing", i)
		assert.Greater(t, s.EntriesIn, settled[i].EntriesIn, "node %d receives coalesced heartbeats", i)
		assert.Greater(t, s.PairAcksIn, settled[i].PairAcksIn, "node %d: its leaders are paired and acknowledged", i)
	}
}
