package node

import (
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/codec"
	"github.com/regent-go/regent/node/internal/frame"
)

// MessageFrame is the wire form of a message from from to to carrying a
// string, as a peer would write it after the handshake.
func MessageFrame(from, to gen.PID, text string) ([]byte, error) {
	env := &envelope{kind: kindMessage, from: from, target: pidTarget(to), payload: text}
	payload, err := appendEnvelope(nil, env, codec.NewRegistry())
	if err != nil {
		return nil, err
	}
	return frame.Append(nil, payload), nil
}
