package handshake

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/regent-go/regent/gen"
)

// Version is the protocol version this package speaks; it follows Magic on
// the wire. Version 2 made the dialler prove itself first.
const Version byte = 2

// Magic opens every hello, so a peer speaking anything else is rejected at once.
const Magic = "REGENT"

// ChallengeSize is the length of each side's random challenge, in bytes.
const ChallengeSize = 32

// ProofSize is the length of an HMAC-SHA256 proof, in bytes.
const ProofSize = sha256.Size

// DefaultMaxNameLength is the longest node name accepted when Config.MaxNameLength is zero.
const DefaultMaxNameLength = 255

// helloFixedSize is the length of a hello before the name: magic, version,
// challenge, creation and name length.
const helloFixedSize = len(Magic) + 1 + ChallengeSize + 8 + 2

// Status bytes: the acceptor's (message 4) and the dialler's (message 5).
const (
	statusOK           byte = 0x00
	statusBadProof     byte = 0x01
	statusNameMismatch byte = 0x02
	statusRefused      byte = 0x03
)

// ErrNameMismatch means the dialled node announced a name other than the one
// the dialler expected: the route points at the wrong node. It wraps
// gen.ErrNoRoute, so callers that only know gen's sentinels see "no route".
var ErrNameMismatch = fmt.Errorf("handshake: peer name is not the dialled name: %w", gen.ErrNoRoute)

// ErrRefused means the side that checked the other's proof refused the
// connection anyway, for a reason of its own (Config.Admit). It wraps
// gen.ErrNotAllowed.
var ErrRefused = fmt.Errorf("handshake: connection refused by the peer: %w", gen.ErrNotAllowed)

// ErrTruncated marks a stream that ended in the middle of a handshake
// message: the peer hung up, which says nothing wrong about what it sent,
// so it is not gen.ErrMalformed. It wraps io.ErrUnexpectedEOF.
var ErrTruncated = fmt.Errorf("handshake: the peer hung up mid-handshake: %w", io.ErrUnexpectedEOF)

// Identity is what a node announces about itself: its name and the creation
// of its current life, so a restarted node is told apart from the old one.
type Identity struct {
	Name     gen.Atom
	Creation int64
}

// Config is one side's handshake settings.
type Config struct {
	// Cookie is the shared secret; both sides must hold the same one. It
	// never crosses the wire. Empty is allowed (tests) and matches only
	// another empty cookie.
	Cookie string
	// Self is the identity this side announces. Self.Name must be non-empty
	// and no longer than the effective MaxNameLength.
	Self Identity
	// MaxNameLength caps the length in bytes of both this side's name and the
	// name the peer announces. Zero means DefaultMaxNameLength; at most 65535.
	MaxNameLength int
	// Admit, when set, is asked about a peer that has proved the cookie,
	// before this side proves itself (acceptor) or confirms (dialler). An
	// error refuses the connection: the peer is told so (ErrRefused) and
	// Dial or Accept returns the error.
	Admit func(peer Identity) error

	random io.Reader // source of challenges; nil means crypto/rand (tests replace it)
}

// Validate reports a configuration that cannot run a handshake, wrapping
// gen.ErrIncorrect.
func (c Config) Validate() error {
	if c.MaxNameLength < 0 || c.MaxNameLength > 0xFFFF {
		return fmt.Errorf("handshake: MaxNameLength %d is outside 0..65535: %w", c.MaxNameLength, gen.ErrIncorrect)
	}
	if c.Self.Name == "" {
		return fmt.Errorf("handshake: own node name is empty: %w", gen.ErrIncorrect)
	}
	if len(c.Self.Name) > c.maxName() {
		return fmt.Errorf("handshake: own node name is %d bytes, longer than %d: %w",
			len(c.Self.Name), c.maxName(), gen.ErrIncorrect)
	}
	return nil
}

func (c Config) maxName() int {
	if c.MaxNameLength == 0 {
		return DefaultMaxNameLength
	}
	return c.MaxNameLength
}

// hello is one side's first message, decoded.
type hello struct {
	challenge [ChallengeSize]byte
	id        Identity
}

