package gen

import (
	"crypto/tls"
	"time"
)

// Node is a running node: a set of processes and its network.
type Node interface {
	// Name returns the node name, name@host or name@host:port.
	Name() Atom
	// Creation tells this life of the node from earlier ones; it changes on every start.
	Creation() int64
	// IsAlive reports whether the node is running.
	IsAlive() bool
	// Uptime is the time since the node started.
	Uptime() time.Duration

	// Spawn starts a process with no parent.
	Spawn(factory ProcessFactory, options ProcessOptions, args ...any) (PID, error)
	// SpawnRegister starts a process under a registered name; ErrTaken if the
	// name is in use.
	SpawnRegister(register Atom, factory ProcessFactory, options ProcessOptions, args ...any) (PID, error)
	// Send sends a message from the node itself; see Process.Send.
	Send(to any, message any) error
	// Call sends a request from the node and waits for the response
	// (DefaultRequestTimeout). Ergo has no node-level Call; Regent adds it.
	Call(to any, request any) (any, error)
	// Inspect asks a local or remote process for its inspection map. Ergo has
	// no node-level Inspect; Regent adds it.
	Inspect(pid PID, items ...string) (map[string]string, error)
	// Kill terminates a local process with TerminateReasonKill.
	Kill(pid PID) error
	// SendExit sends an exit signal from the node to a process.
	SendExit(pid PID, reason error) error
	// ProcessList lists the local processes.
	ProcessList() ([]PID, error)
	// ProcessInfo describes one local process.
	ProcessInfo(pid PID) (ProcessInfo, error)

	// Network returns the node's network.
	Network() Network
	// Log returns the node's logger.
	Log() Log

	// Stop terminates every process with TerminateReasonShutdown, tells remote
	// monitors, closes the network and returns when everything has ended.
	Stop()
	// StopForce closes the network at once and abandons running processes'
	// callbacks; remote peers see ErrNoConnection.
	StopForce()
	// Wait blocks until the node has stopped.
	Wait()
	// WaitWithTimeout is Wait with a bound; ErrTimeout if it passes.
	WaitWithTimeout(timeout time.Duration) error
}

// Network is a node's connections to other nodes: one per peer node, each
// with a bounded send queue that its writer drains in one write per
// wake-up. A send that finds the queue full waits while the queue drains,
// and fails with ErrTimeout when no write completed for
// NetworkOptions.SendQueueWait; Stats counts such refusals
// (Dropped["send_queue_full"]) and the writes that carried the frames
// (Writes).
type Network interface {
	// RegisterTypes registers the message types that may cross the wire.
	// Register every type on every node before it exchanges messages;
	// registering an already registered type is not an error.
	RegisterTypes(types []any) error
	// IsRegistered reports whether the dynamic type of v may cross the wire
	// (registered with RegisterTypes, or one of the runtime's builtins).
	// Regent adds it so actors can refuse to start without their protocol.
	IsRegistered(v any) bool
	// RegisterErrors registers sentinel errors so that they arrive as the
	// same value (errors.Is works); other errors arrive as their text.
	RegisterErrors(errs []error) error
	// AddRoute says where to dial a node: address is host:port.
	AddRoute(node Atom, address string) error
	// RemoveRoute forgets a route added with AddRoute.
	RemoveRoute(node Atom) error
	// Nodes lists the nodes with an established connection.
	Nodes() []Atom
	// Disconnect closes the connection to node; monitors see ErrNoConnection.
	Disconnect(node Atom) error
	// AcceptorAddress is the host:port the node accepts connections on, empty
	// when it does not listen.
	AcceptorAddress() string
	// Stats returns the network's counters.
	Stats() NetworkStats
}

