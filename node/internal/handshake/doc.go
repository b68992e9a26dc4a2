// Package handshake authenticates a new connection between two nodes with a
// shared cookie that never crosses the wire.
//
// Each side sends a fresh 32-byte random challenge (crypto/rand) with its
// identity (node name and creation), then proves it knows the cookie with an
// HMAC-SHA256, keyed by the cookie, over a transcript that binds its role
// ("dial" or "accept"), both challenges and both identities. Because every
// proof covers the other side's fresh challenge and names its own role, a
// captured proof cannot be replayed on a later connection nor reflected back
// at the node that made it. Proofs are compared with hmac.Equal. The side that
// finds a wrong proof says so with a final status byte before returning, so
// both sides report gen.ErrUnauthorized rather than one of them seeing a
// closed connection.
//
// Wire layout, all integers big-endian:
//
//	Message 1, dialler -> acceptor: hello
//	  offset 0   6 bytes   magic "REGENT"
//	  offset 6   1 byte    version, 1
//	  offset 7   32 bytes  dialler's challenge
//	  offset 39  8 bytes   creation, int64 two's complement
//	  offset 47  2 bytes   name length N, 1..MaxNameLength
//	  offset 49  N bytes   node name
//	Message 2, acceptor -> dialler: the acceptor's hello (same layout)
//	  followed by 32 bytes: proof_accept
//	Message 3, dialler -> acceptor: 1 status byte
//	  0x00 accepted, followed by 32 bytes: proof_dial
//	  0x01 proof_accept was wrong (wrong cookie); the handshake ends
//	  0x02 the acceptor's name is not the dialled name; the handshake ends
//	Message 4, acceptor -> dialler: 1 status byte
//	  0x00 accepted: the connection is established
//	  0x01 proof_dial was wrong (wrong cookie)
//
//	proof_role = HMAC-SHA256(key = cookie, message =
//	  "regent handshake v1" || len(role) (1 byte) || role ("dial" or "accept") ||
//	  dialler's challenge || acceptor's challenge ||
//	  len(dialler name) (2 bytes) || dialler name || dialler creation (8 bytes) ||
//	  len(acceptor name) (2 bytes) || acceptor name || acceptor creation (8 bytes))
//
// A stream that does not start with the magic is refused with gen.ErrMalformed
// after reading those 7 bytes; a known magic with another version byte gives
// gen.ErrUnsupported. No length read from the peer allocates more than
// MaxNameLength bytes.
//
// A dialler that reaches a node announcing a name other than the one it
// dialled gets ErrNameMismatch, which wraps gen.ErrNoRoute rather than
// gen.ErrUnauthorized: the peer did prove the cookie, so the fault is the
// route (the address reaches the wrong node), not the credentials. The name
// is checked only after the peer's proof, so an unauthenticated peer always
// gets gen.ErrUnauthorized.
//
// Callers must know:
//  1. Set a deadline on the connection before calling Dial or Accept, and
//     clear it after: this package does no timing of its own, and a silent
//     peer otherwise blocks it forever.
//  2. After any error, close the connection; its stream position is unknown.
//  3. The acceptor proves itself first, to a dialler not yet authenticated,
//     so anyone who can connect obtains one HMAC over data it knows and can
//     try to guess the cookie offline. Use a long random cookie; a short or
//     dictionary cookie offers no protection against such guessing.
//  4. The handshake authenticates; it does not encrypt or protect the frames
//     that follow. Use TLS (gen.NetworkOptions.TLS) where the network is not
//     trusted.
//  5. Dial and Accept read exactly the handshake's bytes and no more, so
//     after success the same connection can be wrapped in a frame.Reader
//     without losing data the peer sent right after the handshake.
//  6. Dial and Accept return the peer's Identity only on success; deciding
//     what to do about a second connection from the same name, or a new
//     creation, is the caller's job.
package handshake
