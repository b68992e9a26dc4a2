package leader

import (
	"errors"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// flush carries out everything the core asked for, until it asks for nothing
// more: persist, arm timers, run callbacks, send. A callback's error is kept in
// a.few().fatal and ends the actor once the current message is done.
func (a *Actor) flush() {
	if a.flushing {
		return
	}
	a.flushing = true
	defer func() { a.flushing = false }()
	// The core reports every change of role, term or recognised leader with
	// an effect or a new HardState; without either there is nothing new to
	// report.
	changed := a.reported.Load() == nil
	for a.few().fatal == nil && a.core.HasReady() {
		rd := a.core.Ready()
		changed = changed || rd.HardState != nil || len(rd.Effects) > 0
		durable := a.persist(rd.HardState)
		if len(rd.Timers) > 0 {
			now := time.Now()
			for _, op := range rd.Timers {
				a.applyTimer(now, op)
			}
		}
		sent := !durable // nothing may leave before the state it rests on is on disk
		sendAll := func() {
			if !sent {
				sent = true
				for _, out := range rd.Messages {
					a.send(out)
				}
			}
		}
		for _, effect := range rd.Effects {
			if effect.Kind == election.EffectConfirm {
				// HandleConfirmLeader may hold the actor a while: what the
				// core sent with the question (its heartbeats) leaves first.
				sendAll()
			}
			if err := a.applyEffect(effect); err != nil {
				a.more().fatal = err
				return
			}
		}
		sendAll()
	}
	if a.few().fatal == nil {
		a.extendElection()
		a.inbox.ticking.Store(a.timers[election.TimerHeartbeat].pending)
		if changed {
			a.reportTransition()
		}
		a.remindUnclustered()
	}
}

// remindUnclustered repeats, once a minute, why a member that stays
// unclustered has no leader: a member sitting below the floor says so at the
// default log level rather than once, long ago.
func (a *Actor) remindUnclustered() {
	if r := a.reported.Load(); r == nil || r.role != election.RoleUnclustered {
		a.unclusteredWarned = 0
		return
	}
	now := time.Now()
	if a.unclusteredWarned == 0 {
		a.unclusteredWarned = sinceEpoch(now) // the start or the transition said it already
		return
	}
	if sinceEpoch(now)-a.unclusteredWarned < unclusteredReminder {
		return
	}
	a.unclusteredWarned = sinceEpoch(now)
	a.Log().Warning("leader: cluster %q: still unclustered: %s", a.options.ClusterID, a.core.Status(now).Below)
}

// unclusteredReminder is how often a member that stays unclustered says so.
const unclusteredReminder = time.Minute

// persist writes hs to the state file, when there is one and something
// changed, and reports whether the Ready's messages may be sent. A failed
// write puts the member in the state of voting for nobody and leading
// nothing, which it leaves once a write succeeds: the core retries every
// ElectionTimeoutMax.
func (a *Actor) persist(hs *election.HardState) bool {
	if hs == nil || a.options.StateFile == "" {
		return true
	}
	now := time.Now()
	if err := saveHardState(a.options.StateFile, a.options.ClusterID, *hs); err != nil {
		if !a.core.StorageFailing() {
			a.Log().Error("leader: %v; voting for nobody and leading nothing until it can be written", err)
		}
		a.core.StorageFailed(now, err)
		return false
	}
	if a.core.StorageFailing() {
		a.Log().Info("leader: election state %s is writable again; taking part again", a.options.StateFile)
		a.core.StorageRecovered(now)
	}
	return true
}

func (a *Actor) applyEffect(e election.Effect) error {
	now := time.Now()
	switch e.Kind {
	case election.EffectConfirm:
		if !a.core.IsProtocolLeader() || a.core.Term() != e.Term {
			// Asked before an input handled since (a state write that failed)
			// ended that leadership: the core would drop the answer anyway.
			return nil
		}
		start := time.Now()
		granted, err := a.behavior.HandleConfirmLeader()
		a.timed("HandleConfirmLeader", start)
		if err != nil {
			a.Log().Warning("leader: HandleConfirmLeader failed at term %d, withholding leadership: %v", e.Term, err)
		}
		a.core.ConfirmResult(time.Now(), e.Term, granted, err)
	case election.EffectBecomeLeader:
		if !a.core.IsLeader() || a.core.Term() != e.Term {
			// Published, then ended by an input handled since (a state write
			// that failed): HandleBecomeLeader must not start work the core
			// already gave up; the BecomeFollower that input queued follows.
			return nil
		}
		a.armReconfirm(e.Term)
		start := time.Now()
		err := a.behavior.HandleBecomeLeader()
		a.timed("HandleBecomeLeader", start)
		if err != nil {
			a.core.BecomeLeaderFailed(time.Now(), err)
			a.Log().Error("leader: HandleBecomeLeader refused leadership at term %d: %v", e.Term, err)
			return err
		}
	case election.EffectBecomeFollower:
		a.stopReconfirm()
		defer a.timed("HandleBecomeFollower", now)
		return a.behavior.HandleBecomeFollower(e.PID)
	case election.EffectPeerJoined:
		defer a.timed("HandlePeerJoined", now)
		return a.behavior.HandlePeerJoined(e.PID)
	case election.EffectPeerLeft:
		defer a.timed("HandlePeerLeft", now)
		return a.behavior.HandlePeerLeft(e.PID)
	case election.EffectMonitor:
		a.monitor(now, e.PID)
	case election.EffectDemonitor:
		if a.monitored.has(e.PID) {
			a.monitored.remove(e.PID)
			r := a.more()
			if len(r.demonitored) > maxDemonitored {
				clear(r.demonitored) // downs of long-gone PIDs then reach HandleMessage; harmless
			}
			if r.demonitored == nil {
				r.demonitored = make(map[gen.PID]struct{})
			}
			r.demonitored[e.PID] = struct{}{}
			a.unwatch(e.PID, "member")
		}
	case election.EffectRoleChanged:
		switch {
		case e.To == election.RoleUnclustered:
			a.unclusteredWarned = sinceEpoch(now)
			a.Log().Warning("leader: cluster %q: %s -> unclustered at term %d: %s; no leader exists here until that changes",
				a.options.ClusterID, e.From, e.Term, e.Why)
		case e.From == election.RoleUnclustered:
			a.unclusteredWarned = 0
			if a.logs(gen.LogLevelInfo) {
				a.Log().Info("leader: cluster %q: unclustered -> %s at term %d: taking part in elections again", a.options.ClusterID, e.To, e.Term)
			}
		case a.logs(gen.LogLevelInfo):
			a.Log().Info("leader: %s -> %s at term %d (cluster %q)", e.From, e.To, e.Term, a.options.ClusterID)
		}
	case election.EffectViewChanged:
		if a.logs(gen.LogLevelInfo) {
			a.Log().Info("leader: view of cluster %q is now %s (%s)", a.options.ClusterID, e.ToView, e.Why)
		}
	case election.EffectFatal:
		a.Log().Error("leader: cluster %q: %v", a.options.ClusterID, e.Err)
		return e.Err
	}
	return nil
}

// monitor watches a member's process so that its end reaches the core with
// its reason; a member already gone is reported at once.
func (a *Actor) monitor(now time.Time, pid gen.PID) {
	if a.monitored.has(pid) {
		return
	}
	err := a.watch(pid)
	switch {
	case err == nil:
		a.monitored.add(pid)
		delete(a.few().demonitored, pid) // its down, whenever it comes, is real
	case errors.Is(err, gen.ErrNoConnection):
		a.core.PeerDown(now, pid, gen.ErrNoConnection)
	case errors.Is(err, gen.ErrProcessUnknown), errors.Is(err, gen.ErrProcessTerminated):
		a.core.PeerDown(now, pid, err)
	default:
		a.Log().Warning("leader: monitoring member %s: %v", pid, err)
	}
}

// send delivers one of the core's messages, by PID when known, by name
// otherwise, and reports a failure back to the core. What the coalescer
// carries (coalescer.go, rule 2) goes to its outbox instead.
func (a *Actor) send(out election.Outbound) {
	if a.answeredAhead(out) || a.coalesced(out) {
		return
	}
	if err := a.sendTo(out.To, out.ToName, out.Message); err != nil {
		node := out.ToName.Node
		if out.To != (gen.PID{}) {
			node = out.To.Node
		}
		a.core.SendFailed(time.Now(), node, err)
	}
}

// coalesced hands out to the node's coalescer when it is a heartbeat sent on
// this member's tick without a view, or an acknowledgement of a heartbeat
// that arrived coalesced, bound for another node; it reports whether it did.
func (a *Actor) coalesced(out election.Outbound) bool {
	if !a.options.coalesce || (!a.onTick && !a.onCoalesced) {
		return false
	}
	self := a.PID()
	r := CoalescedRoute{FromID: self.ID, FromCreation: self.Creation, ToID: out.To.ID, ToCreation: out.To.Creation}
	dest := out.To.Node
	if out.To == (gen.PID{}) {
		r.ToName, dest = out.ToName.Name, out.ToName.Node
	}
	if dest == self.Node {
		return false
	}
	// The sender's node travels once, as the frame's (CoalescedRoute).
	switch m := out.Message.(type) {
	case election.MessageHeartbeat:
		if a.onTick && m.View == nil && m.From.Node == self.Node {
			m.From.Node = ""
			return a.share.coal.enqueue(dest, &CoalescedHeartbeat{CoalescedRoute: r, Message: m}, nil, a.options.linger)
		}
	case election.MessageHeartbeatAck:
		if a.onCoalesced && m.From.Node == self.Node {
			m.From.Node = ""
			return a.share.coal.enqueue(dest, nil, &CoalescedAck{CoalescedRoute: r, Message: m}, a.options.linger)
		}
	}
	return false
}

// stepCoalesced steps a heartbeat or acknowledgement the coalescer
// delivered, with the PID of the member that sent it, as if it had come
// directly; what it answers goes back through the coalescer.
func (a *Actor) stepCoalesced(now time.Time, in coalescedIn) error {
	a.onCoalesced = true
	if in.hb != nil {
		a.step(now, in.from, *in.hb)
	} else {
		a.step(now, in.from, *in.ack)
	}
	a.flush()
	a.onCoalesced = false
	return a.takeFatal()
}

// stepHeld steps what the coalescer held for this member until it woke,
// each at the time it arrived and with its sender's PID, so the core sees it
// as if it had been stepped then: every wake-up starts here, after the
// steady answer was withdrawn, so nothing was stepped since but what raced
// with the hold, and the core's clock never runs back (an entry is stepped
// no earlier than the last input). A held heartbeat was answered ahead with
// the inbox's steady answer: the core's repeat of that answer is dropped
// (send), and of several held with nothing between them only the last is
// stepped.
func (a *Actor) stepHeld() error {
	acks, beats, ahead := a.inbox.take()
	if a.few().observeStep != nil && ahead.skipped > 0 {
		a.few().observeStep(a.lastInput, a.PID(), caughtUp{heartbeats: ahead.skipped, from: a.inbox.steady.Leader})
	}
	a.catchUp(&ahead)
	a.inbox.lead.keepSpares(&ahead)
	if len(acks)+len(beats) == 0 {
		return a.takeFatal()
	}
	defer a.inbox.giveBack(acks, beats)
	for i, j := 0, 0; i < len(acks) || j < len(beats); {
		var at time.Time
		beat := j < len(beats) && (i == len(acks) || gridEpoch.Add(beats[j]).Before(acks[i].at))
		if beat {
			// Of heartbeats with nothing held between them, stepping the
			// last alone leaves the core where stepping each would
			// (Core.SteadyAnswer): the others are skipped.
			first := j
			for j+1 < len(beats) && (i == len(acks) || gridEpoch.Add(beats[j+1]).Before(acks[i].at)) {
				j++
			}
			if a.few().observeStep != nil && j > first {
				a.few().observeStep(a.lastInput, a.PID(), caughtUp{heartbeats: j - first, from: a.inbox.steady.Leader})
			}
			at = gridEpoch.Add(beats[j])
		} else {
			at = acks[i].at
		}
		if at.After(a.lastInput) {
			a.lastInput = at
		}
		if beat {
			a.onCoalesced, a.replaying = true, true
			a.step(a.lastInput, a.inbox.steady.Leader, a.inbox.steady.Heartbeat.Message(0))
			a.flush()
			a.onCoalesced = false
			if a.replaying {
				// The core sent no acknowledgement at all: it broke its promise.
				a.replaying = false
				a.share.coal.stats.mismatched.Add(1)
			}
			j++
		} else {
			a.step(a.lastInput, acks[i].from, acks[i].ack)
			a.flush()
			i++
		}
		if err := a.takeFatal(); err != nil {
			return err
		}
	}
	return nil
}

// publishSteady publishes the member's steady answer for the coalescer to
// answer its leader's heartbeats with (coalescer.go, rule 6), or leaves none
// when the core gives none or the leader's heartbeats do not come coalesced.
// A pair binding suspended for the message just handled stands again when
// the answer is the one it was bound with, and ends otherwise (rule 8).
func (a *Actor) publishSteady() {
	if !a.options.coalesce || a.few().fatal != nil {
		a.resumeSteady(nil)
		return
	}
	now := time.Now()
	if a.core.IsProtocolLeader() {
		a.resumeSteady(nil)
		a.publishBeat(now)
		return
	}
	sa, ok := a.core.SteadyAnswer(now)
	self := a.PID()
	if !ok || sa.Leader.Node == self.Node {
		a.resumeSteady(nil)
		return
	}
	r := &steadyReply{
		SteadyAnswer: sa,
		fromID:       self.ID,
		fromCreation: self.Creation,
		linger:       a.options.linger,
		since:        sinceEpoch(now),
	}
	if !a.resumeSteady(r) {
		a.inbox.publish(r)
	}
	a.answering = true
}

// suspendSteady stops the coalescer from answering for this member while
// it handles a message, keeping a pair binding to resume (resumeSteady),
// and stops its timer and the coalescer from beating ahead for it.
func (a *Actor) suspendSteady() {
	if a.answering {
		a.answering = false
		a.suspended = a.inbox.suspendPaired()
		if !a.suspended {
			a.inbox.resumeElection()
		}
	}
	a.withdrawBeat()
}

// resumeSteady ends what suspendSteady began, with r the member's new
// answer (nil for none), and reports whether its binding stands again with
// r published. When it does not, the binding ended, and a timer parked
// while bound runs again.
func (a *Actor) resumeSteady(r *steadyReply) bool {
	if !a.suspended {
		return false
	}
	a.suspended = false
	if a.inbox.resumePaired(a.share.coal, r) {
		return true
	}
	a.inbox.resumeElection()
	return false
}

// withdrawSteady stops the coalescer from answering for this member, its
// binding ended, and its timer and the coalescer from beating ahead for it.
func (a *Actor) withdrawSteady() {
	if a.answering || a.suspended {
		a.inbox.withdrawPaired(a.share.coal)
		a.answering, a.suspended = false, false
		// A timer parked while bound runs again (rule 8 of the coalescer).
		a.inbox.resumeElection()
	}
	a.withdrawBeat()
}

// answeredAhead reports whether out is the core's repeat of the
// acknowledgement the coalescer sent ahead for the heartbeat being stepped
// again, which must not be sent twice. Another answer there is sent, and
// counted as a mismatch.
func (a *Actor) answeredAhead(out election.Outbound) bool {
	steady := &a.inbox.steady.SteadyAnswer
	if !a.replaying || out.To != steady.Leader {
		return false
	}
	ack, ok := out.Message.(election.MessageHeartbeatAck)
	if !ok {
		return false
	}
	a.replaying = false
	if ack == steady.Ack {
		return true
	}
	a.share.coal.stats.mismatched.Add(1)
	a.Log().Error("leader: cluster %q: answered a heartbeat of %s ahead with %+v, but the core answers %+v", a.options.ClusterID, out.To, steady.Ack, ack)
	return false
}

// sendTo sends message to a member by its PID when known, by name otherwise.
func (a *Actor) sendTo(pid gen.PID, name gen.ProcessID, message any) error {
	if pid != (gen.PID{}) {
		if s, ok := a.Process.(pidSender); ok {
			return s.SendPID(pid, message)
		}
		return a.Send(pid, message)
	}
	if s, ok := a.Process.(pidSender); ok {
		return s.SendProcessID(name, message)
	}
	return a.Send(name, message)
}

// logs reports whether a's log takes lines of level. Asked of a node's
// process, it leaves the process without a logger of its own when it has
// none, and a line the log would drop costs no boxing of its arguments:
// each member logs its role and view changes at Info, which a node running
// thousands of members usually drops.
func (a *Actor) logs(level gen.LogLevel) bool {
	var current gen.LogLevel
	if l, ok := a.Process.(logLeveler); ok {
		current = l.LogLevel()
	} else {
		current = a.Log().Level()
	}
	return current != gen.LogLevelDisabled && level >= current
}

// logLeveler is a process that reports its log's level without making its
// logger (node's processes do).
type logLeveler interface {
	LogLevel() gen.LogLevel
}

// pidSender is a process that sends to, and monitors, a PID or a name
// passed as such (node's processes do): boxed for Send or Monitor, each
// would be an allocation per message, most of an election burst's garbage
// of its size.
type pidSender interface {
	SendPID(to gen.PID, message any) error
	SendProcessID(to gen.ProcessID, message any) error
	MonitorPID(to gen.PID) error
}

// reconfirmTick is the self-sent timer of Options.ConfirmInterval, tagged
// with the term of the leadership it belongs to.
type reconfirmTick struct{ term uint64 }

// armReconfirm arms the ConfirmInterval timer of the leadership at term,
// replacing any earlier one: one timer per leadership, however often the
// member is re-elected.
func (a *Actor) armReconfirm(term uint64) {
	a.stopReconfirm()
	if a.options.ConfirmInterval <= 0 {
		return
	}
	after := time.Duration(a.options.ConfirmInterval) * time.Millisecond
	cancel, err := a.SendAfter(a.PID(), reconfirmTick{term: term}, after)
	if err != nil {
		a.Log().Warning("leader: arming the reconfirmation timer: %v", err)
		return
	}
	a.more().reconfirmCancel = cancel
}

// stopReconfirm cancels the ConfirmInterval timer, if armed.
func (a *Actor) stopReconfirm() {
	if r := a.rare; r != nil && r.reconfirmCancel != nil {
		r.reconfirmCancel()
		r.reconfirmCancel = nil
	}
}

// reconfirm consults HandleConfirmLeader again while leading; a denial ends
// the leadership. A tick of an earlier leadership is ignored.
func (a *Actor) reconfirm(t reconfirmTick) {
	if !a.core.IsLeader() || t.term != a.core.Term() {
		return
	}
	if a.rare != nil {
		a.rare.reconfirmCancel = nil
	}
	start := time.Now()
	granted, err := a.behavior.HandleConfirmLeader()
	a.timed("HandleConfirmLeader", start)
	if err != nil || !granted {
		a.Log().Warning("leader: HandleConfirmLeader denied leadership at term %d mid-term (%v); stepping down", a.core.Term(), err)
	}
	a.core.Reconfirm(time.Now(), granted, err)
	if a.core.IsLeader() {
		a.armReconfirm(t.term)
	}
}

// watch monitors pid unless this actor already does, for the election or a
// subscription: the runtime keeps one watch per watcher and target, so both
// purposes share it. Call it before recording the new purpose.
func (a *Actor) watch(pid gen.PID) error {
	if a.watching(pid) {
		return nil
	}
	if m, ok := a.Process.(pidSender); ok {
		return m.MonitorPID(pid)
	}
	return a.Monitor(pid)
}

// unwatch removes the runtime's watch of pid once neither the election nor a
// subscription needs it. Call it after forgetting the purpose; why names it
// in the log.
func (a *Actor) unwatch(pid gen.PID, why string) {
	if a.watching(pid) {
		return
	}
	if err := a.Demonitor(pid); err != nil && !errors.Is(err, gen.ErrProcessUnknown) && !errors.Is(err, gen.ErrNoConnection) {
		a.Log().Warning("leader: demonitoring %s %s: %v", why, pid, err)
	}
}

// watching reports whether the election or a subscription watches pid.
func (a *Actor) watching(pid gen.PID) bool {
	member := a.monitored.has(pid)
	_, subscriber := a.few().subscribers[pid]
	return member || subscriber
}

// maxDemonitored bounds the set of demonitored PIDs whose downs are swallowed.
const maxDemonitored = 1024
