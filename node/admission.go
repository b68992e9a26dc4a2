package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/handshake"
)

// Who gets a connection: the reasons a handshake ends without one, the
// checks an authenticated peer must pass (admit), and what a new
// connection does to an established one to the same name (register).

// Reasons counted in NetworkStats.Rejected, each with the words its log
// line uses.
const (
	rejectUnauthorized   = "unauthorized"
	rejectMalformed      = "malformed"
	rejectUnsupported    = "unsupported"
	rejectDropped        = "dropped"
	rejectTimeout        = "timeout"
	rejectTLS            = "tls"
	rejectNameMismatch   = "name_mismatch"
	rejectRefused        = "refused"
	rejectOwnName        = "own_name"
	rejectNameCollision  = "name_collision"
	rejectPeerLimit      = "peer_limit"
	rejectHandshakeLimit = "handshake_limit"
	rejectCertName       = "certificate_name"
)

var rejectWords = map[string]string{
	rejectUnauthorized:   "wrong cookie",
	rejectMalformed:      "not Regent's protocol",
	rejectUnsupported:    "another protocol version",
	rejectDropped:        "the peer hung up mid-handshake",
	rejectTimeout:        "handshake timed out",
	rejectTLS:            "TLS handshake failed",
	rejectNameMismatch:   "the route reaches another node",
	rejectRefused:        "the peer refused this node",
	rejectOwnName:        "the peer claims this node's name",
	rejectNameCollision:  "name collision",
	rejectPeerLimit:      "too many peers",
	rejectHandshakeLimit: "too many handshakes in progress",
	rejectCertName:       "the certificate does not name the node's host",
}