// Dial runs the dialling side of the handshake over conn and returns the
// peer's identity. expect is the name of the node being dialled: a peer that
// proves the cookie but announces another name gives an error wrapping
// ErrNameMismatch (and gen.ErrNoRoute). A wrong cookie on either side gives an
// error wrapping gen.ErrUnauthorized; bytes that are not this protocol give
// gen.ErrMalformed; another protocol version gives gen.ErrUnsupported; an
// acceptor that refuses us after our proof gives ErrRefused. The caller sets
// deadlines on conn and closes it after a failure.
func Dial(conn io.ReadWriter, cfg Config, expect gen.Atom) (Identity, error) {
	if err := cfg.Validate(); err != nil {
		return Identity{}, err
	}
	own, err := newHello(cfg)
	if err != nil {
		return Identity{}, err
	}
	if err := write(conn, "hello", own.append(nil)); err != nil {
		return Identity{}, err
	}
	peer, err := readHello(conn, cfg.maxName())
	if err != nil {
		return Identity{}, err
	}
	t := transcript{dial: own, accept: peer}
	if err := write(conn, "proof", t.proof(cfg.Cookie, roleDial)); err != nil {
		return Identity{}, err
	}
	if err := readVerdict(conn, peer.id.Name, cfg.Self.Name, roleAccept); err != nil {
		return Identity{}, err
	}
	var peerProof [ProofSize]byte
	if _, err := io.ReadFull(conn, peerProof[:]); err != nil {
		return Identity{}, readError("acceptor's proof", err)
	}
	if err := t.check(conn, cfg.Cookie, roleAccept, peerProof[:]); err != nil {
		return Identity{}, err
	}
	if peer.id.Name != expect {
		return Identity{}, refuse(conn, statusNameMismatch,
			fmt.Errorf("handshake: dialled %s but the peer is %s: %w", expect, peer.id.Name, ErrNameMismatch))
	}
	if err := cfg.admit(conn, peer.id); err != nil {
		return Identity{}, err
	}
	if err := write(conn, "verdict", []byte{statusOK}); err != nil {
		return Identity{}, err
	}
	return peer.id, nil
}

// Accept runs the accepting side of the handshake over conn and returns the
// peer's identity. Nothing this side sends before the dialler has proved
// the cookie depends on the cookie. The errors are those of Dial; a dialler
// that refuses this side's name gives an error wrapping ErrNameMismatch. The
// caller sets deadlines on conn and closes it after a failure.
func Accept(conn io.ReadWriter, cfg Config) (Identity, error) {
	if err := cfg.Validate(); err != nil {
		return Identity{}, err
	}
	peer, err := readHello(conn, cfg.maxName())
	if err != nil {
		return Identity{}, err
	}
	own, err := newHello(cfg)
	if err != nil {
		return Identity{}, err
	}
	if err := write(conn, "hello", own.append(nil)); err != nil {
		return Identity{}, err
	}
	var peerProof [ProofSize]byte
	if _, err := io.ReadFull(conn, peerProof[:]); err != nil {
		return Identity{}, readError("dialler's proof", err)
	}
	t := transcript{dial: peer, accept: own}
	if err := t.check(conn, cfg.Cookie, roleDial, peerProof[:]); err != nil {
		return Identity{}, err
	}
	if err := cfg.admit(conn, peer.id); err != nil {
		return Identity{}, err
	}
	if err := write(conn, "proof", append([]byte{statusOK}, t.proof(cfg.Cookie, roleAccept)...)); err != nil {
		return Identity{}, err
	}
	if err := readVerdict(conn, peer.id.Name, cfg.Self.Name, roleDial); err != nil {
		return Identity{}, err
	}
	return peer.id, nil
}

// readVerdict reads the status byte the peer, speaking for role from, sent
// after checking this side's proof or the route, and turns a refusal into
// the error this side returns. Only a dialler refuses the acceptor's name.
func readVerdict(r io.Reader, peer, self gen.Atom, from role) error {
	status, err := readStatus(r, string(from)+" side's verdict")
	if err != nil {
		return err
	}
	switch {
	case status == statusOK:
		return nil
	case status == statusBadProof:
		return fmt.Errorf("handshake: %s refused our proof (wrong cookie?): %w", peer, gen.ErrUnauthorized)
	case status == statusRefused:
		return fmt.Errorf("handshake: %s: %w", peer, ErrRefused)
	case status == statusNameMismatch && from == roleDial:
		return fmt.Errorf("handshake: %s dialled another node than %s: %w", peer, self, ErrNameMismatch)
	}
	return fmt.Errorf("handshake: the %s side sent unknown status 0x%02x: %w", from, status, gen.ErrMalformed)
}

// admit asks cfg.Admit about an authenticated peer and, on refusal, tells
// the peer before returning the refusal.
func (c Config) admit(conn io.Writer, peer Identity) error {
	if c.Admit == nil {
		return nil
	}
	if err := c.Admit(peer); err != nil {
		return refuse(conn, statusRefused, fmt.Errorf("handshake: refusing %s: %w", peer.Name, err))
	}
	return nil
}

