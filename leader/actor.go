package leader

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Actor is the embeddable election actor. Embed it, implement Init (and
// usually HandleBecomeLeader and HandleBecomeFollower), and spawn the type
// with SpawnRegister: peers reach each other by registered name. Actor embeds
// the gen.Process it runs as, so the embedding type calls Send, Log and the
// rest directly.
//
// All of Actor's state is owned by the process's goroutine; its methods may be
// called only from the actor's own callbacks.
type Actor struct {
	gen.Process

	behavior ActorBehavior
	core     *election.Core
	// options holds what the shell reads of Options after Init; nil
	// before. Behind a pointer, to keep the Actor (with the fields of the
	// type that embeds it) inside a smaller allocation: every member holds
	// one, and the election's settings live in the core.
	options *actorOptions

	// timers is the shell's side of each election timer kind (timers.go);
	// what their callbacks know of this actor is inbox.owner.
	timers [timerKinds]shellTimer
	// share is what this actor shares with the other leader actors of its
	// node: the heartbeat coalescer (coalescer.go). coalesce (among the
	// flags below) is false when Options.DisableHeartbeatCoalescing is set;
	// the share exists anyway.
	share *nodeShare
	// inbox holds what the coalescer keeps for this member's next wake-up:
	// acknowledgements while it leads, heartbeats it answered ahead while
	// it follows (coalescer.go, rules 4 and 6); lastInput is the latest time
	// a message was stepped at, so that held ones are never stepped at an
	// earlier time.
	inbox     inbox
	lastInput time.Time
	// monitored is the set of peer PIDs this actor monitors for the election,
	// so their down messages go to the core, not to HandleMessage. The
	// runtime keeps one watch per watcher and target, shared with
	// subscribers: see watch and unwatch. Made with room for the declared
	// peers at Init: grown as the peers become known, in an election's
	// burst, it would sit among the burst's garbage.
	monitored pidSet
	// rare holds what most members never use, made on first use; nil
	// until then.
	rare *actorRare
	// unclusteredWarned is when the member last said at Warning that it is
	// unclustered, on the shell's clock (sinceEpoch), zero while it is
	// not: a reminder follows once a minute.
	unclusteredWarned time.Duration
	// reported is the role, term and leader last reported to OnTransition
	// and subscribers; nil before the first report. The runtime reads it
	// from its own goroutine (DownDelayOnLoss): a report stores a new one,
	// never changing the last.
	reported atomic.Pointer[transitionState]

	// The flags, together so that they share one word: with the fields
	// above, an Actor is 832 bytes, so that one embedded with Options fits
	// a 1,024-byte allocation (TestActorFitsItsAllocation).
	//
	// onTick is true while the member handles its own heartbeat tick, and
	// onCoalesced while it steps heartbeats that arrived coalesced: what
	// those produce is what the coalescer carries.
	onTick, onCoalesced bool
	// flushing is true while Ready is being handled, so that API calls made
	// from callbacks (Join inside HandleBecomeLeader, say) queue their effects
	// for the running loop instead of re-entering it.
	flushing bool
	// registered: this actor holds its node's place in the cluster registry.
	registered bool
	// answering says the steady answer in the inbox is published (between
	// two messages); suspended, that it was withdrawn for the message being
	// handled with the member's pair binding kept, to stand again if the
	// answer after it is the same (rule 8); replaying, that the core's next
	// acknowledgement to that answer's leader repeats one the coalescer
	// sent ahead (stepHeld).
	answering, suspended, replaying bool
	// beating says the steady beat in the inbox is published (between two
	// messages; coalescer.go, rule 7).
	beating bool
}

// actorRare is what an Actor keeps of the features most members never use:
// behind a pointer, made on first use, so that the Actor (with the fields of
// the type that embeds it) fits a smaller allocation.
type actorRare struct {
	// observeStep, when set (by this package's tests only), sees every
	// protocol message as the core is given it, and every timer firing (an
	// election.Timer from the actor itself).
	observeStep func(now time.Time, from gen.PID, msg any)
	// demonitored holds election PIDs demonitored lately, whose down may
	// already be queued; such a down is swallowed, not handed to the user.
	// Made on first use, as subscribers is.
	demonitored map[gen.PID]struct{}
	// subscribers receive MessageLeaderChanged on every change of leader or term.
	subscribers map[gen.PID]struct{}
	// reconfirmCancel cancels the ConfirmInterval timer of the current
	// leadership, nil when none is armed: one timer per leadership.
	reconfirmCancel gen.CancelFunc
	// sameHost is the host's cell when Options.SameHost is set.
	sameHost *sameHost
	// fatal is the error a callback returned while handling Ready; it
	// terminates the actor once the loop unwinds.
	fatal error
	// slowCallbacks counts, by name, the user's callbacks that ran for the
	// evidence window or longer, and slowWarnedAt is when one was last
	// logged (slowcallback.go).
	slowCallbacks map[string]uint64
	slowWarnedAt  time.Time
}

// more returns the actor's rare fields to write, made on first use.
func (a *Actor) more() *actorRare {
	if a.rare == nil {
		a.rare = new(actorRare)
	}
	return a.rare
}

// few returns the actor's rare fields to read: their zero values while none
// is made. What it returns must not be written: it may be noRare, which
// every actor shares.
func (a *Actor) few() *actorRare {
	if a.rare == nil {
		return &noRare
	}
	return a.rare
}

// noRare is the rare fields of every actor that made none. Never written.
var noRare actorRare

// ProcessInit binds the actor to its process, calls Init, validates and
// applies the Options. It refuses to start when the wire types are not
// registered on the node or the actor has no registered name.
func (a *Actor) ProcessInit(process gen.Process, args ...any) error {
	b, ok := process.Behavior().(ActorBehavior)
	if !ok {
		return fmt.Errorf("leader: %T does not implement leader.ActorBehavior: %w", process.Behavior(), gen.ErrIncorrect)
	}
	a.Process = process
	a.behavior = b
	a.initTimers()

	options, err := b.Init(args...)
	if err != nil {
		return err
	}
	if process.Name() == "" {
		return fmt.Errorf("leader: the actor has no registered name; spawn it with SpawnRegister so peers can reach it: %w", gen.ErrIncorrect)
	}
	if err := checkRegistered(process.Node().Network()); err != nil {
		return err
	}
	var seed [16]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return fmt.Errorf("leader: seeding the election's random source: %w", err)
	}
	source := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	cfg, err := options.config(gen.ProcessID{Name: process.Name(), Node: process.Node().Name()}, time.Now(), source)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings() {
		a.Log().Warning("leader: %s", w)
	}
	if options.MinClusterSize == 0 {
		if a.logs(gen.LogLevelInfo) {
			a.Log().Info("leader: MinClusterSize not set; using the default %d (decide it and write it down)", cfg.MinClusterSize)
		}
	}
	var hs election.HardState
	if options.StateFile != "" {
		if hs, err = loadHardState(options.StateFile, options.ClusterID); err != nil {
			return err
		}
	}
	a.options = &actorOptions{ClusterID: options.ClusterID, Bootstrap: options.Bootstrap, StateFile: options.StateFile,
		OnTransition: options.OnTransition, ConfirmInterval: options.ConfirmInterval}
	if a.share, err = register(process, options.ClusterID); err != nil {
		return err
	}
	a.registered = true
	a.options.coalesce = !options.DisableHeartbeatCoalescing
	a.options.linger = lingerFor(cfg.HeartbeatInterval)
	a.inbox.owner.grid = a.share.gridFor(cfg.HeartbeatInterval)
	a.inbox.owner.coal = a.share.coal
	a.inbox.owner.pairs = a.inbox.owner.grid.pairs
	a.inbox.owner.campaigns = campaigns
	a.share.coal.addInbox(process.PID(), &a.inbox)
	room := readyRooms.Get().(*readyRoom)
	core, err := election.NewLent(cfg, process.PID(), hs, time.Now(), room.lent())
	if err != nil {
		readyRooms.Put(room) // New failed before it used the room
		a.teardown()
		return fmt.Errorf("leader: %w", err)
	}
	a.core = core
	defer a.reclaimRoom(room)
	a.monitored = make(pidSet, 0, len(options.Bootstrap))
	a.options.minClusterSize = cfg.MinClusterSize
	if options.SameHost != "" {
		if a.more().sameHost, err = openSameHost(options.SameHost, options.ClusterID, cfg.HeartbeatInterval); err != nil {
			a.teardown()
			return err
		}
		a.onSameHostTick(time.Now())
	}
	// Role, not Status, unless it is unclustered: Status copies the view
	// and more, garbage each member would make as it starts.
	if core.Role() == election.RoleUnclustered && a.logs(gen.LogLevelInfo) {
		a.Log().Info("leader: cluster %q: starting unclustered: %s", options.ClusterID, core.Status(time.Now()).Below)
	}
	a.flush()
	if err := a.takeFatal(); err != nil {
		a.withdrawSteady()
		a.teardown() // the flush may have set timers
		return err
	}
	return nil
}

