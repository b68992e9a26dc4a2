package node

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/codec"
	"github.com/regent-go/regent/node/internal/intern"
)

// Wire layout of one frame's payload (after the frame package's length
// header): kind (1 byte), flags (1 byte), a presence byte saying which of
// the fields below follow, the fields in this order, then, for kinds that
// carry one, the codec-encoded payload.
//
//	from    PID: node atom, uvarint ID, 8-byte creation
//	to      PID
//	target  PID or ProcessID (name atom, node atom)
//	ref     node atom, 8-byte creation, three uvarints
//
// An atom is a uvarint length and its bytes.
const (
	hasFrom uint8 = 1 << iota
	hasTo
	hasTargetPID
	hasTargetName
	hasRef
)

// hasPayload reports whether frames of kind carry a codec-encoded payload.
func (k frameKind) hasPayload() bool {
	switch k {
	case kindKeepalive, kindWatch, kindUnwatch, kindRetire:
		return false
	}
	return true
}

// appendEnvelope appends env's wire form to dst; on error dst is returned
// unchanged in length.
func appendEnvelope(dst []byte, env *envelope, reg *codec.Registry) ([]byte, error) {
	start := len(dst)
	var present uint8
	if env.from != (gen.PID{}) {
		present |= hasFrom
	}
	if env.to != (gen.PID{}) {
		present |= hasTo
	}
	switch {
	case env.target.isPID():
		present |= hasTargetPID
	case env.target.isName():
		present |= hasTargetName
	}
	if env.ref != (gen.Ref{}) {
		present |= hasRef
	}
	dst = append(dst, byte(env.kind), env.flags, present)
	if present&hasFrom != 0 {
		dst = appendPID(dst, env.from)
	}
	if present&hasTo != 0 {
		dst = appendPID(dst, env.to)
	}
	switch {
	case present&hasTargetPID != 0:
		dst = appendPID(dst, env.target.pid)
	case present&hasTargetName != 0:
		dst = appendAtom(appendAtom(dst, env.target.name), env.target.node)
	}
	if present&hasRef != 0 {
		dst = appendAtom(dst, env.ref.Node)
		dst = binary.BigEndian.AppendUint64(dst, uint64(env.ref.Creation))
		for _, id := range env.ref.ID {
			dst = binary.AppendUvarint(dst, id)
		}
	}
	if !env.kind.hasPayload() {
		return dst, nil
	}
	out, err := reg.Encode(dst, env.payload)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

func appendAtom(dst []byte, a gen.Atom) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(a)))
	return append(dst, a...)
}

func appendPID(dst []byte, p gen.PID) []byte {
	dst = appendAtom(dst, p.Node)
	dst = binary.AppendUvarint(dst, p.ID)
	return binary.BigEndian.AppendUint64(dst, uint64(p.Creation))
}

// wireReader decodes the header fields of one frame.
type wireReader struct {
	src   []byte
	err   error
	atoms *intern.Table // the connection's names; nil interns nothing
}

func (r *wireReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("frame header: bad %s: %w", what, gen.ErrMalformed)
	}
}

func (r *wireReader) byte() byte {
	if r.err != nil || len(r.src) < 1 {
		r.fail("byte")
		return 0
	}
	b := r.src[0]
	r.src = r.src[1:]
	return b
}

func (r *wireReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.src)
	if n <= 0 {
		r.fail("varint")
		return 0
	}
	r.src = r.src[n:]
	return v
}

func (r *wireReader) uint64() uint64 {
	if r.err != nil || len(r.src) < 8 {
		r.fail("integer")
		return 0
	}
	v := binary.BigEndian.Uint64(r.src)
	r.src = r.src[8:]
	return v
}

func (r *wireReader) atom() gen.Atom {
	n := r.uvarint()
	if r.err != nil || n > maxNameBytes || n > uint64(len(r.src)) {
		r.fail("atom")
		return ""
	}
	a := r.atoms.Atom(r.src[:n])
	r.src = r.src[n:]
	return a
}

func (r *wireReader) pid() gen.PID {
	return gen.PID{Node: r.atom(), ID: r.uvarint(), Creation: int64(r.uint64())}
}

// The bounds of each connection's table of interned names and short
// strings (see node/internal/intern): enough for the nodes, registered
// processes and clusters that a peer running a thousand election clusters
// names (two names a cluster, in a table that keeps a set of four per
// eight slots with few conflicts), small enough that a peer sending endless
// new names costs little. The table starts at 1 KiB and grows only while
// new names keep coming.
const (
	internNames = 8192     // 128 KiB of slots at most
	internBytes = 64 << 10 // of names
)

