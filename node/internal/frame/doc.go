// Package frame splits a byte stream into length-prefixed frames.
//
// A frame is a 4-byte big-endian payload length followed by that many bytes
// of payload. The writer side is a single function, Append, that adds one
// frame to a caller-owned buffer, so a connection can batch several frames
// into one write. The reader side, Reader, reads frames one at a time from a
// buffered stream, reusing one payload buffer, and refuses a frame longer than
// its cap before reading or allocating the payload. The buffer grows as the
// payload's bytes arrive (doubling, from 64 KiB), never on the word of a
// header alone: a peer that announces a large frame and sends little of it
// makes the Reader allocate about twice what it sent, not what it announced.
//
// Callers must know:
//  1. The slice Reader.Next returns is overwritten by the following call;
//     copy it or finish with it first.
//  2. A Reader error other than io.EOF leaves the stream at an unknown
//     position: close the connection. An error wrapping gen.ErrTooLarge means
//     the peer announced an oversized frame; one wrapping gen.ErrMalformed
//     means the stream ended inside a frame.
//  3. Append does not check the payload against any cap; the sender must keep
//     payloads within the cap its peer enforces (and below 4 GiB).
//  4. A Reader is not safe for concurrent use; one goroutine owns it.
package frame
