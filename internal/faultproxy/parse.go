package faultproxy

import (
	"bufio"
	"encoding/binary"
	"io"
)

// The handshake layout of node/internal/handshake: a hello is a fixed part
// (magic, version, challenge, creation, name length) and the name. The
// dialler follows its hello with its proof; the acceptor answers with a
// status byte (and, when it is 0, its own proof); the dialler ends with a
// status byte.
const (
	helloFixed   = 6 + 1 + 32 + 8 + 2
	helloNameLen = 6 + 1 + 32 + 8
	proofLen     = 32
	magic        = "REGENT"
	// maxFrame is the largest length the parser believes; a larger one
	// means the stream is not what it expects, and it falls back to raw.
	maxFrame = 64 << 20
	rawChunk = 32 << 10
)

type stage int

const (
	stageHello stage = iota
	stageProof       // the dialler's proof
	stageStatus
	stageFrames
	stageRaw
)

// parser splits one direction of a connection into units.
type parser struct {
	fromDialler bool
	stage       stage
}

// next reads the next unit; frame marks a frame after the handshake. On an
// error it returns whatever bytes it read, to forward them before the end.
func (p *parser) next(r *bufio.Reader) (data []byte, frame bool, err error) {
	switch p.stage {
	case stageHello:
		// Decide from the bytes at hand whether this is Regent's handshake,
		// so a short foreign stream is not held waiting for a full hello.
		if _, err := r.Peek(1); err != nil {
			return nil, false, err
		}
		seen, _ := r.Peek(min(r.Buffered(), len(magic)))
		if string(seen) != magic[:len(seen)] {
			p.stage = stageRaw
			return p.next(r)
		}
		head, err := readN(r, helloFixed)
		if err != nil || string(head[:len(magic)]) != magic {
			// Not Regent's handshake (or cut short): forward the rest raw.
			p.stage = stageRaw
			return head, false, err
		}
		tail, err := readN(r, int(binary.BigEndian.Uint16(head[helloNameLen:])))
		p.stage = stageStatus
		if p.fromDialler {
			p.stage = stageProof
		}
		return append(head, tail...), false, err
	case stageProof:
		p.stage = stageStatus
		proof, err := readN(r, proofLen)
		return proof, false, err
	case stageStatus:
		status, err := readN(r, 1)
		if err != nil || status[0] != 0 {
			p.stage = stageRaw
			return status, false, err
		}
		p.stage = stageFrames
		if !p.fromDialler {
			proof, err := readN(r, proofLen)
			return append(status, proof...), false, err
		}
		return status, false, nil
	case stageFrames:
		head, err := readN(r, 4)
		if err != nil {
			return head, false, err
		}
		n := binary.BigEndian.Uint32(head)
		if n > maxFrame {
			p.stage = stageRaw
			return head, false, nil
		}
		body, err := readN(r, int(n))
		return append(head, body...), err == nil, err
	}
	buf := make([]byte, rawChunk)
	n, err := r.Read(buf)
	return buf[:n], false, err
}

// readN reads exactly n bytes, returning those it got before an error.
func readN(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n)
	got, err := io.ReadFull(r, buf)
	return buf[:got], err
}
