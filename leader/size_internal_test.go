package leader

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestActorFitsItsAllocation checks the sizes of what every member holds
// against the allocator's size classes they were laid out for: an Actor
// that the embedding type, with an Options and little more, keeps within
// 1,152 bytes (header included; 1,280 past it), and a pair binding per
// bound follower within 416 (448 past it).
func TestActorFitsItsAllocation(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Actor{}), uintptr(960))
	assert.LessOrEqual(t, unsafe.Sizeof(Actor{})+unsafe.Sizeof(Options{})+8, uintptr(1152))
	assert.LessOrEqual(t, unsafe.Sizeof(pairBinding{}), uintptr(416))
}
