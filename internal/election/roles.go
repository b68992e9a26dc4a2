package election

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
)

// reportedState is the role and leader the user was last told of.
type reportedState struct {
	role   Role
	leader gen.PID
}

// becomeFollower ends any campaign or leadership and follows leader (zero
// when none is known), with the election timer armed.
func (c *Core) becomeFollower(now time.Time, leader gen.PID) {
	c.camp = nil
	if c.role == RoleLeader {
		c.disarm(TimerHeartbeat)
		c.lead = nil
	}
	c.role = RoleFollower
	c.recognise(leader)
	if leader == (gen.PID{}) {
		c.leaderID = gen.ProcessID{}
	}
	c.armCampaign(now)
}

// armCampaign arms the election timer when this member may campaign, and
// disarms it when it may not, so ergo:election_timer_armed tells a member
// waiting to campaign from one that will not.
func (c *Core) armCampaign(now time.Time) {
	if c.mayCampaign() {
		c.armElection(now)
		return
	}
	c.disarm(TimerElection)
}

// recognise records leader as the one this member follows at its term.
func (c *Core) recognise(leader gen.PID) {
	if c.leader == leader {
		return
	}
	c.leader = leader
	if leader != (gen.PID{}) {
		c.stats.leaderChanges++
		c.stats.rounds = 0
		c.deadLeader = ""
	}
}

// visibleRole is the role the user sees. A protocol leader is shown as
// candidate until its view is committed in its term and HandleConfirmLeader
// agreed; any member is unclustered where no visible leader may exist: a
// view (or, before any, a declared set) below MinClusterSize, a member
// outside its view or joining another cluster, durable state that cannot be
// written, or a stopped member.
func (c *Core) visibleRole() Role {
	if c.below() != "" {
		return RoleUnclustered
	}
	if c.role == RoleLeader && (c.lead == nil || !c.lead.visible) {
		return RoleCandidate
	}
	return c.role
}

// below says, in words, why this member is unclustered; "" when it is not.
func (c *Core) below() string {
	min := c.cfg.MinClusterSize
	switch {
	case c.few().fatal != nil:
		return fmt.Sprintf("stopped: %v", c.few().fatal)
	case c.few().storageErr != nil:
		return fmt.Sprintf("durable state cannot be written: %v", c.few().storageErr)
	case c.joining() && !c.agreed():
		return fmt.Sprintf("outside the agreed view of lineage %s, asking its leader to be admitted", c.out().stamp.Lineage)
	case c.view == nil && c.declaredCount() < min:
		return fmt.Sprintf("%d declared members (itself included), below MinClusterSize %d, and no view yet", c.declaredCount(), min)
	case c.view == nil:
		return ""
	case !c.inView():
		return fmt.Sprintf("outside its view (%s)", c.view)
	case c.view.size() < min:
		return fmt.Sprintf("view of %d members, below MinClusterSize %d", c.view.size(), min)
	}
	return ""
}

// publish brings the user up to date at the end of an input: it asks for
// confirmation when leadership became publishable, and turns changes of the
// visible role and leader into callbacks. BecomeLeader runs on becoming the
// visible leader; BecomeFollower on every move into follower, on every
// change of a follower's leader, and when leadership or a candidacy ends
// below the floor.
func (c *Core) publish(now time.Time) {
	c.maybeConfirm(now)
	c.judgeHandover(now)
	if c.role != RoleLeader && c.armed[TimerElection] != c.mayCampaign() {
		c.armCampaign(now)
	}
	role, prev := c.visibleRole(), c.reported
	switch {
	case role == prev.role && (role != RoleFollower || c.leader == prev.leader):
	case role == RoleLeader:
		c.effect(Effect{Kind: EffectBecomeLeader, Term: c.term})
	case role == RoleFollower:
		c.effect(Effect{Kind: EffectBecomeFollower, PID: c.leader})
	case prev.role == RoleLeader, prev.role == RoleCandidate && role == RoleUnclustered:
		c.effect(Effect{Kind: EffectBecomeFollower})
	}
	if role != prev.role {
		rc := Effect{Kind: EffectRoleChanged, From: prev.role, To: role, Term: c.term}
		if role == RoleUnclustered {
			rc.Why = c.below()
		}
		c.effect(rc)
	}
	c.reported = reportedState{role: role, leader: c.leader}
}
