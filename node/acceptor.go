package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/regent-go/regent/node/internal/handshake"
)

// listen opens the acceptor: on the options' host and port, defaulting to
// the host and port of the node name, or a free port.
func (nw *network) listen() error {
	host, port := nw.node.name.Host(), "0"
	if h, p, err := net.SplitHostPort(host); err == nil {
		host, port = h, p
	}
	if nw.opts.Acceptor.Host != "" {
		host = nw.opts.Acceptor.Host
	}
	if nw.opts.Acceptor.Port != 0 {
		port = fmt.Sprint(nw.opts.Acceptor.Port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("listen on %s: %w", net.JoinHostPort(host, port), err)
	}
	nw.listener = ln
	nw.wg.Add(1)
	go nw.acceptLoop()
	return nil
}

// acceptLoop accepts connections and hands each to a goroutine of its own
// for the handshake, closing at once those beyond MaxHandshakes.
func (nw *network) acceptLoop() {
	defer nw.wg.Done()
	for {
		raw, err := nw.listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			nw.logs.Warning("accept", "accept: %v", err)
			time.Sleep(10 * time.Millisecond) // out of descriptors: do not spin
			continue
		}
		nw.mu.Lock()
		if nw.closed {
			nw.mu.Unlock()
			raw.Close()
			return
		}
		if nw.accepting >= nw.opts.MaxHandshakes {
			nw.mu.Unlock()
			nw.handshakeFailed(raw, refuse(rejectHandshakeLimit, "%d handshakes already in progress", nw.opts.MaxHandshakes))
			continue
		}
		nw.accepting++
		nw.pending[raw] = struct{}{}
		nw.wg.Add(1)
		nw.mu.Unlock()
		go nw.accept(raw)
	}
}

// accept authenticates one incoming connection and registers it.
func (nw *network) accept(raw net.Conn) {
	defer nw.wg.Done()
	defer func() {
		nw.mu.Lock()
		delete(nw.pending, raw)
		nw.accepting--
		nw.mu.Unlock()
	}()
	conn := raw
	if nw.opts.TLS != nil {
		conn = tls.Server(raw, nw.opts.TLS)
	}
	if err := conn.SetDeadline(time.Now().Add(nw.opts.HandshakeTimeout)); err != nil {
		conn.Close()
		return
	}
	peer, err := handshake.Accept(conn, nw.handshakeConfig(conn, false))
	if err != nil {
		if nw.ctx.Err() != nil { // the network closed the socket: not the peer's fault
			conn.Close()
			return
		}
		nw.handshakeFailed(conn, err)
		return
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return
	}
	if err := nw.register(newConnection(nw, conn, peer, false), nil); err != nil {
		nw.node.log.Debug("accepted %s but did not register it: %v", peer.Name, err)
	}
}
