package cluster

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/faultproxy"
	"github.com/regent-go/regent/testing/history"
)

// Partition splits the network into groups of member indexes, symmetric and
// silent: bytes of live connections between groups are held, nothing is
// closed, and each side's keepalive declares the other down; new connections
// across are refused (held with Config.HoldDials). A member in no group is
// cut off from everyone. It replaces any earlier partition or cut; loss and
// delay stay.
func (c *Cluster) Partition(groups ...[]int) error {
	return c.partition(faultproxy.Stall, groups)
}

// PartitionReset is Partition with resets: connections between groups are
// closed at once and new ones refused until the next Heal or Partition.
func (c *Cluster) PartitionReset(groups ...[]int) error {
	return c.partition(faultproxy.Reset, groups)
}

// Isolate cuts member i off from every other member (silently).
func (c *Cluster) Isolate(i int) error {
	if _, err := c.member(i); err != nil {
		return err
	}
	var others []int
	for j := range c.members {
		if j != i {
			others = append(others, j)
		}
	}
	return c.Partition([]int{i}, others)
}

// CutOneWay silently holds the bytes member from sends to member to, leaving
// the other direction open. The history cannot express a one-way cut: it is
// recorded as a note, and Check skips its convergence rule while one stands.
func (c *Cluster) CutOneWay(from, to int) error {
	c.ops.Lock()
	defer c.ops.Unlock()
	if _, err := c.member(from); err != nil {
		return err
	}
	if _, err := c.member(to); err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("cluster: cut %d->%d: a member cannot be cut from itself: %w", from, to, gen.ErrIncorrect)
	}
	c.mesh.Cut(c.members[from].name, c.members[to].name)
	c.mu.Lock()
	c.oneWay = true
	c.mu.Unlock()
	c.note(fmt.Sprintf("one-way cut %s -> %s", c.cfg.label(from), c.cfg.label(to)))
	return nil
}

// Heal lifts every partition and cut; held bytes are delivered and live
// connections resume. Loss and delay stay as set.
func (c *Cluster) Heal() error {
	c.ops.Lock()
	defer c.ops.Unlock()
	if _, err := c.member(0); err != nil {
		return err
	}
	c.mesh.Heal()
	c.mu.Lock()
	c.oneWay = false
	c.mu.Unlock()
	c.hist.Append(history.Event{At: c.now(), Kind: history.KindHeal})
	return nil
}

// SetLoss makes every direction drop each frame after the handshake with
// probability p (0 to 1); 0 turns loss off. Check skips its convergence rule
// while loss or delay is set.
func (c *Cluster) SetLoss(p float64) error {
	if p < 0 || p > 1 {
		return fmt.Errorf("cluster: loss %v is not a probability: %w", p, gen.ErrIncorrect)
	}
	return c.noise(fmt.Sprintf("loss %v", p), func(f *faultproxy.Fault) { f.Loss = p })
}

// SetDelay delays every unit (handshake message or frame) in every direction
// by delay plus a uniform random part of jitter, keeping each stream's order.
func (c *Cluster) SetDelay(delay, jitter time.Duration) error {
	if delay < 0 || jitter < 0 {
		return fmt.Errorf("cluster: negative delay %v or jitter %v: %w", delay, jitter, gen.ErrIncorrect)
	}
	return c.noise(fmt.Sprintf("delay %v jitter %v", delay, jitter), func(f *faultproxy.Fault) { f.Delay, f.Jitter = delay, jitter })
}

func (c *Cluster) noise(what string, set func(*faultproxy.Fault)) error {
	c.ops.Lock()
	defer c.ops.Unlock()
	if _, err := c.member(0); err != nil {
		return err
	}
	noisy := false
	c.mesh.Update(func(_, _ gen.Atom, f *faultproxy.Fault) {
		set(f)
		noisy = noisy || f.Loss > 0 || f.Delay > 0 || f.Jitter > 0
	})
	c.mu.Lock()
	c.noisy = noisy
	c.mu.Unlock()
	c.note(what)
	return nil
}

func (c *Cluster) note(text string) {
	c.hist.Append(history.Event{At: c.now(), Kind: history.KindNote, Note: text})
}

func (c *Cluster) partition(cut faultproxy.Cut, groups [][]int) error {
	c.ops.Lock()
	defer c.ops.Unlock()
	side := make([]int, len(c.members))
	for i := range side {
		side[i] = -1 - i // alone, until a group names it
	}
	var labels [][]string
	nodes := make([][]gen.Atom, len(groups))
	for g, group := range groups {
		var names []string
		for _, i := range group {
			m, err := c.member(i)
			if err != nil {
				return err
			}
			if side[i] >= 0 {
				return fmt.Errorf("cluster: partition: member %d is in two groups: %w", i, gen.ErrIncorrect)
			}
			side[i] = g
			names = append(names, c.cfg.label(i))
			nodes[g] = append(nodes[g], m.name)
		}
		labels = append(labels, names)
	}
	for i, s := range side {
		if s < 0 {
			labels = append(labels, []string{c.cfg.label(i)})
		}
	}
	apply, note := c.mesh.Partition, ""
	if cut == faultproxy.Reset {
		apply, note = c.mesh.PartitionReset, "reset"
	}
	apply(nodes...)
	c.mu.Lock()
	c.oneWay = false
	c.mu.Unlock()
	c.hist.Append(history.Event{At: c.now(), Kind: history.KindPartition, Groups: labels, Note: note})
	return nil
}

// connected reports whether bytes flow both ways between members a and b.
func (c *Cluster) connected(a, b int) bool {
	if a == b {
		return true
	}
	na, nb := c.members[a].name, c.members[b].name
	return c.mesh.Fault(na, nb).Cut == faultproxy.Open && c.mesh.Fault(nb, na).Cut == faultproxy.Open
}
