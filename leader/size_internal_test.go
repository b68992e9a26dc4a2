package leader

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestActorFitsItsAllocation checks the sizes of what every member holds
// against the allocator's size classes they were laid out for: an Actor
// that the embedding type, with an Options, keeps within 1,024 bytes
// (header included; 1,152 past it), its timers' owner within 128 (144 past
// it), and a pair binding per bound follower within 96 (112 past it):
// its heartbeat and acknowledgement are those of the member's steady answer;
// and, on a steady leader's node, a beat slot per follower within 80 (96
// past it): the member and its acknowledgement are those of the beat.
// Before raising one, find padding or a rarely used field to move behind a
// pointer (actorRare).
func TestActorFitsItsAllocation(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Actor{}), uintptr(832))
	assert.LessOrEqual(t, unsafe.Sizeof(Actor{})+unsafe.Sizeof(Options{})+8, uintptr(1024))
	assert.LessOrEqual(t, unsafe.Sizeof(timerOwner{}), uintptr(128))
	assert.LessOrEqual(t, unsafe.Sizeof(pairBinding{}), uintptr(96))
	assert.LessOrEqual(t, unsafe.Sizeof(beatSlot{}), uintptr(80))
}
