package leader

import (
	"fmt"
	"slices"
	"strings"

	"github.com/regent-go/regent/gen"
)

// Member describes one member of a leader actor's view.
type Member struct {
	Node      gen.Atom
	ProcessID gen.ProcessID
	// PID is zero when it is not known (the member never answered, or its
	// connection dropped).
	PID gen.PID
	// Self marks the actor that was asked.
	Self bool
	// Unreachable: the member's connection dropped and GhostTTL has not passed.
	Unreachable bool
}

// MemberInspection is one member's election inspection, or why it could not be read.
type MemberInspection struct {
	Member
	Inspection map[string]string
	Err        error
}

// Members asks the local leader actor pid for its view, itself included,
// ordered by node name.
func Members(node gen.Node, pid gen.PID) ([]Member, error) {
	answer, err := callControl(node, pid, controlRequest{op: opMembers})
	if err != nil {
		return nil, fmt.Errorf("leader: members of %s: %w", pid, err)
	}
	members, ok := answer.([]Member)
	if !ok {
		return nil, fmt.Errorf("leader: members of %s: %s is not a leader actor (answered %T): %w", pid, pid, answer, gen.ErrIncorrect)
	}
	return members, nil
}

// InspectCluster reads the election inspection of every member of the local
// leader actor pid's view, through remote Inspect where needed. A member that
// cannot be read carries the error (gen.ErrNoConnection when its PID is not known).
func InspectCluster(node gen.Node, pid gen.PID, items ...string) ([]MemberInspection, error) {
	members, err := Members(node, pid)
	if err != nil {
		return nil, err
	}
	out := make([]MemberInspection, 0, len(members))
	for _, m := range members {
		mi := MemberInspection{Member: m}
		if m.PID == (gen.PID{}) {
			mi.Err = fmt.Errorf("leader: inspect %s: its PID is not known: %w", m.ProcessID, gen.ErrNoConnection)
		} else {
			mi.Inspection, mi.Err = node.Inspect(m.PID, items...)
		}
		out = append(out, mi)
	}
	return out, nil
}

// Find lists the leader actors running on node: the processes whose
// inspection has an ergo:cluster key.
func Find(node gen.Node) ([]gen.PID, error) {
	pids, err := node.ProcessList()
	if err != nil {
		return nil, fmt.Errorf("leader: listing processes: %w", err)
	}
	var out []gen.PID
	for _, pid := range pids {
		inspection, err := node.Inspect(pid, "ergo:cluster")
		if err != nil {
			continue // the process ended meanwhile, or is not inspectable
		}
		if v, ok := inspection["ergo:cluster"]; ok && v != unknownItem && v != "" {
			out = append(out, pid)
		}
	}
	return out, nil
}

// members lists the view for Members.
func (a *Actor) members() []Member {
	out := []Member{{Node: a.Node().Name(), ProcessID: gen.ProcessID{Name: a.Name(), Node: a.Node().Name()}, PID: a.PID(), Self: true}}
	for _, m := range a.core.Members() {
		out = append(out, Member{Node: m.Node, ProcessID: m.ProcessID, PID: m.PID, Unreachable: !m.UnreachableSince.IsZero()})
	}
	slices.SortFunc(out, func(x, y Member) int { return strings.Compare(string(x.Node), string(y.Node)) })
	return out
}
