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

// Effect is one callback or runtime action for the shell; Kind says which,
// and which of the fields below it carries (the others are zero). A value,
// not an interface holding one of several types: an election makes a dozen
// effects a member, and each boxed would be garbage among the member's
// long-lived memory.
type Effect struct {
	Kind EffectKind
	// Term is the term of EffectConfirm, EffectBecomeLeader and
	// EffectRoleChanged.
	Term uint64
	// PID is EffectBecomeFollower's leader (zero when none is known), and
	// the member of EffectPeerJoined, EffectPeerLeft, EffectMonitor and
	// EffectDemonitor.
	PID gen.PID
	// From and To are EffectRoleChanged's roles.
	From, To Role
	// FromView and ToView are EffectViewChanged's views: the one held before
	// (nil when none) and the new one.
	FromView, ToView *View
	// Why is, in words, why EffectRoleChanged's new role is unclustered (the
	// floor and the view it is under, or that this member is outside the
	// view; empty for another role), and why EffectViewChanged's view
	// changed.
	Why string
	// Err is EffectFatal's error.
	Err error
}

// EffectKind says what an Effect asks of the shell.
type EffectKind int

const (
	// EffectConfirm asks the shell to call HandleConfirmLeader for a won
	// election at Term and report the answer with Core.ConfirmResult.
	EffectConfirm EffectKind = iota + 1
	// EffectBecomeLeader: call HandleBecomeLeader; on error call
	// Core.BecomeLeaderFailed, drop the rest of this Ready and terminate
	// the actor.
	EffectBecomeLeader
	// EffectBecomeFollower: call HandleBecomeFollower(PID). It comes on
	// every transition into follower, whenever a follower's known leader
	// changes, and when leadership ends; PID is zero when no leader is
	// known.
	EffectBecomeFollower
	// EffectPeerJoined: a member's PID became known; call HandlePeerJoined.
	EffectPeerJoined
	// EffectPeerLeft: a member left the view or its PID was forgotten; call
	// HandlePeerLeft.
	EffectPeerLeft
	// EffectMonitor asks the shell to monitor PID and report its end with
	// Core.PeerDown.
	EffectMonitor
	// EffectDemonitor asks the shell to remove the monitor of PID.
	EffectDemonitor
	// EffectRoleChanged records a role transition, From one To another at
	// Term, for logs and observers.
	EffectRoleChanged
	// EffectViewChanged records that this member's view changed, FromView
	// ToView, for the reason Why.
	EffectViewChanged
	// EffectFatal reports a state the protocol rules out (two different
	// views with one key): the member stops taking part, and the shell
	// should end the actor with Err and report it loudly.
	EffectFatal
)

// String names the kind as its constant does, without the prefix.
func (k EffectKind) String() string {
	switch k {
	case EffectConfirm:
		return "Confirm"
	case EffectBecomeLeader:
		return "BecomeLeader"
	case EffectBecomeFollower:
		return "BecomeFollower"
	case EffectPeerJoined:
		return "PeerJoined"
	case EffectPeerLeft:
		return "PeerLeft"
	case EffectMonitor:
		return "Monitor"
	case EffectDemonitor:
		return "Demonitor"
	case EffectRoleChanged:
		return "RoleChanged"
	case EffectViewChanged:
		return "ViewChanged"
	case EffectFatal:
		return "Fatal"
	}
	return "unknown"
}

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
