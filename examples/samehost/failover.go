package main

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// round is what one kill of a member's process showed.
type round struct {
	Killed      gen.Atom      // the leader
	KilledHeld  bool          // the victim held the cell (always false without the shortcut)
	NewHolder   gen.Atom      // the first survivor seen holding the cell when the victim held it
	Claim       time.Duration // from the kill to a survivor seeing the new holder
	FinalHolder gen.Atom      // the member with the lowest PID, which holds the cell in the end
	NewLeader   gen.Atom
	Failover    time.Duration // from the kill to a new leader followed by a majority
	Settled     time.Duration // from the kill to every survivor following it
	OldTerm     uint64
	NewTerm     uint64
	Campaigns   uint64 // elections started by the survivors, summed
	Frames      int64  // frames the survivors sent each other, summed
	ClaimedLead bool   // the new holder is the new leader
}

// settledLeader waits until every running member follows one leader and returns it.
func (c *cluster) settledLeader() (leader.Agreement, error) {
	if _, err := c.await(func() bool { return c.agreed(0) }, nil); err != nil {
		return leader.Agreement{}, fmt.Errorf("samehost: waiting for an agreed leader: %w", err)
	}
	m, _ := c.following(0)
	return m, nil
}

// cellHolder returns the member holding the cell as member i sees it, -1
// when none runs.
func (c *cluster) cellHolder(i int) (int, error) {
	pid, err := c.holder(i)
	if err != nil {
		return -1, err
	}
	return c.ownerOf(pid), nil
}

// counters are the survivors' readings that a round compares before and after.
type counters struct {
	parentIn  uint64
	framesOut uint64
	started   uint64
}

func (c *cluster) read(members []int) (counters, error) {
	r := counters{parentIn: c.node.Network().Stats().FramesIn}
	for _, i := range members {
		f, err := c.framesOut(i)
		if err != nil {
			return counters{}, err
		}
		s, err := c.electionsStarted(i)
		if err != nil {
			return counters{}, err
		}
		r.framesOut += f
		r.started += s
	}
	return r, nil
}

// failover kills the leader's process once the cluster agrees on a leader
// (with the shortcut, the first leader also holds the cell), and follows the
// survivors until they all agree on a new leader and, with the shortcut, the
// cell has moved to the lowest live PID.
func (c *cluster) failover() (round, error) {
	lead, err := c.settledLeader()
	if err != nil {
		return round{}, err
	}
	victim := c.index(lead.Leader)
	r := round{Killed: lead.Leader, OldTerm: lead.Term}
	if c.cfg.shortcut {
		h, err := c.cellHolder(victim)
		if err != nil {
			return round{}, err
		}
		r.KilledHeld = h == victim
	}
	victimPID := c.children[victim].cmd.Process.Pid
	var survivors []int
	for _, i := range c.running() {
		if i != victim {
			survivors = append(survivors, i)
		}
	}
	before, err := c.read(survivors)
	if err != nil {
		return round{}, err
	}

	killedAt := time.Now()
	if err := c.kill(victim); err != nil {
		return round{}, err
	}
	var pollErr error
	watchCell := func() {
		if !r.KilledHeld || r.NewHolder != "" || pollErr != nil {
			return
		}
		pid, err := c.holder(survivors[0])
		if err != nil {
			pollErr = err
			return
		}
		if pid != 0 && pid != victimPID {
			r.Claim = time.Since(killedAt)
			if owner := c.ownerOf(pid); owner >= 0 {
				r.NewHolder = c.names[owner]
			}
		}
	}
	at, err := c.await(func() bool {
		_, n := c.following(lead.Term)
		return pollErr != nil || n >= c.quorum()
	}, watchCell)
	if err != nil {
		return round{}, fmt.Errorf("samehost: waiting for a majority to follow a new leader after killing %s: %w", r.Killed, err)
	}
	if pollErr != nil {
		return round{}, pollErr
	}
	r.Failover = at.Sub(killedAt)
	at, err = c.await(func() bool {
		return pollErr != nil || (c.agreed(lead.Term) && (!r.KilledHeld || r.NewHolder != ""))
	}, watchCell)
	if err != nil {
		return round{}, fmt.Errorf("samehost: waiting for every survivor to follow the new leader: %w", err)
	}
	if pollErr != nil {
		return round{}, pollErr
	}
	r.Settled = at.Sub(killedAt)
	after, err := c.read(survivors)
	if err != nil {
		return round{}, err
	}

	next, _ := c.following(lead.Term)
	r.NewLeader, r.NewTerm = next.Leader, next.Term
	r.ClaimedLead = r.NewHolder != "" && r.NewHolder == r.NewLeader
	r.Campaigns = after.started - before.started
	if c.cfg.shortcut {
		if r.FinalHolder, err = c.lowestHolds(); err != nil {
			return round{}, err
		}
	}
	// The survivors' frames include what they sent the parent (notifications,
	// inspection and stats answers); read reads the parent's FramesIn before
	// the survivors' counters, so the parent's count covers the same frames.
	r.Frames = int64(after.framesOut-before.framesOut) - int64(after.parentIn-before.parentIn)
	return r, nil
}

// lowestHolds waits until every running member sees the cell held by the
// running member with the lowest PID, and returns that member.
func (c *cluster) lowestHolds() (gen.Atom, error) {
	lowest := -1
	for _, i := range c.running() {
		if lowest < 0 || c.children[i].cmd.Process.Pid < c.children[lowest].cmd.Process.Pid {
			lowest = i
		}
	}
	var pollErr error
	check := func() bool {
		for _, i := range c.running() {
			h, err := c.cellHolder(i)
			if err != nil {
				pollErr = err
				return true
			}
			if h != lowest {
				return false
			}
		}
		return true
	}
	var held bool
	if _, err := c.await(func() bool { return held }, func() { held = check() }); err != nil {
		return "", fmt.Errorf("samehost: waiting for the lowest PID to hold the cell: %w", err)
	}
	if pollErr != nil {
		return "", pollErr
	}
	return c.names[lowest], nil
}

// restart starts member i's process again and waits until it follows the
// cluster's leader.
func (c *cluster) restart(i int) error {
	if err := c.startChild(i); err != nil {
		return err
	}
	if err := c.subscribe(i); err != nil {
		return err
	}
	_, err := c.settledLeader()
	return err
}
