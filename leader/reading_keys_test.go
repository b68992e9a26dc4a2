package leader

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every ergo:* key the actor answers has a parser, so the typed reading
// never silently misses a key added to inspection.
func TestEveryInspectionKeyIsParsed(t *testing.T) {
	for _, k := range InspectKeys() {
		_, ok := inspectionFields[k]
		assert.True(t, ok, "no parser for %s", k)
	}
}
