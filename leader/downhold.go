package leader

import (
	"math/rand/v2"
	"time"

	"github.com/regent-go/regent/gen"
)

// When the connection to a node drops, the runtime tells every member
// monitoring a peer there: with thousands of clusters over the same nodes,
// thousands of downs at once. Only the followers whose leader was there
// need theirs now (they elect a new one), and the members with no leader
// (their view of who is alive decides who campaigns). For every other
// member the lost peer is a follower, whose loss can wait without harm:
// failure detection may always be late (a partition gives no down at all),
// and a leader's quorum evidence, not a down, is what ends a leadership
// that lost its majority. So a member lets the runtime hold those downs
// back (node.DownDeferrer) for ElectionTimeoutMax to twice that, drawn at
// random for each, so that they come spread out, after the elections they
// would have slowed.

// DownDelayOnLoss implements node.DownDeferrer: how long the downs of this
// member's peers on node lost may wait when the connection to it drops.
// Zero when the member follows a leader there, or none (a candidate, a
// member between leaders, one that has not reported yet). The runtime calls
// it from its own goroutine: it reads only what the actor published with
// its last report (reportTransition) and the core's fixed settings.
func (a *Actor) DownDelayOnLoss(lost gen.Atom) time.Duration {
	r := a.reported.Load()
	if r == nil || r.leader == (gen.PID{}) || r.leader.Node == lost {
		return 0
	}
	_, most := a.core.ElectionTimeouts()
	if most <= 0 {
		return 0
	}
	return most + rand.N(most)
}
