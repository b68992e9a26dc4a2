package leader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// durableVersion is the format version of a state file: 2 keeps the view
// beside the term and vote; files of version 1 (term and vote) still load.
const durableVersion = 2

// durableRecord is the state file's content: the term, the vote cast in it
// and the latest view this member accepted.
type durableRecord struct {
	Version  int          `json:"version"`
	Cluster  string       `json:"cluster"`
	Term     uint64       `json:"term"`
	VotedFor durableName  `json:"voted_for"`
	View     *durableView `json:"view,omitempty"`
}

type durableName struct {
	Name string `json:"name"`
	Node string `json:"node"`
}

type durableView struct {
	LineageTerm uint64        `json:"lineage_term"`
	LineageNode string        `json:"lineage_node"`
	Term        uint64        `json:"term"`
	Epoch       uint64        `json:"epoch"`
	Agreed      bool          `json:"agreed"`
	Members     []durableName `json:"members"`
}

func toDurableName(p gen.ProcessID) durableName {
	return durableName{Name: string(p.Name), Node: string(p.Node)}
}

func (d durableName) processID() gen.ProcessID {
	return gen.ProcessID{Name: gen.Atom(d.Name), Node: gen.Atom(d.Node)}
}

// loadHardState reads the term and vote kept in path. A missing file is a
// fresh start; a file that cannot be read, does not parse, or belongs to
// another cluster is an error, never silently a fresh start, since forgetting
// a vote is how a restarted member votes twice in one term.
func loadHardState(path, cluster string) (election.HardState, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return election.HardState{}, nil
	}
	if err != nil {
		return election.HardState{}, fmt.Errorf("leader: reading election state %s: %w", path, err)
	}
	var rec durableRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return election.HardState{}, fmt.Errorf("leader: election state %s does not parse (%v): %w", path, err, gen.ErrMalformed)
	}
	if rec.Version != 1 && rec.Version != durableVersion {
		return election.HardState{}, fmt.Errorf("leader: election state %s has version %d, want %d: %w", path, rec.Version, durableVersion, gen.ErrMalformed)
	}
	if rec.Cluster != cluster {
		return election.HardState{}, fmt.Errorf("leader: election state %s belongs to cluster %q, not %q: %w", path, rec.Cluster, cluster, gen.ErrIncorrect)
	}
	hs := election.HardState{Term: rec.Term, VotedFor: rec.VotedFor.processID()}
	if v := rec.View; v != nil {
		hs.View = &election.View{Stamp: election.ViewStamp{
			Lineage: election.Lineage{Term: v.LineageTerm, Node: gen.Atom(v.LineageNode)},
			Key:     election.ViewKey{Term: v.Term, Epoch: v.Epoch},
			Agreed:  v.Agreed,
		}}
		for _, m := range v.Members {
			hs.View.Members = append(hs.View.Members, m.processID())
		}
	}
	return hs, nil
}

// saveHardState replaces path atomically and durably: write a temporary file
// beside it, fsync it, rename it over path, fsync the directory.
func saveHardState(path, cluster string, hs election.HardState) error {
	rec := durableRecord{Version: durableVersion, Cluster: cluster, Term: hs.Term, VotedFor: toDurableName(hs.VotedFor)}
	if v := hs.View; v != nil {
		rec.View = &durableView{
			LineageTerm: v.Stamp.Lineage.Term, LineageNode: string(v.Stamp.Lineage.Node),
			Term: v.Stamp.Key.Term, Epoch: v.Stamp.Key.Epoch, Agreed: v.Stamp.Agreed,
		}
		for _, m := range v.Members {
			rec.View.Members = append(rec.View.Members, toDurableName(m))
		}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("leader: encoding election state: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("leader: saving election state: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		return errors.Join(fmt.Errorf("leader: writing election state %s: %w", tmp.Name(), err), tmp.Close())
	}
	if err := tmp.Sync(); err != nil {
		return errors.Join(fmt.Errorf("leader: syncing election state %s: %w", tmp.Name(), err), tmp.Close())
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("leader: closing election state %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("leader: replacing election state %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("leader: opening %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("leader: syncing directory %s: %w", dir, err)
	}
	return nil
}
