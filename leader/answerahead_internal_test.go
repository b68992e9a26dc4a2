package leader

import (
	"testing"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// stalledNode is a node whose sends toward other nodes wait until released,
// as node.Send does for up to SendQueueWait (1 s by default, per attempt)
// when the connection's send queue is full: a peer that stopped reading, a
// one-way cut, a stalled loaded peer. The zero value stalls nothing.
type stalledNode struct {
	gen.Node
	entered chan struct{}
	release chan struct{}
}

func (n *stalledNode) Name() gen.Atom { return "n@h" }

func (n *stalledNode) Send(to any, message any) error {
	if n.release == nil {
		// An outbox's linger can flush behind a test that stalls nothing:
		// its goroutine must not wait forever (goleak).
		return nil
	}
	select {
	case n.entered <- struct{}{}:
	default:
	}
	<-n.release
	return nil
}

// runningCoalescer is a coalescer on node whose process runs, and the
// heartbeat that a leader on p@h sends its followers on node, which they
// answer ahead. Entries wait for an hour's linger: nothing is flushed unless
// a test fills an outbox.
func runningCoalescer(t *testing.T, node gen.Node) (*coalescer, gen.PID, election.MessageHeartbeat) {
	c := newCoalescer(node)
	running := gen.PID{Node: node.Name(), ID: 1, Creation: 1}
	c.pid.Store(&running)
	t.Cleanup(c.stop)
	leaderPID := gen.PID{Node: "p@h", ID: 7, Creation: 1}
	beat := election.MessageHeartbeat{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m", Node: "p@h"}}}
	return c, leaderPID, beat
}

// Answering ahead runs on the node's coalescer process and holds the
// follower's inbox lock while it enqueues the answer. An outbox that the
// answer fills (maxBatchEntries) is flushed right there, so the coalescer
// process sends a frame to the leader's node with the inbox locked; when
// that connection's queue is full the send waits (SendQueueWait, per frame).
// Meanwhile (1) the follower cannot start handling any message (handle
// withdraws its answer under that lock first), (2) its election timer's
// callback blocks in heardUntil holding the timer's lock, and (3) the
// coalescer process takes no batch from any node, so heartbeats of every
// other leader to every member of this node are neither answered nor
// delivered. Before this change the coalescer process never sent anything
// while receiving, and a full outbox was flushed by the member whose entry
// filled it, holding no lock. Found by the adversarial review of
// answering ahead.
func TestAnsweringAheadHoldsNoInboxLockAcrossASend(t *testing.T) {
	node := &stalledNode{entered: make(chan struct{}, 1), release: make(chan struct{})}
	c, leaderPID, beat := runningCoalescer(t, node)
	// Other members' entries for the leader's node, one short of a full
	// outbox (an hour's linger: no timer flushes them meanwhile).
	for i := range maxBatchEntries - 1 {
		ack := CoalescedAck{CoalescedRoute: CoalescedRoute{FromID: uint64(100 + i), FromCreation: 1, ToID: 7, ToCreation: 1}}
		if !c.enqueue("p@h", nil, &ack, time.Hour) {
			t.Fatal("the coalescer took no entry")
		}
	}
	follower := gen.PID{Node: "n@h", ID: 2, Creation: 1}
	ib := &inbox{}
	c.addInbox(follower, ib)
	ib.publish(&steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: leaderPID, Heartbeat: steadyOf(beat), Timeout: time.Second}, linger: time.Hour})

	answered := make(chan bool, 1)
	go func() { answered <- c.answer(follower, leaderPID, time.Now(), &beat) }() // the coalescer process
	select {
	case <-node.entered: // the full outbox is being sent; the send waits
	case <-time.After(5 * time.Second):
		t.Fatal("the full outbox was never flushed")
	}
	// The follower starts handling a message (its election timer's
	// callback, heardUntil, takes the same lock), and the coalescer process
	// goes on to its next batch.
	withdrawn := make(chan struct{})
	go func() { ib.withdrawPaired(c); close(withdrawn) }()
	select {
	case <-withdrawn:
	case <-time.After(5 * time.Second):
		t.Error("the follower could not withdraw its steady answer while the coalescer process waited on a send to another node with its inbox locked")
	}
	returned := false
	select {
	case ok := <-answered:
		returned = true
		if !ok {
			t.Error("the heartbeat was not answered")
		}
	case <-time.After(5 * time.Second):
		t.Error("the coalescer process waited on a send to another node while taking a batch: every node's heartbeats wait behind it")
	}
	close(node.release)
	if !returned {
		<-answered
	}
	<-withdrawn
}

// A heartbeat is never held as arriving before the steady answer it was
// answered with was given: the coalescer process reads the clock once per
// batch, before it looks at the inbox, so without a bound a batch read
// before the follower published would be stepped before the answer's time,
// where the core's promise does not hold (election
// TestSteadyAnswerDoesNotHoldBeforeItWasGiven). Found by the
// adversarial review of answering ahead.
func TestAHeartbeatAnsweredAheadIsNeverHeldBeforeTheAnswer(t *testing.T) {
	c, leaderPID, beat := runningCoalescer(t, &stalledNode{})
	follower := gen.PID{Node: "n@h", ID: 2, Creation: 1}
	ib := &inbox{}
	c.addInbox(follower, ib)
	read := time.Now() // the coalescer process reads the clock for its batch
	given := read.Add(time.Millisecond)
	ib.publish(&steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: leaderPID, Heartbeat: steadyOf(beat), Timeout: time.Second},
		linger: time.Hour, since: sinceEpoch(given)}) // then the follower publishes
	if !c.answer(follower, leaderPID, read, &beat) {
		t.Fatal("not answered")
	}
	_, beats, _ := ib.take()
	if len(beats) != 1 || beats[0] < sinceEpoch(given) {
		t.Errorf("held %v, before the answer was given at %v", beats, sinceEpoch(given))
	}
}
