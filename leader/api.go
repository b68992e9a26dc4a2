package leader

import (
	"fmt"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// IsLeader reports whether this actor holds published leadership and
// still has, at this instant, the evidence of a majority behind it that
// its next heartbeat tick will check. It turns false as soon as that
// evidence lapses, before the actor steps down: a handler that ran longer
// than the evidence window, during which the other members may have
// elected someone else, sees false once it goes on, and
// HandleBecomeFollower follows when the actor next steps. It errs towards
// false, by a round trip at most: acknowledgements that arrived while a
// handler ran count only once it returns, and a busy actor sends no
// heartbeats for them to answer.
func (a *Actor) IsLeader() bool { return a.core != nil && a.core.LeadsAt(time.Now()) }

// Leader returns the PID of the leader this actor recognises (its own when it
// leads), zero when none. A leader whose evidence lapsed (IsLeader is
// false) recognises none rather than itself: code that forwards requests to
// the leader must not forward them to a member that will not act on them.
func (a *Actor) Leader() gen.PID {
	if a.core == nil {
		return gen.PID{}
	}
	l := a.core.Leader()
	if l == a.PID() && !a.IsLeader() {
		return gen.PID{}
	}
	return l
}

// Term returns the current term.
func (a *Actor) Term() uint64 {
	if a.core == nil {
		return 0
	}
	return a.core.Term()
}

// FencingToken returns a token that strictly increases with every change of
// leadership in the cluster (the term of this leadership), zero when this
// actor does not lead (as IsLeader says). Read it right before every
// irreversible action, carry it there, and let the resource reject a token
// older than one it has seen.
func (a *Actor) FencingToken() uint64 {
	if !a.IsLeader() {
		return 0
	}
	return a.core.FencingToken()
}

// ClusterID returns the cluster this actor belongs to.
func (a *Actor) ClusterID() string {
	if a.options == nil {
		return ""
	}
	return a.options.ClusterID
}

// Peers returns the PIDs of the members whose PID is known.
func (a *Actor) Peers() []gen.PID {
	if a.core == nil {
		return nil
	}
	return a.core.Peers()
}

// PeerCount returns len(Peers()).
func (a *Actor) PeerCount() int { return len(a.Peers()) }

// HasPeer reports whether pid is a member's known PID.
func (a *Actor) HasPeer(pid gen.PID) bool { return a.core != nil && a.core.HasPeer(pid) }

// Bootstrap returns the peers configured in Options.Bootstrap.
func (a *Actor) Bootstrap() []gen.ProcessID {
	if a.options == nil {
		return nil
	}
	return slices.Clone(a.options.Bootstrap)
}

// Join declares a peer: it counts toward the view at once, before it answers,
// and negotiation starts without spending anyone's vote. Idempotent per node.
// Call it from a handler, not from Init.
func (a *Actor) Join(peer gen.ProcessID) error {
	if err := a.ready(); err != nil {
		return err
	}
	if err := a.core.Join(time.Now(), peer); err != nil {
		return fmt.Errorf("leader: join %s: %w", peer, err)
	}
	a.flush()
	return nil
}

// Leave withdraws node from the view and from every later quorum; traffic from
// it is ignored for one election timeout so messages in flight cannot re-admit it.
func (a *Actor) Leave(node gen.Atom) error {
	if err := a.ready(); err != nil {
		return err
	}
	if err := a.core.Leave(time.Now(), node); err != nil {
		return fmt.Errorf("leader: leave %s: %w", node, err)
	}
	a.flush()
	return nil
}

// StepDown hands leadership to the reachable peer that answered most
// recently: this actor stops leading first (HandleBecomeFollower runs), then
// tells that peer to campaign at once. If it does not win within an election
// timeout the cluster elects as usual. Errors wrap gen.ErrNotAllowed when
// this actor does not lead or no peer is reachable.
func (a *Actor) StepDown() error {
	if err := a.ready(); err != nil {
		return err
	}
	if err := a.core.StepDown(time.Now()); err != nil {
		return fmt.Errorf("leader: step down: %w", err)
	}
	a.flush()
	return nil
}

// TransferLeadership is StepDown to a chosen member's node.
func (a *Actor) TransferLeadership(node gen.Atom) error {
	if err := a.ready(); err != nil {
		return err
	}
	if err := a.core.TransferLeadership(time.Now(), node); err != nil {
		return fmt.Errorf("leader: transfer leadership to %s: %w", node, err)
	}
	a.flush()
	return nil
}

// Reform is the operator's way out when a majority of the view is gone for
// good: it replaces the view with this member and the members it heard from
// within two election timeouts, and campaigns with it at once. It is never
// automatic and it is dangerous: if the members left out are alive behind a
// partition and elect their own leader, two leaders act at once
// (docs/operations.md). The new view is logged at Warning. Errors wrap
// gen.ErrNotAllowed when this member leads a working cluster or cannot write
// its state.
func (a *Actor) Reform() (election.View, error) {
	if err := a.ready(); err != nil {
		return election.View{}, err
	}
	v, err := a.core.Reform(time.Now())
	if err != nil {
		return election.View{}, fmt.Errorf("leader: re-form: %w", err)
	}
	a.Log().Warning("leader: the operator re-formed the view of cluster %q as %s; members left out must not be running a cluster of their own", a.options.ClusterID, &v)
	a.flush()
	return v, nil
}

// Broadcast sends message to every member of the view, by PID where known and
// by name otherwise. It tries every member and returns how many sends failed
// and the first error.
func (a *Actor) Broadcast(message any) (int, error) {
	if err := a.ready(); err != nil {
		return 0, err
	}
	failed := 0
	var first error
	for _, m := range a.core.ViewMembers() {
		if err := a.sendTo(m.PID, m.ProcessID, message); err != nil {
			failed++
			if first == nil {
				first = fmt.Errorf("leader: broadcast to %s: %w", m.Node, err)
			}
		}
	}
	return failed, first
}

// ready fails when the election is not set up yet (a call from Init).
func (a *Actor) ready() error {
	if a.core == nil {
		return fmt.Errorf("leader: the election starts after Init returns; call this from a handler: %w", gen.ErrNotAllowed)
	}
	return nil
}
