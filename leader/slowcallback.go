package leader

import (
	"fmt"
	"time"
)

// The user's callbacks run on the actor's goroutine. While one runs, the
// actor neither sends its heartbeats nor steps its members' answers, and as
// a follower it answers none of its leader's heartbeats (its steady answer
// is withdrawn while it handles a message). A callback that runs for the
// evidence window or longer therefore costs leadership: a leader's IsLeader
// turns false and its members may elect another; a follower stops counting
// towards its leader's majority. The shell times every callback and counts
// those that ran that long, by name (ergo:slow_callbacks), and says so in the
// log at most once per slowWarnEvery, so that a cluster whose leadership
// keeps moving points at the code that moves it.

// slowWarnEvery bounds how often one actor logs a slow callback.
const slowWarnEvery = time.Minute

// timed records the end of the callback named callback, begun at start.
func (a *Actor) timed(callback string, start time.Time) {
	if a.core == nil {
		return
	}
	now := time.Now()
	took, window := now.Sub(start), a.core.EvidenceWindow()
	if took < window {
		return
	}
	r := a.more()
	if r.slowCallbacks == nil {
		r.slowCallbacks = make(map[string]uint64)
	}
	r.slowCallbacks[callback]++
	if !r.slowWarnedAt.IsZero() && now.Sub(r.slowWarnedAt) < slowWarnEvery {
		return
	}
	r.slowWarnedAt = now
	a.Log().Warning("leader: cluster %q: %s ran for %v, longer than the evidence window of %v: %s",
		a.options.ClusterID, callback, took.Round(time.Millisecond), window, slowCost(a.core.IsProtocolLeader()))
}

// slowCost says what a slow callback cost, as the log line ends it.
func slowCost(leading bool) string {
	what := "its leader heard no answer from this member meanwhile"
	if leading {
		what = "this member sent no heartbeat meanwhile, IsLeader turned false, and the others may have elected another leader"
	}
	return fmt.Sprintf("%s; do long work outside the actor's callbacks (ergo:slow_callbacks counts these runs)", what)
}
