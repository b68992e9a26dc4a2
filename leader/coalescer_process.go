package leader

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
)

// coalescerProcess is the process behind a node's coalescer: it takes the
// batches peers send and hands their entries to the members (coalescer.go,
// rule 4). Its fields are owned by its goroutine; the shared coalescer is
// not.
type coalescerProcess struct {
	gen.Process
	c     *coalescer
	share *nodeShare
	// tidyCancel stops the pending tidyTick (coalescer_tidy.go).
	tidyCancel gen.CancelFunc
}

// deliveryTarget is a member as an entry addresses it: by PID, or by its
// registered name on this node.
type deliveryTarget struct {
	pid  gen.PID
	name gen.Atom
}

func (t deliveryTarget) value() any {
	if t.pid != (gen.PID{}) {
		return t.pid
	}
	return t.name
}

func coalescerFactory(share *nodeShare) gen.ProcessFactory {
	return func() gen.ProcessBehavior { return &coalescerProcess{c: share.coal, share: share} }
}

// ProcessInit makes the process the one members and peers reach.
func (p *coalescerProcess) ProcessInit(process gen.Process, args ...any) error {
	p.Process = process
	pid := process.PID()
	p.c.pid.Store(&pid)
	p.armTidy()
	return nil
}

// ProcessRun takes every queued message.
func (p *coalescerProcess) ProcessRun() error {
	return act.Drain(p, p.handle)
}

// handle takes one message; an error ends the process.
func (p *coalescerProcess) handle(m *gen.MailboxMessage) error {
	switch m.Type {
	case gen.MailboxMessageTypeExit:
		if reason := act.ExitReason(p, m); reason != nil {
			return reason
		}
		p.c.stats.drop(dropUnexpectedMessage, 1)
	case gen.MailboxMessageTypeInspect:
		act.AnswerInspect(p, m, p.inspect())
	case gen.MailboxMessageTypeRequest:
		return act.Answer(p, m, nil, fmt.Errorf("leader: the heartbeat coalescer takes no requests: %w", gen.ErrUnsupported))
	default:
		switch msg := m.Message.(type) {
		case MessageHeartbeatBatch:
			p.receive(m.From, msg)
			return nil
		case tidyTick:
			if m.From == p.PID() {
				p.tidy()
				p.armTidy()
				return nil
			}
		}
		p.c.stats.drop(dropUnexpectedMessage, 1)
	}
	return nil
}

// receive checks the entries of a batch from the node of from, answers the
// heartbeats it may answer ahead, holds the acknowledgements it may hold and
// delivers the rest, in the batch's order.
func (p *coalescerProcess) receive(from gen.PID, b MessageHeartbeatBatch) {
	st := &p.c.stats
	entries := uint64(len(b.Heartbeats) + len(b.Acks) + len(b.Beats) + len(b.BeatAcks))
	st.framesIn.Add(1)
	st.entriesIn.Add(entries)
	if from.Node == p.c.self {
		st.drop(dropLocalBatch, entries)
		return
	}
	node := from.Node
	now := time.Now()
	for i := range b.Heartbeats {
		e := &b.Heartbeats[i]
		if t, ok := p.check(e.CoalescedRoute, &e.Message.From, node); ok {
			p.deliverHeartbeat(t, e.from(node), now, &e.Message)
		}
	}
	for i := range b.Acks {
		e := &b.Acks[i]
		t, ok := p.check(e.CoalescedRoute, &e.Message.From, node)
		if ok && (t.pid == (gen.PID{}) || !p.c.hold(t.pid, e.from(node), now, &e.Message)) {
			p.deliver(t, inbound{from: e.from(node), ack: &e.Message})
		}
	}
	// Pair beats (rule 8), after the entries that were queued before them.
	for i := range b.Beats {
		p.receiveBeat(node, &b.Beats[i], now)
	}
	if len(b.Beats) > 0 {
		linger := time.Duration(math.MaxInt64)
		for i := range b.Beats {
			linger = min(linger, p.c.pairAckLinger(b.Beats[i].Interval))
		}
		p.c.flushNow(node, linger) // the PairAcks, or within the shortest of their lingers
	}
	for i := range b.BeatAcks {
		a := &b.BeatAcks[i]
		if pb := p.c.pairBeatsFor(time.Duration(a.Interval)); pb != nil {
			pb.acked(node, a, sinceEpoch(now))
		} else {
			st.drop(dropStalePair, 1)
		}
	}
}

// check decides where an entry from node goes, or counts why it is
// dropped; it restores the sender node in the message's Header.From.
func (p *coalescerProcess) check(r CoalescedRoute, sender *gen.ProcessID, node gen.Atom) (deliveryTarget, bool) {
	st := &p.c.stats
	switch {
	case sender.Node != "":
		st.drop(dropForeignSender, 1)
	case r.FromID == 0 || (r.ToID == 0 && r.ToName == ""):
		st.drop(dropMalformedEntry, 1)
	default:
		sender.Node = node
		if r.ToID == 0 {
			return deliveryTarget{name: r.ToName}, true
		}
		return deliveryTarget{pid: gen.PID{Node: p.c.self, ID: r.ToID, Creation: r.ToCreation}}, true
	}
	return deliveryTarget{}, false
}

// deliver hands one entry to the member t. A member takes at most one
// entry from each peer in a batch (a heartbeat from its leader, or an
// acknowledgement from each follower there), so there is nothing to group.
func (p *coalescerProcess) deliver(t deliveryTarget, in inbound) {
	p.c.deliver(p, t, in)
}

// ProcessTerminate replaces the process when it ended while members still
// use it (killed from outside, say); after the last member, or with the
// node, it just ends, and stops the pairs' watchdogs, which would
// otherwise keep the ended members' memory for an election timeout.
func (p *coalescerProcess) ProcessTerminate(reason error) {
	if p.tidyCancel != nil {
		p.tidyCancel()
	}
	if !p.share.coalescerEnded(p.Process, reason) {
		return
	}
	for _, src := range p.c.pairsIn {
		src.close()
	}
}

// inspect answers an inspection of the coalescer process with its counters.
func (p *coalescerProcess) inspect() map[string]string {
	s := p.c.Stats()
	return map[string]string{
		"coalescer:frames_out":    strconv.FormatUint(s.FramesOut, 10),
		"coalescer:entries_out":   strconv.FormatUint(s.EntriesOut, 10),
		"coalescer:flushes":       strconv.FormatUint(s.Flushes, 10),
		"coalescer:failed_frames": strconv.FormatUint(s.FailedFrames, 10),
		"coalescer:frames_in":     strconv.FormatUint(s.FramesIn, 10),
		"coalescer:entries_in":    strconv.FormatUint(s.EntriesIn, 10),
		"coalescer:deliveries":    strconv.FormatUint(s.Deliveries, 10),
		"coalescer:held":          strconv.FormatUint(s.Held, 10),
		"coalescer:answered":      strconv.FormatUint(s.Answered, 10),
		"coalescer:beaten_ahead":  strconv.FormatUint(s.BeatenAhead, 10),
		"coalescer:taken":         strconv.FormatUint(s.Taken, 10),
		"coalescer:mismatched":    strconv.FormatUint(s.Mismatched, 10),
		"coalescer:forgotten":     strconv.FormatUint(s.Forgotten, 10),
		"coalescer:dropped":       formatCounts(s.Dropped),
		"coalescer:pairs":         formatCounts(s.PairEvents()),
		"coalescer:campaign_gate": formatCounts(campaigns.nodeStats(p.share).Events()),
	}
}
