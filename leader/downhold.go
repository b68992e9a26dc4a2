package leader

import (
	"math/rand/v2"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// When the connection to a node drops, the runtime tells every member
// monitoring a peer there: with thousands of clusters over the same nodes,
// thousands of downs at once. Only the followers whose leader was there
// need theirs now (they elect a new one), and the members with no leader
// (their view of who is alive decides who campaigns). For a follower whose
// leader lives elsewhere, the lost peer is another follower, whose loss can
// wait without harm: failure detection may always be late (a partition
// gives no down at all), and what a follower does with a peer's down (the
// peer becomes a ghost, dropped after GhostTTL by a leader) waits with it.
// So such a follower lets the runtime hold those downs back
// (node.DownDeferrer) for ElectionTimeoutMax to twice that, drawn at random
// for each, so that they come spread out, after the elections they would
// have slowed; the runtime delivers them at once if the connection comes
// back first.
//
// A member that stops following a leader elsewhere (it campaigns, leads,
// or is between leaders) has what is held for it delivered at once
// (releaseHeldDowns): from then on it decides with its view of who is
// alive, as a member that held nothing does. A loss the runtime was
// sorting as it changed (asked before, listed after) asks it again.
//
// A leader holds nothing back: its quorum evidence may count a send to a
// peer as contact until that peer's down (EvidenceContact), and a hand-over
// must not pick a peer it has lost. Nor does any member under
// EvidenceContact: a follower may become leader while its downs are held,
// and would then count sends to the lost peers as contact until they came.

// DownDelayOnLoss implements node.DownDeferrer: how long the downs of this
// member's peers on node lost may wait when the connection to it drops.
// Zero unless the member follows a leader on another node: not for a
// leader (visible or not), a candidate, a member between leaders, one that
// has not reported yet, or any member under EvidenceContact. The runtime
// calls it from its own goroutine: it reads only what the actor published
// with its last report (reportTransition) and the core's fixed settings.
func (a *Actor) DownDelayOnLoss(lost gen.Atom) time.Duration {
	r := a.reported.Load()
	if r == nil || !r.mayHoldDowns() || r.leader.Node == lost {
		return 0
	}
	if a.core.Evidence() == election.EvidenceContact {
		return 0
	}
	_, most := a.core.ElectionTimeouts()
	if most <= 0 {
		return 0
	}
	return most + rand.N(most)
}

// mayHoldDowns reports whether a member in state r may let its peers'
// downs wait: it follows a leader it knows, and does not lead itself.
func (r *transitionState) mayHoldDowns() bool {
	return !r.protocol && r.role == election.RoleFollower && r.leader != (gen.PID{})
}

// heldReleaser is a runtime that delivers the downs it holds back for a
// watcher on request (node.ReleaseHeldDowns).
type heldReleaser interface {
	ReleaseHeldDowns(watcher gen.PID) int
}

// releaseHeldDowns has the runtime deliver every down it holds back for
// this member now: it no longer follows a leader elsewhere.
func (a *Actor) releaseHeldDowns() {
	if r, ok := a.Node().(heldReleaser); ok {
		r.ReleaseHeldDowns(a.PID())
	}
}
