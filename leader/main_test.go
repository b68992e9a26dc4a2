package leader_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test stops the nodes it starts; a stopped node leaves nothing running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