// teardown undoes what ProcessInit set up once the actor registered: its
// timers, the reconfirm timer, the registration and the same-host cell.
// ProcessTerminate runs it, and so does an Init that fails after
// registering.
func (a *Actor) teardown() {
	a.stopTimers()
	a.stopReconfirm()
	a.unregister()
	if sh := a.few().sameHost; sh != nil {
		if sh.cancel != nil {
			sh.cancel()
		}
		if err := sh.release(); err != nil {
			a.Log().Warning("leader: releasing the same-host cell: %v", err)
		}
	}
}

// actorOptions are the Options fields the shell reads after Init, under
// their Options names, and what it derives from them.
type actorOptions struct {
	ClusterID       string
	Bootstrap       []gen.ProcessID
	StateFile       string
	OnTransition    func(Transition)
	ConfirmInterval int
	// minClusterSize is Options.MinClusterSize with its default applied.
	minClusterSize int
	// linger is the member's outbox linger (lingerFor its heartbeat
	// interval).
	linger time.Duration
	// coalesce is false when Options.DisableHeartbeatCoalescing is set; the
	// actor's share of its node exists anyway.
	coalesce bool
}

// wireTypes is NetworkTypes, made once: every member checks them at spawn.
var wireTypes = sync.OnceValue(NetworkTypes)

