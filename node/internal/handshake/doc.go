// Package handshake authenticates a new connection between two nodes with a
// shared cookie that never crosses the wire.
//
// Each side sends a fresh 32-byte random challenge (crypto/rand) with its
// identity (node name and creation). The dialler then proves it knows the
// cookie with an HMAC-SHA256, keyed by the cookie, over a transcript that
// binds its role ("dial" or "accept"), both challenges and both identities;
// only after checking that proof does the acceptor send its own. Because
// every proof covers the other side's fresh challenge and names its own
// role, a captured proof cannot be replayed on a later connection nor
// reflected back at the node that made it. Proofs are compared with
// hmac.Equal. The side that finds a wrong proof says so with a status byte
// before returning, so both sides report gen.ErrUnauthorized rather than one
// of them seeing a closed connection.
//
// Why the dialler proves first: whoever sends a proof first hands the other
// party a value it can test cookie guesses against offline. The acceptor
// answers anyone who can reach its port, so it must not be the one: an
// unauthenticated client learns the acceptor's hello (random challenge,
// name, creation) and, after a wrong proof, one status byte, none of which
// depends on the cookie. The dialler only talks to addresses its own routes
// name, so obtaining its proof takes control of a route, of name
// resolution, or of the path (see Callers must know, 3).
//
// Wire layout, all integers big-endian:
//
//	Message 1, dialler -> acceptor: hello
//	  offset 0   6 bytes   magic "REGENT"
//	  offset 6   1 byte    version, 2
//	  offset 7   32 bytes  dialler's challenge
//	  offset 39  8 bytes   creation, int64 two's complement
//	  offset 47  2 bytes   name length N, 1..MaxNameLength
//	  offset 49  N bytes   node name
//	Message 2, acceptor -> dialler: the acceptor's hello (same layout)
//	Message 3, dialler -> acceptor: 32 bytes: proof_dial
//	Message 4, acceptor -> dialler: 1 status byte
//	  0x00 proof_dial is right, followed by 32 bytes: proof_accept
//	  0x01 proof_dial was wrong (wrong cookie); the handshake ends
//	  0x03 refused by the acceptor's Admit; the handshake ends
//	Message 5, dialler -> acceptor: 1 status byte
//	  0x00 accepted: the connection is established
//	  0x01 proof_accept was wrong (wrong cookie); the handshake ends
//	  0x02 the acceptor's name is not the dialled name; the handshake ends
//	  0x03 refused by the dialler's Admit; the handshake ends
//
//	proof_role = HMAC-SHA256(key = cookie, message =
//	  "regent handshake v2" || len(role) (1 byte) || role ("dial" or "accept") ||
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
//  3. Only the dialler's proof can be tested offline, and only by the party
//     it dials: a node that a route, a name lookup or the path sends the
//     dialler to. Use a long random cookie, and TLS with server
//     verification (gen.NetworkOptions.TLS), which checks the acceptor's
//     certificate before any proof is sent.
//  4. The handshake authenticates; it does not encrypt or protect the frames
//     that follow. Use TLS (gen.NetworkOptions.TLS) where the network is not
//     trusted.
//  5. Dial and Accept read exactly the handshake's bytes and no more, so
//     after success the same connection can be wrapped in a frame.Reader
//     without losing data the peer sent right after the handshake.
//  6. Dial and Accept return the peer's Identity only on success; deciding
//     what to do about a second connection from the same name, or a new
//     creation, is the caller's job (Config.Admit lets it refuse such a
//     peer inside the handshake, so the peer learns why).
package handshake