// refusal is an authenticated peer this node refuses, and why.
type refusal struct {
	reason string
	err    error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

func refuse(reason string, format string, args ...any) *refusal {
	return &refusal{reason: reason, err: fmt.Errorf(format, args...)}
}

// rejectReason classifies why the handshake on conn failed with err.
func rejectReason(conn net.Conn, err error) string {
	var r *refusal
	if errors.As(err, &r) {
		return r.reason
	}
	if tc, ok := conn.(*tls.Conn); ok && !tc.ConnectionState().HandshakeComplete {
		return rejectTLS
	}
	switch {
	case errors.Is(err, gen.ErrUnauthorized):
		return rejectUnauthorized
	case errors.Is(err, handshake.ErrRefused):
		return rejectRefused
	case errors.Is(err, handshake.ErrNameMismatch):
		return rejectNameMismatch
	case errors.Is(err, gen.ErrUnsupported):
		return rejectUnsupported
	case errors.Is(err, os.ErrDeadlineExceeded):
		return rejectTimeout
	case errors.Is(err, handshake.ErrTruncated), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return rejectDropped
	case errors.Is(err, gen.ErrMalformed):
		return rejectMalformed
	}
	return rejectDropped
}

// handshakeFailed counts, logs and closes a connection whose handshake
// failed.
func (nw *network) handshakeFailed(conn net.Conn, err error) {
	reason := rejectReason(conn, err)
	nw.reject(reason)
	if reason == rejectDropped {
		nw.logs.Info("handshake", "handshake with %s ended: %v", conn.RemoteAddr(), err)
	} else {
		nw.logs.Warning("handshake", "refused connection with %s: %s: %v", conn.RemoteAddr(), rejectWords[reason], err)
	}
	conn.Close()
}

// reject counts one rejected handshake.
func (nw *network) reject(reason string) {
	nw.rejected.Add(1)
	nw.countMu.Lock()
	nw.rejectedBy[reason]++
	nw.dropped[dropHandshake]++
	nw.countMu.Unlock()
}

// handshakeConfig is the handshake configuration for conn, whose admission
// check knows which side dialled.
func (nw *network) handshakeConfig(conn net.Conn, dialled bool) handshake.Config {
	hs := nw.hs
	hs.Admit = func(peer handshake.Identity) error { return nw.admit(conn, peer, dialled) }
	return hs
}

// admit decides whether a peer that proved the cookie gets a connection: it
// must not claim this node's name, its certificate must name its host when
// TLSVerifyNodeName is on, and register must be willing to install it (see
// verdictLocked). Register decides again, since things change meanwhile;
// admitting here lets a refused peer learn why.
func (nw *network) admit(conn net.Conn, peer handshake.Identity, dialled bool) error {
	if peer.Name == nw.node.name {
		return refuse(rejectOwnName, "peer claims this node's own name %s: %w", peer.Name, gen.ErrIncorrect)
	}
	if nw.opts.TLSVerifyNodeName {
		if err := verifyNodeName(conn, peer.Name); err != nil {
			return &refusal{reason: rejectCertName, err: err}
		}
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	_, _, err := nw.verdictLocked(peer, dialled)
	return err
}

// verifyNodeName checks that the certificate the peer presented on conn
// names the host part of the node name it claims.
func verifyNodeName(conn net.Conn, name gen.Atom) error {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return fmt.Errorf("%s: not a TLS connection: %w", name, gen.ErrUnauthorized)
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return fmt.Errorf("%s presented no certificate: %w", name, gen.ErrUnauthorized)
	}
	host := name.Host()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if err := certs[0].VerifyHostname(host); err != nil {
		return fmt.Errorf("the certificate of %s does not name %q: %w: %w", name, host, gen.ErrUnauthorized, err)
	}
	return nil
}

// What a new connection to a peer does to the established one.
const (
	verdictFirst     = iota // no connection to the peer yet
	verdictReplace          // the old one served an earlier life of the peer: it is lost
	verdictRetireOld        // both dialled at once, or the peer dialled again: the old one is retired gracefully
	verdictRetireNew        // both dialled at once and the old one wins: the new one is retired
)

// verdictLocked decides about a new connection from peer (dialled by this
// node or not) and returns the established connection it concerns. A newer
// life of the peer (higher Creation) replaces the old connection. An older
// one is a second node under the same name, or a stale process: it is
// refused as a name collision, and the established connection stays. Within
// one life, when both nodes dialled each other at once, both keep the
// connection dialled by the node with the smaller name; when the peer
// dialled again, it gave up on the old connection, which is retired. A first
// connection beyond MaxPeers is refused. Called with nw.mu held.
func (nw *network) verdictLocked(peer handshake.Identity, dialled bool) (int, *connection, error) {
	old := nw.existing(peer.Name)
	switch {
	case old == nil:
		if peers := len(nw.connTable()); peers >= nw.opts.MaxPeers {
			return 0, nil, refuse(rejectPeerLimit, "%s would be peer %d of at most %d: %w", peer.Name, peers+1, nw.opts.MaxPeers, gen.ErrTooLarge)
		}
		return verdictFirst, nil, nil
	case peer.Creation > old.peer.Creation:
		return verdictReplace, old, nil
	case peer.Creation < old.peer.Creation:
		return 0, old, refuse(rejectNameCollision, "%s (creation %d) while a newer life (creation %d) is connected: %w",
			peer.Name, peer.Creation, old.peer.Creation, gen.ErrTaken)
	case old.dialled == dialled:
		return verdictRetireOld, old, nil
	}
	dialer := peer.Name
	if dialled {
		dialer = nw.node.name
	}
	if dialer == min(nw.node.name, peer.Name) {
		return verdictRetireOld, old, nil
	}
	return verdictRetireNew, old, nil
}

// register installs an authenticated connection and starts it, as
// verdictLocked decides. A retired connection flushes and is read to its
// end, so nothing already written on it is lost; a replaced one is closed as
// lost. Frames queued while dialling the peer go to the kept connection
// ahead of any later send; d is the dial attempt that made c, nil for an
// accepted connection. A refused c is closed, counted and logged.
func (nw *network) register(c *connection, d *dialAttempt) error {
	name := c.peer.Name
	nw.mu.Lock()
	if nw.closed {
		nw.mu.Unlock()
		c.conn.Close()
		return fmt.Errorf("register %s: %w: %w", name, gen.ErrNoConnection, gen.ErrNodeTerminated)
	}
	verdict, old, err := nw.verdictLocked(c.peer, c.dialled)
	if err != nil {
		nw.mu.Unlock()
		nw.handshakeFailed(c.conn, err)
		return fmt.Errorf("register %s: %w: %w", name, gen.ErrNoConnection, err)
	}
	keep := c
	var retire, stale *connection
	switch verdict {
	case verdictReplace:
		stale = old
	case verdictRetireOld:
		retire = old
	case verdictRetireNew:
		keep, retire = old, c
	}
	// The dial queue goes to keep before keep is published: a send reads
	// the table without nw.mu, and one that found keep before its
	// sender's queued frames were on it would overtake them.
	nw.handOverLocked(nw.dialing[name], keep)
	nw.setConnLocked(name, keep)
	if d != nil && nw.dialing[name] == d {
		delete(nw.dialing, name)
	}
	failedDials := nw.backoff[name].failures
	delete(nw.backoff, name) // connected, whichever side dialled: no more waiting

	// The downs held since the last connection to name was lost go first:
	// nothing c carries may overtake them.
	nw.node.releaseHeld(name)
	nw.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	nw.mu.Unlock()
	if retire != nil {
		retire.retire()
	}
	if stale != nil {
		reason := fmt.Errorf("%s (creation %d) replaced by a newer life, creation %d: %w", name, stale.peer.Creation, c.peer.Creation, gen.ErrNoConnection)
		nw.logs.Info("replace", "connection to %v", reason)
		stale.teardown(reason)
		nw.node.rel.nodeDown(name)
	}
	if failedDials > 0 {
		nw.node.log.Info("connected to %s (creation %d) after %d failed dials", name, c.peer.Creation, failedDials)
	} else {
		nw.node.log.Debug("connected to %s (creation %d)", name, c.peer.Creation)
	}
	return nil
}
