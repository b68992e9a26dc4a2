package leader

import "github.com/regent-go/regent/gen"

// RareFieldsMade reports whether a made the fields most members never use
// (actorRare): a member of a settled cluster makes none (heap_test.go).
func RareFieldsMade(a *Actor) bool { return a.rare != nil }

// take removes and returns the entries waiting for dest.
func (c *coalescer) take(dest gen.Atom) (MessageHeartbeatBatch, bool) {
	ob := c.outboxFor(dest)
	if ob == nil {
		return MessageHeartbeatBatch{}, false
	}
	return c.takeOut(ob)
}
