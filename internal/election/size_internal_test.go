package election

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestCoreFitsItsAllocation checks that a Core, which every member holds,
// stays within a 1,024-byte allocation: the allocator adds an 8-byte header
// to an object of that size with pointers, and one byte more costs 128
// (the next size class, 1,152). Find padding or a rarely used field to
// move behind a pointer before raising it.
func TestCoreFitsItsAllocation(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Core{}), uintptr(1024-8))
	// Each member holds one peer per other member, in allocations of 224.
	assert.LessOrEqual(t, unsafe.Sizeof(peer{}), uintptr(224))
	// And one store, in an allocation of 320.
	assert.LessOrEqual(t, unsafe.Sizeof(memberStore{}), uintptr(320))
}
