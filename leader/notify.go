package leader

import (
	"fmt"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Transition is one change of a member's role, term, recognised leader,
// protocol leadership or view, as reported to Options.OnTransition
// (subscribers hear of leader and term changes only, MessageLeaderChanged).
type Transition struct {
	At             time.Time
	ClusterID      string
	Member         gen.PID
	Role           Role
	Term           uint64
	Leader         gen.PID
	ViewSize       int
	Quorum         int
	MinClusterSize int
	// VotesGranted is the number of votes behind the last election this
	// member ran, itself included.
	VotesGranted int
	// ProtocolLeader is set while this member leads the election, visibly
	// or not (a leader below MinClusterSize, or one whose view has not
	// committed yet, leads without Role being RoleLeader).
	ProtocolLeader bool
	// View is the latest view this member accepted (zero before any).
	View View
}

// MessageSubscribe asks a leader actor to send MessageLeaderChanged to
// Subscriber now and on every change of leader or term, until the subscriber
// terminates or sends MessageUnsubscribe. It works across nodes: register
// NetworkTypes on both.
type MessageSubscribe struct {
	Subscriber gen.PID
}

// MessageUnsubscribe ends a subscription made with MessageSubscribe.
type MessageUnsubscribe struct {
	Subscriber gen.PID
}

// MessageLeaderChanged tells a subscriber what a member believes: who leads
// its cluster and at which term. It is sent once when the subscription starts.
type MessageLeaderChanged struct {
	ClusterID  string
	Member     gen.PID
	Role       Role
	Term       uint64
	Leader     gen.PID
	LeaderNode gen.Atom
}

// transitionState is what was last reported, to report only changes.
type transitionState struct {
	role     election.Role
	term     uint64
	leader   gen.PID
	protocol bool
	view     ViewStamp
}

// reportTransition tells OnTransition when role, term, leader, protocol
// leadership or view changed since the last report, and the subscribers
// when leader or term did.
func (a *Actor) reportTransition() {
	view, _ := a.core.View()
	cur := transitionState{role: a.core.Role(), term: a.core.Term(), leader: a.core.Leader(), protocol: a.core.IsProtocolLeader(), view: view.Stamp}
	last := a.reported.Load()
	if last != nil && *last == cur {
		return
	}
	leaderChanged := last == nil || last.term != cur.term || last.leader != cur.leader
	a.reported.Store(&cur) // a new one per change: the runtime may be reading the last (DownDelayOnLoss)
	if last != nil && last.mayHoldDowns() && !cur.mayHoldDowns() {
		a.releaseHeldDowns()
	}
	if a.options.OnTransition != nil {
		view.Members = slices.Clone(view.Members) // the core's are shared: the user may change these
		a.options.OnTransition(Transition{
			At: time.Now(), ClusterID: a.options.ClusterID, Member: a.PID(), Role: Role(cur.role.String()), Term: cur.term,
			Leader: cur.leader, ViewSize: a.core.ViewSize(), Quorum: a.core.Quorum(), MinClusterSize: a.options.minClusterSize,
			VotesGranted: a.core.VotesGranted(), ProtocolLeader: cur.protocol, View: view,
		})
	}
	if leaderChanged {
		for sub := range a.few().subscribers {
			a.notify(sub)
		}
	}
}

func (a *Actor) notify(sub gen.PID) {
	msg := MessageLeaderChanged{
		ClusterID: a.options.ClusterID, Member: a.PID(), Role: Role(a.core.Role().String()),
		Term: a.core.Term(), Leader: a.core.Leader(), LeaderNode: a.core.Leader().Node,
	}
	if err := a.Send(sub, msg); err != nil {
		a.Log().Warning("leader: notifying subscriber %s: %v", sub, err)
	}
}

// subscribe registers sub and sends it the current state.
func (a *Actor) subscribe(sub gen.PID) {
	if sub == (gen.PID{}) {
		a.Log().Warning("leader: a subscription without a subscriber PID was ignored")
		return
	}
	if _, ok := a.few().subscribers[sub]; !ok {
		if err := a.watch(sub); err != nil {
			a.Log().Warning("leader: subscriber %s is unreachable: %v", sub, err)
			return
		}
		r := a.more()
		if r.subscribers == nil {
			r.subscribers = make(map[gen.PID]struct{})
		}
		r.subscribers[sub] = struct{}{}
	}
	a.notify(sub)
}

func (a *Actor) unsubscribe(sub gen.PID) {
	if _, ok := a.few().subscribers[sub]; !ok {
		return
	}
	delete(a.few().subscribers, sub)
	a.unwatch(sub, "subscriber")
}

// controlRequest is a Call the shell answers itself, before HandleCall: the
// local control operations (localControl, which cannot cross the network:
// the codec refuses a struct with unexported fields) and the read-only
// MessageMembersRequest, which may come from any node.
type controlRequest interface {
	answer(a *Actor) (any, error)
}

// localControl drives a leader actor from outside it, on its own node
// (tests, the CLI, the harness).
type localControl struct {
	op   controlOp
	peer gen.ProcessID
	node gen.Atom
}

type controlOp int

const (
	opJoin controlOp = iota
	opLeave
	opStepDown
	opTransfer
)

// control runs a controlRequest on the actor's goroutine.
func (a *Actor) control(r controlRequest) (any, error) { return r.answer(a) }

func (r localControl) answer(a *Actor) (any, error) {
	switch r.op {
	case opJoin:
		return true, a.Join(r.peer)
	case opLeave:
		return true, a.Leave(r.node)
	case opStepDown:
		return true, a.StepDown()
	case opTransfer:
		return true, a.TransferLeadership(r.node)
	}
	return nil, fmt.Errorf("leader: unknown control operation %d: %w", r.op, gen.ErrIncorrect)
}

// callControl sends a localControl to a leader actor on node.
func callControl(node gen.Node, pid gen.PID, r localControl) (any, error) {
	if pid.Node != node.Name() {
		return nil, fmt.Errorf("leader: %s is not on this node (%s); control requests are local: %w", pid, node.Name(), gen.ErrNotAllowed)
	}
	return node.Call(pid, r)
}

// JoinPeer makes the local leader actor pid Join peer, from outside the actor.
func JoinPeer(node gen.Node, pid gen.PID, peer gen.ProcessID) error {
	_, err := callControl(node, pid, localControl{op: opJoin, peer: peer})
	return err
}

// LeavePeer makes the local leader actor pid Leave peerNode, from outside the actor.
func LeavePeer(node gen.Node, pid gen.PID, peerNode gen.Atom) error {
	_, err := callControl(node, pid, localControl{op: opLeave, node: peerNode})
	return err
}

// StepDownLeader makes the local leader actor pid hand its leadership over
// (see Actor.StepDown), from outside the actor.
func StepDownLeader(node gen.Node, pid gen.PID) error {
	_, err := callControl(node, pid, localControl{op: opStepDown})
	return err
}

// TransferLeadershipTo makes the local leader actor pid hand its leadership to
// target (see Actor.TransferLeadership), from outside the actor.
func TransferLeadershipTo(node gen.Node, pid gen.PID, target gen.Atom) error {
	_, err := callControl(node, pid, localControl{op: opTransfer, node: target})
	return err
}
