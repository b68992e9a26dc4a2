package election

import (
	"time"

	"github.com/regent-go/regent/gen"
)

// Status is a snapshot of everything inspection shows; the shell formats it
// into ergo:* keys. Times are zero when the event never happened.
type Status struct {
	Role          Role
	Term          uint64
	VotedFor      gen.ProcessID
	TermChangedAt time.Time
	Leader        gen.PID
	LeaderNode    gen.Atom
	ClusterID     string

	ViewSize       int
	Quorum         int
	MinClusterSize int
	Members        []MemberStatus // every member but self, by node name
	Bootstrap      []gen.ProcessID
	GhostTTL       time.Duration

	// VotesGranted lists the nodes that granted a vote (self included) in the
	// current or last election; VotesCount is their number.
	VotesGranted []gen.Atom
	VotesCount   int
	// PreVoting: a pre-vote round is running.
	PreVoting bool
	// AwaitingConfirm: the election is won and HandleConfirmLeader is pending.
	AwaitingConfirm bool

	ElectionTimerArmed bool
	// CampaignHeld: another member on this host holds the same-host cell, so
	// this one starts no election.
	CampaignHeld bool
	// ProbeTimerArmed: unreachable members are being probed.
	ProbeTimerArmed     bool
	HeartbeatTimerArmed bool
	HeartbeatInLast     time.Time
	HeartbeatOutLast    time.Time
	ElectionTimeoutMin  time.Duration
	ElectionTimeoutMax  time.Duration
	HeartbeatInterval   time.Duration

	Dropped          map[string]uint64
	SendFailingPeers []gen.Atom
	ConfirmDenied    uint64
	LastDeniedAt     time.Time
	// LastDenyError is the error HandleConfirmLeader gave at the last denial,
	// nil when it answered false.
	LastDenyError error
	// LastBecomeLeaderError is what HandleBecomeLeader last failed with.
	LastBecomeLeaderError error
	ElectionsStarted      uint64
	ElectionsWon          uint64
	LeadershipChanges     uint64
	// Rounds counts the campaigns since a leader was last known.
	Rounds uint64
	// QuorumLostStepDowns counts leaderships given up for lack of quorum evidence.
	QuorumLostStepDowns uint64
	// LeaderConflicts counts leaderships given up on meeting a second leader
	// in the same term (diverged views merging).
	LeaderConflicts uint64
	// StaleTimers counts timer firings ignored for a stale generation.
	StaleTimers uint64

	// Started is this member's start time (Config.Started).
	Started time.Time
	// Prefer is the preferred-leader rule in force; PreferStableFor the
	// steadiness it demands (its default applied).
	Prefer          PreferKind
	PreferStableFor time.Duration
	// PreferredTransfers counts the handovers this member made as leader to a
	// more preferred member.
	PreferredTransfers uint64
}

// MemberStatus describes one member of the view.
type MemberStatus struct {
	Node      gen.Atom
	ProcessID gen.ProcessID
	// PID is zero when it is not known (never answered, or forgotten).
	PID gen.PID
	// Declared: named by Bootstrap or Join rather than discovered.
	Declared bool
	// UnreachableSince is non-zero for a member whose connection dropped.
	UnreachableSince time.Time
	// SendError is why the last send to it failed, nil when it did not.
	SendError error
	// Started is its start time as its messages told, zero when not known.
	Started time.Time
}