// frameDecoder decodes the frames of one connection. It belongs to the
// connection's reader, and keeps what repeats from frame to frame: the
// names it has seen (headers and payloads share one bounded intern table)
// and the payload's last type.
type frameDecoder struct {
	atoms        *intern.Table
	payload      *codec.Decoder
	from, target pidCache // the last PIDs decoded in these fields
}

// pidCache remembers the last PID one header field held, with its
// encoding. A stream of frames names the same sender and target again and
// again, and a field whose bytes begin with that encoding holds that PID
// (decoding reads the same bytes the same way, and no further), so it
// costs one comparison instead of a parse and a name lookup.
type pidCache struct {
	enc []byte
	pid gen.PID
}

// read decodes a PID from r, through the cache.
func (c *pidCache) read(r *wireReader) gen.PID {
	if len(c.enc) > 0 && r.err == nil && bytes.HasPrefix(r.src, c.enc) {
		r.src = r.src[len(c.enc):]
		return c.pid
	}
	start := r.src
	p := r.pid()
	if r.err == nil {
		c.enc = append(c.enc[:0], start[:len(start)-len(r.src)]...)
		c.pid = p
	}
	return p
}

// newFrameDecoder returns the decoder of a connection between the nodes
// named local and peer, whose frames name them again and again.
func newFrameDecoder(reg *codec.Registry, local, peer gen.Atom) *frameDecoder {
	atoms := intern.New(internNames, internBytes)
	atoms.Pin(local, peer)
	return &frameDecoder{atoms: atoms, payload: reg.NewDecoder(atoms)}
}

// decode parses a frame payload into env, overwriting all of it. Errors
// wrap gen.ErrMalformed, or codec.ErrUnknownType when only the payload's
// type is unknown here; env then holds the valid header without its
// payload.
//
// The header is read into a local envelope, then copied into env field by
// field, leaving alone the names that have not changed: the reader reuses
// env, its frames name the same interned nodes again and again, and a
// pointer left as it was costs the garbage collector nothing, where one
// written again costs a write barrier while it marks.
func (fd *frameDecoder) decode(src []byte, env *envelope) error {
	r := wireReader{src: src, atoms: fd.atoms}
	h := envelope{kind: frameKind(r.byte()), flags: r.byte()}
	present := r.byte()
	if r.err == nil && (h.kind == 0 || h.kind >= kindMax) {
		r.err = fmt.Errorf("frame kind %d: %w", h.kind, gen.ErrMalformed)
	}
	if r.err == nil {
		if present&hasFrom != 0 {
			h.from = fd.from.read(&r)
		}
		if present&hasTo != 0 {
			h.to = r.pid()
		}
		switch {
		case present&hasTargetPID != 0:
			h.target = pidTarget(fd.target.read(&r))
		case present&hasTargetName != 0:
			h.target = target{name: r.atom(), node: r.atom()}
		}
		if present&hasRef != 0 {
			h.ref.Node = r.atom()
			h.ref.Creation = int64(r.uint64())
			for i := range h.ref.ID {
				h.ref.ID[i] = r.uvarint()
			}
		}
	}
	env.kind, env.flags = h.kind, h.flags
	setPID(&env.from, h.from)
	setPID(&env.to, h.to)
	setPID(&env.target.pid, h.target.pid)
	setAtom(&env.target.name, h.target.name)
	setAtom(&env.target.node, h.target.node)
	setAtom(&env.ref.Node, h.ref.Node)
	env.ref.Creation, env.ref.ID = h.ref.Creation, h.ref.ID
	env.payload = nil
	if r.err != nil {
		return r.err
	}
	if !env.kind.hasPayload() {
		if len(r.src) != 0 {
			return fmt.Errorf("frame kind %d: %d trailing bytes: %w", env.kind, len(r.src), gen.ErrMalformed)
		}
		return nil
	}
	v, err := fd.payload.Decode(r.src)
	if err != nil {
		return err // the header is valid: the caller may answer a request
	}
	env.payload = v
	return nil
}

// setAtom stores a in *dst unless *dst already holds it (see decode).
func setAtom(dst *gen.Atom, a gen.Atom) {
	if *dst != a { // the same interned string: equal pointers, no byte compared
		*dst = a
	}
}

func setPID(dst *gen.PID, p gen.PID) {
	setAtom(&dst.Node, p.Node)
	dst.ID, dst.Creation = p.ID, p.Creation
}