// check verifies the peer's proof, made for role r, and on failure tells
// the peer so before returning an error wrapping gen.ErrUnauthorized. A peer
// that echoed this side's challenge fails too.
func (t transcript) check(conn io.Writer, cookie string, r role, proof []byte) error {
	peer := t.dial
	if r == roleAccept {
		peer = t.accept
	}
	if t.dial.challenge != t.accept.challenge && hmac.Equal(proof, t.proof(cookie, r)) {
		return nil
	}
	return refuse(conn, statusBadProof,
		fmt.Errorf("handshake: %s did not prove the cookie (wrong cookie?): %w", peer.id.Name, gen.ErrUnauthorized))
}

// refuse tells the peer why the handshake ends, so it can report the reason
// rather than a closed connection, and returns cause (joined with any write
// failure).
func refuse(conn io.Writer, status byte, cause error) error {
	if err := write(conn, "refusal", []byte{status}); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

func newHello(cfg Config) (hello, error) {
	h := hello{id: cfg.Self}
	random := cfg.random
	if random == nil {
		random = rand.Reader
	}
	if _, err := io.ReadFull(random, h.challenge[:]); err != nil {
		return hello{}, fmt.Errorf("handshake: drawing a challenge: %w", err)
	}
	return h, nil
}

// append encodes the hello as documented in doc.go.
func (h hello) append(dst []byte) []byte {
	dst = append(dst, Magic...)
	dst = append(dst, Version)
	dst = append(dst, h.challenge[:]...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.id.Creation))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.id.Name)))
	return append(dst, h.id.Name...)
}

// readHello reads and checks one hello, refusing garbage before reading
// anything past the fixed part and any name longer than maxName.
func readHello(r io.Reader, maxName int) (hello, error) {
	var fixed [helloFixedSize]byte
	magic := fixed[:len(Magic)+1]
	if _, err := io.ReadFull(r, magic); err != nil {
		return hello{}, readError("hello", err)
	}
	if !bytes.Equal(magic[:len(Magic)], []byte(Magic)) {
		return hello{}, fmt.Errorf("handshake: peer does not speak the Regent protocol (starts %q): %w",
			magic, gen.ErrMalformed)
	}
	if v := magic[len(Magic)]; v != Version {
		return hello{}, fmt.Errorf("handshake: peer speaks protocol version %d, this node %d: %w",
			v, Version, gen.ErrUnsupported)
	}
	if _, err := io.ReadFull(r, fixed[len(magic):]); err != nil {
		return hello{}, readError("hello", err)
	}
	var h hello
	rest := fixed[len(magic):]
	copy(h.challenge[:], rest)
	rest = rest[ChallengeSize:]
	h.id.Creation = int64(binary.BigEndian.Uint64(rest))
	n := int(binary.BigEndian.Uint16(rest[8:]))
	if n == 0 || n > maxName {
		return hello{}, fmt.Errorf("handshake: peer name length %d is outside 1..%d: %w", n, maxName, gen.ErrMalformed)
	}
	name := make([]byte, n)
	if _, err := io.ReadFull(r, name); err != nil {
		return hello{}, readError("peer name", err)
	}
	h.id.Name = gen.Atom(name)
	return h, nil
}

func readStatus(r io.Reader, what string) (byte, error) {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, readError(what, err)
	}
	return b[0], nil
}

func write(w io.Writer, what string, msg []byte) error {
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("handshake: sending %s: %w", what, err)
	}
	return nil
}

// readError reports a stream that ended mid-message as malformed and wraps
// any other read failure (a deadline, a reset) as it is.
func readError(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("handshake: reading %s: %w", what, ErrTruncated)
	}
	return fmt.Errorf("handshake: reading %s: %w", what, err)
}

// role names which side a proof speaks for; it is bound into the MAC so a
// proof made by one side can never pass for the other's.
type role string

const (
	roleDial   role = "dial"
	roleAccept role = "accept"
)

// transcript is everything both sides announced; each proof covers all of it.
type transcript struct {
	dial, accept hello
}

// proof computes HMAC-SHA256 keyed by the cookie over the domain label, the
// role, both challenges and both identities, each field length-prefixed or
// fixed-size so that no two transcripts encode alike.
func (t transcript) proof(cookie string, r role) []byte {
	m := hmac.New(sha256.New, []byte(cookie))
	var buf []byte
	buf = append(buf, "regent handshake v2"...)
	buf = append(buf, byte(len(r)))
	buf = append(buf, r...)
	buf = append(buf, t.dial.challenge[:]...)
	buf = append(buf, t.accept.challenge[:]...)
	for _, id := range []Identity{t.dial.id, t.accept.id} {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(id.Name)))
		buf = append(buf, id.Name...)
		buf = binary.BigEndian.AppendUint64(buf, uint64(id.Creation))
	}
	m.Write(buf) // hash.Hash.Write never returns an error
	return m.Sum(nil)
}
