package leader

import (
	"sync"

	"github.com/regent-go/regent/internal/election"
)

// readyRoom is memory a member lends its core while it handles one
// message, for the Ready that message makes (Core.Lend): the messages,
// timers and effects of an input, made anew for each, were most of an
// election burst's garbage, and that garbage kept pages in use under the
// members' long-lived objects made among it. Rooms are shared through
// readyRooms by every member of the process; one is lent for one message
// and comes back, cleared, once the core holds none of it.
type readyRoom struct {
	messages [8]election.Outbound
	timers   [4]election.TimerOp
	effects  [8]election.Effect
}

var readyRooms = sync.Pool{New: func() any { return new(readyRoom) }}

// lendRoom lends the core a room for the message about to be handled.
func (a *Actor) lendRoom() *readyRoom {
	r := readyRooms.Get().(*readyRoom)
	lent := r.lent()
	a.core.Lend(lent.Messages, lent.Timers, lent.Effects)
	return r
}

// lent is r as the room a Ready is collected in.
func (r *readyRoom) lent() election.Ready {
	return election.Ready{Messages: r.messages[:0], Timers: r.timers[:0], Effects: r.effects[:0]}
}

// reclaimRoom takes r back once the message is handled: cleared and
// pooled when the core holds none of it, left to the collector when it
// still does (a Ready left pending, as when the actor fails).
func (a *Actor) reclaimRoom(r *readyRoom) {
	if !a.core.Reclaim() {
		return
	}
	*r = readyRoom{}
	readyRooms.Put(r)
}
