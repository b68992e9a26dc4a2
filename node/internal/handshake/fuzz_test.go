package handshake

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/fuzzdrive"
)

// documented reports an error that none of the package's documented
// sentinels explains.
func documented(err error) error {
	for _, k := range []error{gen.ErrMalformed, ErrTruncated, gen.ErrUnauthorized, gen.ErrUnsupported, ErrNameMismatch, ErrRefused} {
		if errors.Is(err, k) {
			return nil
		}
	}
	return fmt.Errorf("undocumented error: %w", err)
}

// peerBytes is a connection whose peer sent data and reads nothing.
func peerBytes(data []byte) io.ReadWriter {
	return &struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(data), io.Discard}
}

// acceptRefusesHostileDialler is FuzzAccept's property: whatever a dialler
// sends, Accept never panics, never succeeds without the cookie, and fails
// with one of the documented errors.
func acceptRefusesHostileDialler(data []byte) error {
	id, err := Accept(peerBytes(data), cfg(beta, "secret"))
	if err == nil {
		return fmt.Errorf("Accept succeeded without the cookie, peer %+v", id)
	}
	return documented(err)
}

// dialRefusesHostileAcceptor is FuzzDial's property: whatever an acceptor
// answers, Dial never panics, never succeeds without the cookie, and fails
// with one of the documented errors.
func dialRefusesHostileAcceptor(data []byte) error {
	id, err := Dial(peerBytes(data), cfg(alpha, "secret"), beta.Name)
	if err == nil {
		return fmt.Errorf("Dial succeeded without the cookie, peer %+v", id)
	}
	return documented(err)
}

// hostileSeeds are a valid hello from who, followed by each continuation a
// peer could send next, and a few strangers.
func hostileSeeds(tb testing.TB, who Identity) [][]byte {
	valid, err := newHello(cfg(who, ""))
	if err != nil {
		tb.Fatal(err)
	}
	good := valid.append(nil)
	then := func(tail ...byte) []byte { return append(append([]byte{}, good...), tail...) }
	proof := make([]byte, ProofSize)
	return [][]byte{
		good,
		then(proof...),
		then(append([]byte{statusOK}, proof...)...),
		then(append(append([]byte{statusOK}, proof...), statusOK)...),
		then(statusBadProof),
		then(statusNameMismatch),
		then(statusRefused),
		then(0x7f),
		[]byte(Magic),
		append([]byte(Magic), 1),
		helloWithNameLength(0xFFFF),
		{},
	}
}

func FuzzAccept(f *testing.F) {
	fuzzdrive.Fuzz(f, hostileSeeds(f, alpha), acceptRefusesHostileDialler)
}

func FuzzDial(f *testing.F) {
	fuzzdrive.Fuzz(f, hostileSeeds(f, beta), dialRefusesHostileAcceptor)
}

func TestRandomizedHostileAcceptorsNeverPassTheDialler(t *testing.T) {
	fuzzdrive.Run(t, hostileSeeds(t, beta), dialRefusesHostileAcceptor)
}
