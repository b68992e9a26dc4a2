package election

import (
	"time"

	"github.com/regent-go/regent/gen"
)

// Status is a snapshot of everything inspection shows; the shell formats it
// into ergo:* keys. Times are zero when the event never happened.
type Status struct {
	// Role is what the user sees; ProtocolLeader is set while this member
	// leads the election, visible or not (a leader waiting for its view to
	// commit, or hidden below MinClusterSize).
	Role           Role
	ProtocolLeader bool
	Term           uint64
	VotedFor       gen.ProcessID
	TermChangedAt  time.Time
	Leader         gen.PID
	LeaderNode     gen.Atom
	ClusterID      string

	// View is the latest view this member accepted, nil before any.
	View *View
	// Committed is the newest view key this member knows committed.
	Committed ViewKey
	// PendingChange describes a leader's proposed, uncommitted change.
	PendingChange string
	// Below says why this member is unclustered, "" when it is not.
	Below string
	// Joining is the lineage of an agreed cluster this member asks to be
	// admitted to; zero when none.
	Joining Lineage

	ViewSize       int
	Quorum         int
	MinClusterSize int
	Members        []MemberStatus // every known peer, by node name
	Bootstrap      []gen.ProcessID
	GhostTTL       time.Duration

	// VotesGranted lists the nodes that granted a vote (self included) in the
	// current or last election; VotesCount is their number.
	VotesGranted []gen.Atom
	VotesCount   int
	// PreVoting: a pre-vote round is running; Formation: the running or last
	// election is a formation.
	PreVoting bool
	Formation bool
	// AwaitingConfirm: the leader's view is committed and
	// HandleConfirmLeader is pending.
	AwaitingConfirm bool

	ElectionTimerArmed bool
	// CampaignHeld: another member on this host holds the same-host cell, so
	// this one starts no election.
	CampaignHeld        bool
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
	// StorageError is set while the durable state cannot be written.
	StorageError error
	// Fatal is set once this member stopped on a state the rules rule out.
	Fatal             error
	ElectionsStarted  uint64
	ElectionsWon      uint64
	LeadershipChanges uint64
	// Rounds counts the campaigns since a leader was last known.
	Rounds uint64
	// QuorumLostStepDowns counts leaderships given up for lack of quorum evidence.
	QuorumLostStepDowns uint64
	// LeaderConflicts counts leaderships given up on meeting a second leader
	// of the same term.
	LeaderConflicts uint64
	// ViewChanges counts the views this member installed.
	ViewChanges uint64
	// StaleTimers counts timer firings ignored for a stale generation.
	StaleTimers uint64

	// Started is this member's start time (Config.Started).
	Started time.Time
	// Prefer is the preferred-leader rule in force; PreferStableFor the
	// steadiness it demands (its default applied).
	Prefer          PreferKind
	PreferStableFor time.Duration
	// PreferredTransfers counts the handovers this member made as leader to a
	// more preferred member; FailedHandovers those whose target did not take
	// leadership, which is then avoided for a while.
	PreferredTransfers uint64
	FailedHandovers    uint64
}

// MemberStatus describes one peer this member knows.
type MemberStatus struct {
	Node      gen.Atom
	ProcessID gen.ProcessID
	// PID is zero when it is not known (never answered, or forgotten).
	PID gen.PID
	// InView: a member of the view; otherwise declared, joining or met.
	InView bool
	// Declared: named by Bootstrap or Join.
	Declared bool
	// UnreachableSince is non-zero for a peer whose connection dropped.
	UnreachableSince time.Time
	// SendError is why the last send to it failed, nil when it did not.
	SendError error
	// Started is its start time as its messages told, zero when not known.
	Started time.Time
	// Acked is the view it last acknowledged to this member as leader; Lags
	// is set when that is not the leader's current view.
	Acked ViewStamp
	Lags  bool
}
