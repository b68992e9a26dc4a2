package leader

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/mmfcell"
)

// sameHost binds a member to its host's mmfcell: of the members of one
// cluster on one host, only the process holding the cell starts elections.
type sameHost struct {
	cell   *mmfcell.Cell
	pid    uint32
	period time.Duration
	holds  bool
	// cancel cancels the pending tick; nil before the first.
	cancel gen.CancelFunc
}

// sameHostTick is the self-sent timer that advances the host's epoch, claims
// or beats the cell, and tells the core whether it may campaign.
type sameHostTick struct{}

// sameHostGrace is how many epochs (heartbeat intervals) a holder may miss
// before another member takes the cell over; a dead holder is replaced at once.
const sameHostGrace = mmfcell.DefaultGraceEpochs

// openSameHost opens the cell at path for the cluster clusterID, bound to
// it (sameHostOwner): a path another cluster of the host uses is refused,
// as its holder would hold both clusters' cells and the other cluster's
// members on the host would never start an election.
func openSameHost(path, clusterID string, period time.Duration) (*sameHost, error) {
	cell, err := mmfcell.Create(path, mmfcell.WithOwner(sameHostOwner(clusterID)))
	if errors.Is(err, mmfcell.ErrOtherOwner) {
		return nil, fmt.Errorf("leader: same-host cell %s serves another cluster than %q; give each cluster its own path on a host: %w", path, clusterID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("leader: same-host cell: %w", err)
	}
	return &sameHost{cell: cell, pid: uint32(os.Getpid()), period: period}, nil
}

// sameHostOwner is the owner key of clusterID's same-host cells: a hash of
// the ID, never zero (mmfcell.WithOwner).
func sameHostOwner(clusterID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("regent/leader cluster " + clusterID))
	return max(h.Sum64(), 1)
}

// tick claims or beats the cell and reports whether this process holds it.
func (s *sameHost) tick() bool {
	s.cell.AdvanceEpoch(s.period)
	s.holds = s.cell.TryClaim(s.pid, sameHostGrace)
	if s.holds {
		s.cell.Beat(s.pid)
	}
	return s.holds
}

// release hands the cell on at once when this process held it, and unmaps it.
func (s *sameHost) release() error {
	if s.holds {
		s.cell.StepDown(s.pid)
	}
	return s.cell.Close()
}

// describe renders the cell's state for the ergo:same_host key.
func (s *sameHost) describe() string {
	snap := s.cell.Snapshot(sameHostGrace)
	return fmt.Sprintf("path=%s self=%d holder=%d holds=%t term=%d epoch=%d stale=%t",
		s.cell.Path(), s.pid, snap.Leader, s.holds, snap.Term, snap.Epoch, snap.Stale)
}

// onSameHostTick runs the cell's tick and re-arms it.
func (a *Actor) onSameHostTick(now time.Time) {
	a.core.SetCampaign(now, a.few().sameHost.tick())
	cancel, err := a.SendAfter(a.PID(), sameHostTick{}, a.few().sameHost.period)
	if err != nil {
		a.Log().Warning("leader: same-host cell timer: %v", err)
		return
	}
	a.few().sameHost.cancel = cancel
}