// checkRegistered fails when the election's wire types are not registered on
// the node: an unregistered vote fails to encode on every send, and the node
// would look healthy while never joining an election.
func checkRegistered(network gen.Network) error {
	for _, t := range wireTypes() {
		if !network.IsRegistered(t) {
			return fmt.Errorf("leader: wire type %T is not registered on this node; call node.Network().RegisterTypes(leader.NetworkTypes()) before spawning: %w", t, gen.ErrUnregistered)
		}
	}
	return nil
}

// ProcessRun handles queued messages, most urgent first, until the mailbox is
// empty (nil) or the actor must terminate (the reason).
func (a *Actor) ProcessRun() error {
	return act.Drain(a, a.handle)
}

// ProcessTerminate hands leadership over when the actor ends on purpose
// (so a reachable peer campaigns at once), then calls Terminate.
func (a *Actor) ProcessTerminate(reason error) {
	// It may end without handling a message (its node stopping): nothing
	// more is answered or beaten ahead for it (coalescer.go, rules 6 and 7).
	a.withdrawSteady()
	if a.core != nil && a.core.IsLeader() && (errors.Is(reason, gen.TerminateReasonNormal) || errors.Is(reason, gen.TerminateReasonShutdown)) {
		// As at every wake-up, the core takes what was done and held for
		// it first, so it hands over knowing its members' last replies.
		err := a.stepHeld()
		if err == nil && a.core.IsLeader() && a.core.StepDownToEnd(time.Now()) == nil {
			a.flush()
			err = a.takeFatal()
		}
		if err != nil {
			a.Log().Error("leader: handing leadership over while terminating: %v", err)
		}
	}
	a.teardown()
	a.behavior.Terminate(reason)
}

