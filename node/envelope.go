package node

import (
	"github.com/regent-go/regent/gen"
)

// frameKind is the first byte of every frame after the handshake.
type frameKind uint8

const (
	kindKeepalive frameKind = iota + 1
	kindMessage             // from, target, payload: the message
	kindRequest             // from, target, ref, payload: the request
	kindResponse            // target (the caller), ref, payload: value, or error with flagError
	kindExit                // from, target PID, payload: the reason
	kindWatch               // from (watcher), target, flags: relKind; an unknown target is answered by kindDown
	kindUnwatch             // from (watcher), target, flags: relKind
	kindDown                // target (what ended), to (watcher), flags: relKind, payload: the reason
	kindInspect             // from, target PID, ref, payload: []string items
	kindRetire              // the sender replaced this connection with another to the same node
	kindMax
)

// flagError marks a response whose payload is an error.
const flagError uint8 = 1

// envelope is one remote operation: the fixed header fields plus the payload
// that the codec encodes.
type envelope struct {
	kind    frameKind
	flags   uint8
	from    gen.PID
	to      gen.PID // the watcher, for kindDown
	target  target  // a process (never a node); the caller's PID for kindResponse
	ref     gen.Ref
	payload any
}
