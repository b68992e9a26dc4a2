package gen

import (
	"fmt"
	"hash/crc32"
	"strings"
)

// Atom is a short interned-style name: a node name (`name@host` or
// `name@host:port`) or a registered process name.
type Atom string

// String returns the atom as is.
func (a Atom) String() string { return string(a) }

// Host returns the part of a node name after '@', including any ":port"; it is
// empty when the atom has no '@'.
func (a Atom) Host() string {
	if i := strings.IndexByte(string(a), '@'); i >= 0 {
		return string(a)[i+1:]
	}
	return ""
}

// CRC32 is the checksum of the atom that PID.String shows in place of the node
// name, so PIDs stay short in logs.
func (a Atom) CRC32() string {
	return fmt.Sprintf("%08X", crc32.ChecksumIEEE([]byte(a)))
}

// PID identifies one process in one life of one node. Creation tells a
// restarted node apart from its previous life; a zero PID means "none".
type PID struct {
	Node     Atom
	ID       uint64
	Creation int64
}

// String formats the PID as <NODECRC.0.ID>, the shape ergo prints.
func (p PID) String() string {
	if p == (PID{}) {
		return "<00000000.0.0>"
	}
	return fmt.Sprintf("<%s.0.%d>", p.Node.CRC32(), p.ID)
}

// ProcessID names a registered process on a node; it stays valid across
// restarts of the process or the node, unlike a PID.
type ProcessID struct {
	Name Atom
	Node Atom
}

// String formats the ProcessID as <name@node>.
func (p ProcessID) String() string {
	return fmt.Sprintf("<%s@%s>", p.Name, p.Node)
}

// Ref is a unique reference made by a node: it ties a Call's response to its
// request and names timers and monitors.
type Ref struct {
	Node     Atom
	Creation int64
	ID       [3]uint64
}

// String formats the reference as Ref#<NODECRC.ID0.ID1.ID2>.
func (r Ref) String() string {
	return fmt.Sprintf("Ref#<%s.%d.%d.%d>", r.Node.CRC32(), r.ID[0], r.ID[1], r.ID[2])
}

// CancelFunc cancels what returned it (a SendAfter timer). It reports whether
// it cancelled: false means the message was already sent or already cancelled.
type CancelFunc func() bool
