package main

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// Pacing of the --join watch.
const (
	joinProbeEvery = time.Second
	// joinWarnAfter failed probes in a row make the first warning: enough
	// for members started one after the other not to warn about each other.
	joinWarnAfter = 5
	// joinDialTimeout bounds the TCP check of a peer's address.
	joinDialTimeout = 3 * time.Second
	// joinWarnEvery bounds how often a peer that stays unreachable is warned about.
	joinWarnEvery = time.Minute
)

// joinWatch tells the operator about --join peers this node cannot use: it
// asks each peer's member for its view (leader.ReadMember) until it answers
// once, warns after joinWarnAfter failures with the cause, then at most once
// per joinWarnEvery with the count, and says when the peer answers at last
// or runs another cluster. While the runtime backs off from a failed dial
// its refusal carries no cause, so the watch then dials the peer's address
// itself (TCP only) to learn it. It runs on one goroutine.
type joinWatch struct {
	n       gen.Node
	p       *printer
	cluster string
	peers   []*joinPeer
}

// joinPeer is one --join target and what the watch knows of it.
type joinPeer struct {
	id       gen.ProcessID
	failures int       // in a row
	since    int       // failures since the last warning
	warnedAt time.Time // zero until the first warning
	cause    string    // the last real cause seen
}

// dialCheck opens and closes a TCP connection to node's address and
// returns why that failed, or, when it worked, that the connection fails
// past TCP.
func dialCheck(node gen.Atom) error {
	_, addr, _ := strings.Cut(string(node), "@")
	conn, err := net.DialTimeout("tcp", addr, joinDialTimeout)
	if err != nil {
		return err
	}
	if err := conn.Close(); err != nil {
		return err
	}
	return errHandshake
}

// errHandshake: the peer accepts TCP connections but this node's connection
// to it does not come up.
var errHandshake = errors.New("it accepts TCP connections, but the connection fails after that: the cookie or the TLS settings differ (the log at WARNING says which)")

func newJoinWatch(n gen.Node, p *printer, member gen.Atom, cluster string, peers []gen.ProcessID) *joinWatch {
	w := &joinWatch{n: n, p: p, cluster: cluster}
	for _, id := range peers {
		w.peers = append(w.peers, &joinPeer{id: id})
	}
	return w
}

// run probes until every peer answered or ctx ends.
func (w *joinWatch) run(ctx context.Context) {
	tick := time.NewTicker(joinProbeEvery)
	defer tick.Stop()
	for len(w.peers) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.peers = slices.DeleteFunc(w.peers, func(jp *joinPeer) bool { return w.probe(ctx, jp, time.Now()) })
	}
}

// probe reads one peer and reports whether the watch is done with it.
func (w *joinWatch) probe(ctx context.Context, jp *joinPeer, now time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	r, err := leader.ReadMember(w.n, jp.id, "ergo:cluster")
	if err == nil {
		in, perr := leader.ParseInspection(r.Inspection)
		if perr != nil {
			w.p.warn("--join peer %s answered an unreadable inspection: %v", jp.id.Node, perr)
		} else if got := in.Cluster; got != w.cluster {
			w.p.warn("--join peer %s runs cluster %q, not %q: it will not take part in this election (--cluster)", jp.id.Node, got, w.cluster)
		} else if !jp.warnedAt.IsZero() {
			w.p.say("--join peer %s answers now, after %d failed attempts", jp.id.Node, jp.failures)
		}
		return true
	}
	if !realCause(err) {
		err = dialCheck(jp.id.Node)
	}
	jp.cause = cause(err)
	jp.failures++
	jp.since++
	switch {
	case jp.warnedAt.IsZero() && jp.failures >= joinWarnAfter:
		w.p.warn("cannot reach --join peer %s after %d attempts: %s", jp.id.Node, jp.failures, jp.cause)
	case !jp.warnedAt.IsZero() && now.Sub(jp.warnedAt) >= joinWarnEvery:
		w.p.warn("still cannot reach --join peer %s: %d more failed attempts in %s: %s", jp.id.Node, jp.since, now.Sub(jp.warnedAt).Round(time.Second), jp.cause)
	default:
		return false
	}
	jp.warnedAt, jp.since = now, 0
	return false
}