// handle handles one message. The member's steady answer is withdrawn
// while it does (coalescer.go, rule 6): nothing is answered for it while
// its state moves, and what was answered before is stepped first. A pair
// binding is only suspended meanwhile, and stands again when the message
// left the answer as it was (a probe's firing, a down of another member).
func (a *Actor) handle(m *gen.MailboxMessage) error {
	room := a.lendRoom()
	defer a.reclaimRoom(room)
	a.suspendSteady()
	if err := a.handleMessage(m); err != nil {
		return err
	}
	a.settleCampaign()
	a.publishSteady()
	return nil
}

func (a *Actor) handleMessage(m *gen.MailboxMessage) error {
	if err := a.stepHeld(); err != nil {
		return err
	}
	switch m.Type {
	case gen.MailboxMessageTypeRequest:
		return a.handleCall(m)
	case gen.MailboxMessageTypeExit:
		if reason := act.ExitReason(a, m); reason != nil {
			return reason
		}
		return a.userMessage(m, time.Now())
	case gen.MailboxMessageTypeInspect:
		act.AnswerInspect(a, m, a.inspect(m.From, act.InspectItems(m)))
		return nil
	}
	now := time.Now()
	a.lastInput = now
	self := m.From == a.PID()
	switch msg := m.Message.(type) {
	case timerFired:
		if m.From.Node != a.PID().Node {
			return a.userMessage(m, now)
		}
		t, due := a.onTimerFired(now, msg)
		if !due {
			return nil
		}
		if a.few().observeStep != nil {
			a.few().observeStep(now, a.PID(), t)
		}
		a.onTick = t.Kind == election.TimerHeartbeat
		a.core.Tick(now, t)
		a.flush()
		a.onTick = false
		return a.takeFatal()
	case coalescedIn:
		if m.From.Node != a.PID().Node {
			return a.userMessage(m, now)
		}
		return a.stepCoalesced(now, msg)
	case coalescedFailed:
		if m.From.Node != a.PID().Node {
			return a.userMessage(m, now)
		}
		a.core.SendFailed(now, msg.node, msg.err)
	case election.MessageRequestVote, election.MessageVote, election.MessageHeartbeat,
		election.MessageHeartbeatAck, election.MessageTimeoutNow, election.MessageMembership:
		a.step(now, m.From, msg)
	case reconfirmTick:
		if !self || a.options.ConfirmInterval <= 0 {
			return a.userMessage(m, now)
		}
		a.reconfirm(msg)
	case sameHostTick:
		if !self || a.few().sameHost == nil {
			return a.userMessage(m, now)
		}
		a.onSameHostTick(now)
	case MessageSubscribe:
		a.subscribe(msg.Subscriber)
	case MessageUnsubscribe:
		a.unsubscribe(msg.Subscriber)
	case gen.MessageDownPID:
		if !a.electionDown(now, msg) {
			return a.userMessage(m, now)
		}
	default:
		return a.userMessage(m, now)
	}
	a.flush()
	return a.takeFatal()
}

// step gives the core one protocol message.
func (a *Actor) step(now time.Time, from gen.PID, msg any) {
	if a.few().observeStep != nil {
		a.few().observeStep(now, from, msg)
	}
	a.core.Step(now, from, msg)
}

// userMessage hands a message to HandleMessage. A callback the user's code
// set off from there (a Join whose flush ran HandleBecomeFollower, say) may
// have failed; that error ends the actor too. start is when the message was
// taken, the instant the callback's time is measured from (timed).
func (a *Actor) userMessage(m *gen.MailboxMessage, start time.Time) error {
	err := a.behavior.HandleMessage(m.From, m.Message)
	a.timed("HandleMessage", start)
	if err != nil {
		return err
	}
	return a.takeFatal()
}