// NetworkStats are a network's counters since the node started.
type NetworkStats struct {
	// Connections is the number of peers with an established connection
	// (at most NetworkOptions.MaxPeers).
	Connections int
	// HandshakesInFlight is the number of accepted connections still in
	// their handshake (at most NetworkOptions.MaxHandshakes).
	HandshakesInFlight int
	FramesIn           uint64
	FramesOut          uint64
	BytesIn            uint64
	BytesOut           uint64
	// Writes counts the socket writes that carried FramesOut. Each
	// connection's writer sends everything queued when it wakes in one
	// write, so FramesOut/Writes is the average number of frames per
	// write: above 1 when sends arrive faster than one write takes.
	Writes uint64
	// DownsDeferred counts the downs of monitors whose watcher let them
	// wait when the connection to their target's node was lost (see
	// node.DownDeferrer): each is delivered after its delay, or when a
	// connection to that node is made again, not at once.
	DownsDeferred uint64
	// HandshakesRejected counts connections, accepted or dialled, that
	// ended before or during the handshake (a node stopping ends its own
	// handshakes without counting them). Rejected breaks it down by reason.
	HandshakesRejected uint64
	// Rejected counts refused handshakes by reason: "unauthorized" (wrong
	// cookie), "malformed" (not Regent's protocol), "unsupported" (another
	// protocol version), "dropped" (the peer hung up or reset the connection
	// mid-handshake), "timeout" (HandshakeTimeout passed), "tls" (the TLS
	// handshake failed), "name_mismatch" (the dialled node has another name),
	// "refused" (the peer refused this node), "own_name" (the peer claimed
	// this node's name), "name_collision", "peer_limit", "handshake_limit"
	// and "certificate_name" (see NetworkOptions).
	Rejected map[string]uint64
	// NameCollisions counts connections refused because a live connection
	// already serves a node of that name (Rejected["name_collision"]).
	NameCollisions uint64
	// Dropped counts discarded frames and closed connections by reason, such
	// as "unknown_type", "malformed", "too_large", "keepalive_timeout",
	// "dial_failed" (frames queued for a dial that failed),
	// "handshake_failed" (every rejected handshake), "send_queue_full" (a
	// send refused with ErrTimeout when its connection wrote nothing for
	// SendQueueWait; its sender got the error) and "send_queue_overflow" (a connection closed because the
	// runtime's own frames found its send queue at twice SendQueueBytes),
	// "foreign_sender" (a frame acting for a process its peer does not
	// host: a node speaks only for its own processes), "unknown_process"
	// (a message for a process that does not run here) and "mailbox_full"
	// (a message for a process whose bounded mailbox is full).
	Dropped map[string]uint64
}

// NetworkMode enables or disables a node's network.
type NetworkMode int

const (
	// NetworkModeEnabled: the node accepts and dials connections (the default).
	NetworkModeEnabled NetworkMode = iota
	// NetworkModeDisabled: the node is local only; remote sends fail with ErrNoConnection.
	NetworkModeDisabled
)

// NodeOptions configure node.Start.
type NodeOptions struct {
	Network NetworkOptions
	Log     LogOptions
}

