package election

import (
	"time"

	"github.com/regent-go/regent/gen"
)

// storageFailed puts the member in the state it must hold while its term,
// vote and view cannot be written: it votes for nobody, acknowledges
// nothing, leads nothing and ignores protocol messages, and it asks the
// shell to write its state again every ElectionTimeoutMax.
func (c *Core) storageFailed(now time.Time, err error) {
	first := c.few().storageErr == nil
	c.more().storageErr = err
	if first {
		c.camp = nil
		if c.role == RoleLeader {
			c.disarm(TimerHeartbeat)
			c.lead = nil
		}
		c.role = RoleFollower
		c.leader, c.leaderID = gen.PID{}, gen.ProcessID{}
		c.disarm(TimerElection)
	}
	c.arm(TimerStorage, c.cfg.ElectionTimeoutMax)
}

// onStorageTick asks the shell to write the state again.
func (c *Core) onStorageTick() {
	if c.few().storageErr == nil {
		return
	}
	c.hardDirty = true
	c.arm(TimerStorage, c.cfg.ElectionTimeoutMax)
}

// storageRecovered ends the failed state once a write succeeded.
func (c *Core) storageRecovered(now time.Time) {
	if c.few().storageErr == nil {
		return
	}
	c.rare.storageErr = nil
	c.disarm(TimerStorage)
	c.armCampaign(now)
}