// electionDown routes a down message that belongs to the election (a
// member's or a subscriber's) and reports whether it did.
func (a *Actor) electionDown(now time.Time, msg gen.MessageDownPID) bool {
	_, subscriber := a.few().subscribers[msg.PID]
	delete(a.few().subscribers, msg.PID)
	member := a.monitored.has(msg.PID)
	_, demonitored := a.few().demonitored[msg.PID]
	delete(a.few().demonitored, msg.PID)
	if !member {
		// A down already queued when the election demonitored the PID is
		// swallowed, not handed to the user.
		return subscriber || demonitored
	}
	a.monitored.remove(msg.PID)
	a.core.PeerDown(now, msg.PID, msg.Reason)
	if a.few().sameHost != nil {
		// The member that went down may have held the host's cell: claim it
		// now rather than at the next tick.
		a.core.SetCampaign(now, a.few().sameHost.tick())
	}
	return true
}

func (a *Actor) handleCall(m *gen.MailboxMessage) error {
	var result any
	var err error
	if r, ok := m.Message.(controlRequest); ok && a.core != nil {
		result, err = a.control(r)
	} else {
		start := time.Now()
		result, err = a.behavior.HandleCall(m.From, m.Ref, m.Message)
		a.timed("HandleCall", start)
	}
	if reason := act.Answer(a, m, result, err); reason != nil {
		return reason
	}
	return a.takeFatal()
}

// takeFatal returns and clears the error a callback returned during flush.
func (a *Actor) takeFatal() error {
	if a.rare == nil {
		return nil
	}
	err := a.rare.fatal
	a.rare.fatal = nil
	return err
}

// Default callbacks. Init has none on purpose: the Options are the user's to decide.

// HandleMessage logs the unhandled message at Warning.
func (a *Actor) HandleMessage(from gen.PID, message any) error {
	a.Log().Warning("leader: unhandled message from %s: %#v", from, message)
	return nil
}

// HandleCall logs the unhandled request and answers gen.ErrUnsupported.
func (a *Actor) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	a.Log().Warning("leader: unhandled request from %s: %#v", from, request)
	return nil, fmt.Errorf("leader: request of type %T: %w", request, gen.ErrUnsupported)
}

// Terminate does nothing.
func (a *Actor) Terminate(reason error) {}

// HandleInspect adds nothing to the election's keys.
func (a *Actor) HandleInspect(from gen.PID, item ...string) map[string]string { return nil }

// HandleConfirmLeader confirms every won election.
func (a *Actor) HandleConfirmLeader() (bool, error) { return true, nil }

// HandleBecomeLeader logs a warning: winning leadership and doing nothing
// with it is almost always a missing implementation.
func (a *Actor) HandleBecomeLeader() error {
	a.Log().Warning("leader: became leader of cluster %q at term %d, but HandleBecomeLeader is not implemented", a.options.ClusterID, a.core.Term())
	return nil
}

// HandleBecomeFollower logs a warning, as HandleBecomeLeader does.
func (a *Actor) HandleBecomeFollower(leader gen.PID) error {
	a.Log().Warning("leader: following %s at term %d, but HandleBecomeFollower is not implemented", leader, a.core.Term())
	return nil
}

// HandlePeerJoined does nothing.
func (a *Actor) HandlePeerJoined(peer gen.PID) error { return nil }

// HandlePeerLeft does nothing.
func (a *Actor) HandlePeerLeft(peer gen.PID) error { return nil }

// pidSet is a set of PIDs kept in a slice: a member monitors a handful of
// peers, for which a map would cost several times as much.
type pidSet []gen.PID

func (s pidSet) has(pid gen.PID) bool { return slices.Contains(s, pid) }

func (s *pidSet) add(pid gen.PID) {
	if !s.has(pid) {
		*s = append(*s, pid)
	}
}

func (s *pidSet) remove(pid gen.PID) {
	if i := slices.Index(*s, pid); i >= 0 {
		*s = slices.Delete(*s, i, i+1)
	}
}
