package election

import (
	"time"

	"github.com/regent-go/regent/gen"
)

// Ready is everything the shell must do after one or more inputs, in the
// order: persist HardState, apply Timers, run Effects in order, send Messages.
type Ready struct {
	// HardState is non-nil when the term, the vote or the view changed:
	// persist it BEFORE sending Messages, or a restart could vote twice in one
	// term or acknowledge a view it then forgets.
	HardState *HardState
	// Messages to send, in order.
	Messages []Outbound
	// Timers to arm or cancel, in order.
	Timers []TimerOp
	// Effects are callbacks and runtime actions, in the order they happened.
	Effects []Effect
}

// Outbound is one message to send: to the PID when To is not zero, else by
// name to ToName. A failed send is reported back with Core.SendFailed.
type Outbound struct {
	To      gen.PID
	ToName  gen.ProcessID
	Message any
}

// TimerKind says which of the Core's timers a Timer is.
type TimerKind int

const (
	// TimerElection: a follower's or candidate's wait before campaigning.
	TimerElection TimerKind = iota
	// TimerHeartbeat: a leader's heartbeat and evidence check.
	TimerHeartbeat
	// TimerProbe: the next attempt to reach declared peers outside the view,
	// to ask the leader to admit this member, or to forward membership
	// requests not yet applied.
	TimerProbe
	// TimerStorage: after a failed write of the durable state, the next try.
	TimerStorage
	// timerKinds counts the kinds.
	timerKinds
)

// String names the timer kind.
func (k TimerKind) String() string {
	switch k {
	case TimerElection:
		return "election"
	case TimerHeartbeat:
		return "heartbeat"
	case TimerProbe:
		return "probe"
	case TimerStorage:
		return "storage"
	}
	return "unknown"
}

// Timer names one arming of a timer; the shell hands it back to Core.Tick when
// it fires. A Timer whose Gen is not the current one of its Kind is stale and
// ignored, so the shell need not win races against cancellation.
type Timer struct {
	Kind TimerKind
	Gen  uint64
}

// TimerOp arms Timer to fire After from now, or with Cancel stops it. Arming a
// kind replaces any earlier timer of the same kind.
type TimerOp struct {
	Timer  Timer
	After  time.Duration
	Cancel bool
}

// Effect is one of the Effect types below; the shell switches on it.
type Effect interface{ isEffect() }

// Confirm asks the shell to call HandleConfirmLeader for a won election at
// Term and report the answer with Core.ConfirmResult.
type Confirm struct{ Term uint64 }

// BecomeLeader: call HandleBecomeLeader; on error call Core.BecomeLeaderFailed,
// drop the rest of this Ready and terminate the actor.
type BecomeLeader struct{ Term uint64 }

// BecomeFollower: call HandleBecomeFollower(Leader). It fires on every
// transition into follower, whenever a follower's known leader changes, and
// when leadership ends; Leader is zero when no leader is known.
type BecomeFollower struct{ Leader gen.PID }

// PeerJoined: a member's PID became known; call HandlePeerJoined.
type PeerJoined struct{ PID gen.PID }

// PeerLeft: a member left the view or its PID was forgotten; call HandlePeerLeft.
type PeerLeft struct{ PID gen.PID }

// Monitor asks the shell to monitor PID and report its end with Core.PeerDown.
type Monitor struct{ PID gen.PID }

// Demonitor asks the shell to remove the monitor of PID.
type Demonitor struct{ PID gen.PID }

// RoleChanged records a role transition at Term, for logs and observers.
// Below is set when the new role is unclustered: why, in words (the floor
// and the view it is under, or that this member is outside the view).
type RoleChanged struct {
	From, To Role
	Term     uint64
	Below    string
}

// ViewChanged records that this member's view changed: From is the view it
// held before (nil when none), To the new one, Reason says why in words.
type ViewChanged struct {
	From, To *View
	Reason   string
}

// Fatal reports a state the protocol rules out (two different views with one
// key): the member stops taking part, and the shell should end the actor
// with Err and report it loudly.
type Fatal struct{ Err error }

func (Confirm) isEffect()        {}
func (BecomeLeader) isEffect()   {}
func (BecomeFollower) isEffect() {}
func (PeerJoined) isEffect()     {}
func (PeerLeft) isEffect()       {}
func (Monitor) isEffect()        {}
func (Demonitor) isEffect()      {}
func (RoleChanged) isEffect()    {}
func (ViewChanged) isEffect()    {}
func (Fatal) isEffect()          {}

// HardState is what durable storage keeps across restarts: the term, the vote
// cast in it (zero when none) and the latest view this member accepted (nil
// before it took part in a formation).
type HardState struct {
	Term     uint64
	VotedFor gen.ProcessID
	View     *View
}

// Role is a member's place in the election.
type Role int

const (
	// RoleUnclustered: no visible leader may exist here: the agreed view is
	// smaller than MinClusterSize, this member is outside it, or (before any
	// view exists) fewer than MinClusterSize members are declared.
	RoleUnclustered Role = iota
	// RoleFollower: accepting a leader, or waiting to campaign.
	RoleFollower
	// RoleCandidate: campaigning for a term, or won and waiting for confirmation.
	RoleCandidate
	// RoleLeader: holding leadership and sending heartbeats.
	RoleLeader
)

// String gives "unclustered", "follower", "candidate" or "leader".
func (r Role) String() string {
	switch r {
	case RoleUnclustered:
		return "unclustered"
	case RoleFollower:
		return "follower"
	case RoleCandidate:
		return "candidate"
	case RoleLeader:
		return "leader"
	}
	return "unknown"
}