// NetworkOptions configure a node's network. Zero values take the documented defaults.
type NetworkOptions struct {
	Mode NetworkMode
	// Cookie is the shared secret both sides of a connection must know. It
	// never crosses the wire: each side proves it with an HMAC over the other
	// side's fresh random challenge. node.Start refuses an empty cookie
	// (ErrEmptyCookie) unless InsecureOpen is set, and logs a warning for a
	// cookie shorter than 16 bytes, which offline guessing can recover from
	// one captured proof. Use at least 16 random bytes (32 hex digits).
	Cookie string
	// InsecureOpen starts the network with an empty Cookie on purpose: every
	// node with an empty cookie is then a peer. Meant for tests on a
	// machine nobody else can reach; ignored without network, refused
	// together with a Cookie.
	InsecureOpen bool
	// Acceptor says where to listen.
	Acceptor AcceptorOptions
	// Routes map node names to host:port addresses to dial. A node name of
	// the form name@host:port needs no route.
	Routes map[Atom]string
	// TLS, when set, wraps every connection in TLS with this configuration
	// on both sides (set ClientAuth and ClientCAs to require client
	// certificates, RootCAs and Certificates for dialling).
	TLS *tls.Config
	// TLSVerifyNodeName binds certificates to node names: each side refuses
	// a peer whose certificate does not name, as a DNS or IP subject
	// alternative name, the host part of the node name the peer claims
	// (counted as Rejected["certificate_name"]). It needs TLS, with client
	// certificates required (tls.RequireAndVerifyClientCert) so that the
	// acceptor sees one; without it any holder of a certificate from the CA
	// can claim any node name.
	TLSVerifyNodeName bool
	// KeepAlivePeriod is how often an idle connection sends a keepalive
	// frame. Default 1s.
	KeepAlivePeriod time.Duration
	// KeepAliveTimeout is how long a connection may stay silent before the
	// peer is declared down. Default 3s; must exceed KeepAlivePeriod.
	KeepAliveTimeout time.Duration
	// MaxFrameSize caps one frame, in bytes, in both directions. Default 4 MiB.
	MaxFrameSize int
	// HandshakeTimeout bounds dialling plus the handshake. Default 5s.
	HandshakeTimeout time.Duration
	// ReconnectBackoffMin and ReconnectBackoffMax bound the wait after a
	// failed dial before the next attempt; sends in between fail fast with
	// ErrNoConnection. Defaults 100ms and 5s; the wait doubles per failure.
	ReconnectBackoffMin time.Duration
	ReconnectBackoffMax time.Duration
	// MaxHandshakes caps the accepted connections that may be in their
	// handshake at once; a connection beyond it is closed on arrival and
	// counted (Rejected["handshake_limit"]). Default 64. Connections that
	// stay silent hold their place for up to HandshakeTimeout, so a host
	// that opens MaxHandshakes of them delays new inbound peers by that
	// long; established connections and dials are not affected.
	MaxHandshakes int
	// MaxPeers caps the established connections; a new peer beyond it is
	// refused in the handshake (Rejected["peer_limit"]). Default 1024. With
	// MaxFrameSize and SendQueueBytes it bounds what peers can make the
	// node hold: each peer costs at most about MaxFrameSize (its largest
	// frame, allocated as its bytes arrive), a 64 KiB read buffer, up to
	// 200 KiB of interned names (64 KiB of names in a table of up to 136
	// KiB, which grows only while the peer keeps naming new things), and
	// four times SendQueueBytes of write buffers
	// (the queue at its limit for the runtime's own frames, and the batch
	// being written).
	MaxPeers int
	// SendQueueBytes bounds the encoded frames waiting for one
	// connection's writer, in bytes. Default 256 KiB. A frame is queued
	// while the queue holds less than this, so one frame of any size up to
	// MaxFrameSize always fits. When the queue is full, a process's send
	// waits for room (see SendQueueWait); the runtime's own frames (down
	// and exit notices, answers) never wait and may fill it to
	// twice the bound, past which the peer is not reading and the
	// connection is closed (Dropped["send_queue_overflow"]).
	SendQueueBytes int
	// SendQueueWait bounds how long Send, SendExit, Call, SendResponse,
	// Link and Monitor toward another node wait on a full send queue
	// without progress: they wait while the connection's writer completes
	// writes (each frees the queue), so a sender goes at the pace the peer
	// reads, and fail with an error wrapping ErrTimeout (counted as
	// Dropped["send_queue_full"]) once no write has completed for this
	// long: the peer has stopped reading. Default 1s, longer than a
	// garbage collection or scheduling stall of a loaded peer, shorter
	// than KeepAliveTimeout's default. A negative value fails at once.
	SendQueueWait time.Duration
}

// AcceptorOptions say where a node listens.
type AcceptorOptions struct {
	// Disabled: the node only dials.
	Disabled bool
	// Host to listen on. Default: the host part of the node name.
	Host string
	// Port to listen on. 0 means the port in the node name, or a free port
	// when the name has none.
	Port uint16
}
