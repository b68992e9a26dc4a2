package handshake

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/regent-go/regent/gen"
)

// FuzzAccept feeds arbitrary dialler bytes to Accept: it must never panic,
// never succeed without the cookie, and fail with one of the documented errors.
func FuzzAccept(f *testing.F) {
	valid, err := newHello(alpha)
	if err != nil {
		f.Fatal(err)
	}
	good := valid.append(nil)
	f.Add(good)
	f.Add(append(append([]byte{}, good...), statusOK))
	f.Add(append(append(append([]byte{}, good...), statusOK), make([]byte, ProofSize)...))
	f.Add(append(append([]byte{}, good...), statusBadProof))
	f.Add(append(append([]byte{}, good...), statusNameMismatch))
	f.Add(append(append([]byte{}, good...), 0x7f))
	f.Add([]byte(Magic))
	f.Add(append([]byte(Magic), 2))
	f.Add(helloWithNameLength(0xFFFF))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		conn := &struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(data), io.Discard}
		id, err := Accept(conn, cfg(beta, "secret"))
		if err == nil {
			t.Fatalf("Accept succeeded without the cookie, peer %+v", id)
		}
		known := []error{gen.ErrMalformed, gen.ErrUnauthorized, gen.ErrUnsupported, ErrNameMismatch}
		for _, k := range known {
			if errors.Is(err, k) {
				return
			}
		}
		t.Fatalf("undocumented error: %v", err)
	})
}
