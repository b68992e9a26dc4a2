package handshake

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// deadline bounds every test conversation so a bug shows up as a failure,
// not a hung test; it is generous for a loaded machine.
const deadline = 20 * time.Second

var (
	alpha = Identity{Name: "alpha@localhost", Creation: 1001}
	beta  = Identity{Name: "beta@localhost", Creation: -7}
)

func cfg(self Identity, cookie string) Config {
	return Config{Cookie: cookie, Self: self}
}

type outcome struct {
	id  Identity
	err error
}

// runPair runs Dial on one end of conns and Accept on the other, concurrently,
// and returns both outcomes. It closes both ends when a side fails, as a
// caller would, so the other side is never left blocked.
func runPair(t *testing.T, dialer, acceptor net.Conn, dc, ac Config, expect gen.Atom) (dial, accept outcome) {
	t.Helper()
	require.NoError(t, dialer.SetDeadline(time.Now().Add(deadline)))
	require.NoError(t, acceptor.SetDeadline(time.Now().Add(deadline)))
	done := make(chan outcome, 1)
	go func() {
		id, err := Dial(dialer, dc, expect)
		if err != nil {
			dialer.Close()
		}
		done <- outcome{id, err}
	}()
	id, err := Accept(acceptor, ac)
	if err != nil {
		acceptor.Close()
	}
	accept = outcome{id, err}
	dial = <-done
	dialer.Close()
	acceptor.Close()
	return dial, accept
}

func pipePair(t *testing.T, dc, ac Config, expect gen.Atom) (dial, accept outcome) {
	d, a := net.Pipe()
	return runPair(t, d, a, dc, ac, expect)
}

func tcpPair(t *testing.T, dc, ac Config, expect gen.Atom) (dial, accept outcome) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	a, ok := <-accepted
	require.True(t, ok, "listener accepted the connection")
	return runPair(t, d, a, dc, ac, expect)
}

func TestHandshakeSucceeds(t *testing.T) {
	transports := []struct {
		name string
		run  func(*testing.T, Config, Config, gen.Atom) (outcome, outcome)
	}{
		{"net.Pipe", pipePair},
		{"loopback TCP", tcpPair},
	}
	for _, tr := range transports {
		t.Run("over "+tr.name+" each side learns the other's identity", func(t *testing.T) {
			d, a := tr.run(t, cfg(alpha, "secret"), cfg(beta, "secret"), beta.Name)
			require.NoError(t, d.err)
			require.NoError(t, a.err)
			assert.Equal(t, beta, d.id)
			assert.Equal(t, alpha, a.id)
		})
		t.Run("over "+tr.name+" the roles can be swapped", func(t *testing.T) {
			d, a := tr.run(t, cfg(beta, "secret"), cfg(alpha, "secret"), alpha.Name)
			require.NoError(t, d.err)
			require.NoError(t, a.err)
			assert.Equal(t, alpha, d.id)
			assert.Equal(t, beta, a.id)
		})
	}

	t.Run("an empty cookie on both sides is accepted", func(t *testing.T) {
		d, a := pipePair(t, cfg(alpha, ""), cfg(beta, ""), beta.Name)
		require.NoError(t, d.err)
		require.NoError(t, a.err)
	})

	t.Run("a name of exactly MaxNameLength bytes is accepted", func(t *testing.T) {
		long := Identity{Name: gen.Atom(bytes.Repeat([]byte{'n'}, DefaultMaxNameLength)), Creation: 3}
		d, a := pipePair(t, cfg(long, "c"), cfg(beta, "c"), beta.Name)
		require.NoError(t, d.err)
		require.NoError(t, a.err)
		assert.Equal(t, long, a.id)
	})
}

func TestWrongCookieIsRefusedOnBothSides(t *testing.T) {
	for _, tr := range []struct {
		name string
		run  func(*testing.T, Config, Config, gen.Atom) (outcome, outcome)
	}{{"net.Pipe", pipePair}, {"loopback TCP", tcpPair}} {
		t.Run("over "+tr.name+" both sides report unauthorized", func(t *testing.T) {
			d, a := tr.run(t, cfg(alpha, "one"), cfg(beta, "two"), beta.Name)
			require.ErrorIs(t, d.err, gen.ErrUnauthorized)
			require.ErrorIs(t, a.err, gen.ErrUnauthorized)
			assert.NotErrorIs(t, d.err, gen.ErrMalformed, "the dialler learns the reason, not a closed stream")
			assert.NotErrorIs(t, a.err, gen.ErrMalformed, "the acceptor learns the reason, not a closed stream")
			assert.Equal(t, Identity{}, d.id)
			assert.Equal(t, Identity{}, a.id)
		})
	}

	t.Run("the cookie never appears on the wire", func(t *testing.T) {
		cookie := "a-very-distinctive-cookie"
		d, a := net.Pipe()
		rec := &recorder{Conn: d}
		dOut, aOut := runPair(t, rec, a, cfg(alpha, cookie), cfg(beta, cookie), beta.Name)
		require.NoError(t, dOut.err)
		require.NoError(t, aOut.err)
		assert.NotContains(t, string(rec.written)+string(rec.read), cookie)
	})
}

func TestNameMismatchOnDial(t *testing.T) {
	d, a := pipePair(t, cfg(alpha, "secret"), cfg(beta, "secret"), "gamma@localhost")

	t.Run("the dialler refuses a peer with another name as no route", func(t *testing.T) {
		require.ErrorIs(t, d.err, ErrNameMismatch)
		assert.ErrorIs(t, d.err, gen.ErrNoRoute)
		assert.NotErrorIs(t, d.err, gen.ErrUnauthorized)
	})
	t.Run("the acceptor is told it was not the node dialled", func(t *testing.T) {
		require.ErrorIs(t, a.err, ErrNameMismatch)
		assert.Equal(t, Identity{}, a.id)
	})

	t.Run("a wrong cookie is reported before a wrong name", func(t *testing.T) {
		d, a := pipePair(t, cfg(alpha, "one"), cfg(beta, "two"), "gamma@localhost")
		require.ErrorIs(t, d.err, gen.ErrUnauthorized)
		require.ErrorIs(t, a.err, gen.ErrUnauthorized)
	})
}

// attacker drives the dialling side by hand over a pipe to a real Accept.
type attacker struct {
	conn   net.Conn
	result chan outcome
}

func startAccept(t *testing.T, ac Config) *attacker {
	t.Helper()
	d, a := net.Pipe()
	return startAcceptOver(t, d, a, ac)
}

// startAcceptTCP is startAccept over loopback TCP, whose client can close
// its writing half and still read.
func startAcceptTCP(t *testing.T, ac Config) *attacker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	d, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	a, err := ln.Accept()
	require.NoError(t, err)
	return startAcceptOver(t, d, a, ac)
}

func startAcceptOver(t *testing.T, d, a net.Conn, ac Config) *attacker {
	t.Helper()
	require.NoError(t, d.SetDeadline(time.Now().Add(deadline)))
	require.NoError(t, a.SetDeadline(time.Now().Add(deadline)))
	at := &attacker{conn: d, result: make(chan outcome, 1)}
	go func() {
		id, err := Accept(a, ac)
		a.Close()
		at.result <- outcome{id, err}
	}()
	t.Cleanup(func() { d.Close() })
	return at
}

// exchangeHellos sends a fresh hello as alpha and reads message 2, the
// acceptor's hello.
func (at *attacker) exchangeHellos(t *testing.T) (own, peer hello) {
	t.Helper()
	own, err := newHello(cfg(alpha, ""))
	require.NoError(t, err)
	at.write(t, own.append(nil))
	peer, err = readHello(at.conn, DefaultMaxNameLength)
	require.NoError(t, err)
	return own, peer
}

func (at *attacker) write(t *testing.T, b []byte) {
	t.Helper()
	_, err := at.conn.Write(b)
	require.NoError(t, err)
}

func (at *attacker) verdict(t *testing.T) byte {
	t.Helper()
	status, err := readStatus(at.conn, "verdict")
	require.NoError(t, err)
	return status
}

func (at *attacker) finish(t *testing.T) outcome {
	t.Helper()
	at.conn.Close()
	return <-at.result
}

// fixedRandom is a challenge source that always draws the same bytes.
type fixedRandom byte

func (f fixedRandom) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

func TestAnUnauthenticatedDiallerLearnsNothingThatDependsOnTheCookie(t *testing.T) {
	// Acceptors that differ only in their cookie, drawing the same
	// challenge, face the same scripted client: if anything they sent
	// depended on the cookie, the bytes the client received would differ.
	received := func(t *testing.T, cookie string, script func(at *attacker)) []byte {
		t.Helper()
		ac := cfg(beta, cookie)
		ac.random = fixedRandom(7)
		at := startAcceptTCP(t, ac)
		dc := cfg(alpha, "")
		dc.random = fixedRandom(9)
		own, err := newHello(dc)
		require.NoError(t, err)
		go func() {
			_, _ = at.conn.Write(own.append(nil))
			script(at)
		}()
		got, _ := io.ReadAll(at.conn)
		out := <-at.result
		require.Error(t, out.err, "the acceptor never accepts a client without the cookie")
		return got
	}
	helloLen := helloFixedSize + len(beta.Name)
	scripts := []struct {
		name   string
		script func(at *attacker)
		want   int
	}{
		{"a client that sends its hello and hangs up gets the acceptor's hello only", func(at *attacker) {
			_ = at.conn.(*net.TCPConn).CloseWrite()
		}, helloLen},
		{"a client that sends a guessed proof gets the hello and one refusal byte", func(at *attacker) {
			_, _ = at.conn.Write(make([]byte, ProofSize))
		}, helloLen + 1},
	}
	for _, sc := range scripts {
		t.Run(sc.name, func(t *testing.T) {
			one := received(t, "the first secret", sc.script)
			two := received(t, "another secret entirely", sc.script)
			require.Equal(t, one, two, "what the acceptor sent depends on its cookie")
			require.Len(t, one, sc.want)
		})
	}
}

func TestProofsCannotBeReusedWithoutTheCookie(t *testing.T) {
	t.Run("a dialler's proof captured from an earlier connection is refused", func(t *testing.T) {
		d, a := net.Pipe()
		rec := &recorder{Conn: d}
		dOut, aOut := runPair(t, rec, a, cfg(alpha, "secret"), cfg(beta, "secret"), beta.Name)
		require.NoError(t, dOut.err)
		require.NoError(t, aOut.err)
		helloLen := helloFixedSize + len(alpha.Name)
		require.Len(t, rec.written, helloLen+ProofSize+1)

		at := startAccept(t, cfg(beta, "secret"))
		at.write(t, rec.written[:helloLen])
		_, err := readHello(at.conn, DefaultMaxNameLength)
		require.NoError(t, err)
		at.write(t, rec.written[helloLen:helloLen+ProofSize])
		assert.Equal(t, statusBadProof, at.verdict(t))
		require.ErrorIs(t, at.finish(t).err, gen.ErrUnauthorized)
	})

	t.Run("a proof made for the other role over the same transcript is refused", func(t *testing.T) {
		at := startAccept(t, cfg(beta, "secret"))
		h, peer := at.exchangeHellos(t)
		at.write(t, transcript{dial: h, accept: peer}.proof("secret", roleAccept))
		assert.Equal(t, statusBadProof, at.verdict(t))
		require.ErrorIs(t, at.finish(t).err, gen.ErrUnauthorized)
	})

	t.Run("a correct proof is accepted by the same script", func(t *testing.T) {
		at := startAccept(t, cfg(beta, "secret"))
		h, peer := at.exchangeHellos(t)
		tr := transcript{dial: h, accept: peer}
		at.write(t, tr.proof("secret", roleDial))
		assert.Equal(t, statusOK, at.verdict(t))
		proof := make([]byte, ProofSize)
		_, err := io.ReadFull(at.conn, proof)
		require.NoError(t, err)
		assert.Equal(t, tr.proof("secret", roleAccept), proof)
		at.write(t, []byte{statusOK})
		out := at.finish(t)
		require.NoError(t, out.err)
		assert.Equal(t, alpha, out.id)
	})

	t.Run("a dialler refuses an acceptor that echoes its hello and its proof", func(t *testing.T) {
		d, a := net.Pipe()
		require.NoError(t, d.SetDeadline(time.Now().Add(deadline)))
		require.NoError(t, a.SetDeadline(time.Now().Add(deadline)))
		defer a.Close()
		done := make(chan outcome, 1)
		go func() {
			id, err := Dial(d, cfg(alpha, "secret"), alpha.Name)
			d.Close()
			done <- outcome{id, err}
		}()
		// Without the cookie the rogue acceptor can only reflect what the
		// dialler sent: its hello, then its proof as the acceptor's.
		h, err := readHello(a, DefaultMaxNameLength)
		require.NoError(t, err)
		_, err = a.Write(h.append(nil))
		require.NoError(t, err)
		proof := make([]byte, ProofSize)
		_, err = io.ReadFull(a, proof)
		require.NoError(t, err)
		_, err = a.Write(append([]byte{statusOK}, proof...))
		require.NoError(t, err)
		status, err := readStatus(a, "dialler's verdict")
		require.NoError(t, err)
		assert.Equal(t, statusBadProof, status)
		require.ErrorIs(t, (<-done).err, gen.ErrUnauthorized)
	})
}

func TestAdmit(t *testing.T) {
	busy := errors.New("busy")
	refusing := func(c Config, asked *[]Identity) Config {
		c.Admit = func(peer Identity) error {
			*asked = append(*asked, peer)
			return busy
		}
		return c
	}
	t.Run("an acceptor's refusal reaches the dialler as ErrRefused before the acceptor proves itself", func(t *testing.T) {
		var asked []Identity
		d, a := pipePair(t, cfg(alpha, "secret"), refusing(cfg(beta, "secret"), &asked), beta.Name)
		require.ErrorIs(t, d.err, ErrRefused)
		require.ErrorIs(t, d.err, gen.ErrNotAllowed)
		require.ErrorIs(t, a.err, busy)
		require.Equal(t, []Identity{alpha}, asked)
	})
	t.Run("a dialler's refusal reaches the acceptor as ErrRefused", func(t *testing.T) {
		var asked []Identity
		d, a := pipePair(t, refusing(cfg(alpha, "secret"), &asked), cfg(beta, "secret"), beta.Name)
		require.ErrorIs(t, d.err, busy)
		require.ErrorIs(t, a.err, ErrRefused)
		require.Equal(t, []Identity{beta}, asked)
	})
	t.Run("a peer that has not proved the cookie is never put to Admit", func(t *testing.T) {
		var asked []Identity
		d, a := pipePair(t, cfg(alpha, "wrong"), refusing(cfg(beta, "secret"), &asked), beta.Name)
		require.ErrorIs(t, d.err, gen.ErrUnauthorized)
		require.ErrorIs(t, a.err, gen.ErrUnauthorized)
		require.Empty(t, asked)
	})
}

func TestGarbageIsRejected(t *testing.T) {
	cases := []struct {
		name  string
		input []byte
		want  error
	}{
		{"an HTTP request is malformed", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), gen.ErrMalformed},
		{"random bytes are malformed", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0xfc}, gen.ErrMalformed},
		{"another protocol version is unsupported", append([]byte(Magic), 9, 0, 0, 0), gen.ErrUnsupported},
		{"a zero-length name is malformed", helloWithNameLength(0), gen.ErrMalformed},
		{"a name longer than the cap is malformed", helloWithNameLength(DefaultMaxNameLength + 1), gen.ErrMalformed},
		{"a 64 KiB name length is malformed", helloWithNameLength(0xFFFF), gen.ErrMalformed},
		{"a stream ending inside the hello is truncated", append([]byte(Magic), Version, 'a', 'b', 'c'), ErrTruncated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			at := startAccept(t, cfg(beta, "secret"))
			// Write without waiting: the acceptor may stop reading early.
			go func() {
				_, _ = at.conn.Write(tc.input)
				at.conn.Close()
			}()
			out := <-at.result
			require.ErrorIs(t, out.err, tc.want)
		})
	}

	t.Run("the dialler rejects an acceptor that answers garbage", func(t *testing.T) {
		d, a := net.Pipe()
		require.NoError(t, d.SetDeadline(time.Now().Add(deadline)))
		require.NoError(t, a.SetDeadline(time.Now().Add(deadline)))
		done := make(chan error, 1)
		go func() {
			_, err := Dial(d, cfg(alpha, "secret"), beta.Name)
			d.Close()
			done <- err
		}()
		_, err := readHello(a, DefaultMaxNameLength)
		require.NoError(t, err)
		go func() {
			_, _ = a.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
			a.Close()
		}()
		require.ErrorIs(t, <-done, gen.ErrMalformed)
	})

	t.Run("a silent peer ends at the caller's deadline, not in a hang", func(t *testing.T) {
		d, a := net.Pipe()
		defer d.Close()
		defer a.Close()
		require.NoError(t, a.SetDeadline(time.Now().Add(50*time.Millisecond)))
		_, err := Accept(a, cfg(beta, "secret"))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	})
}

func helloWithNameLength(n int) []byte {
	h := hello{id: Identity{Name: "x", Creation: 1}}.append(nil)
	h = h[:helloFixedSize-2]
	return append(h, byte(n>>8), byte(n))
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"an empty own name is refused", Config{}},
		{"an own name longer than MaxNameLength is refused", Config{Self: Identity{Name: "abcdef"}, MaxNameLength: 5}},
		{"a negative MaxNameLength is refused", Config{Self: alpha, MaxNameLength: -1}},
		{"a MaxNameLength beyond 65535 is refused", Config{Self: alpha, MaxNameLength: 1 << 16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.cfg.Validate(), gen.ErrIncorrect)
			_, err := Dial(&bytes.Buffer{}, tc.cfg, beta.Name)
			require.ErrorIs(t, err, gen.ErrIncorrect, "Dial validates before writing")
			_, err = Accept(&bytes.Buffer{}, tc.cfg)
			require.ErrorIs(t, err, gen.ErrIncorrect, "Accept validates before reading")
		})
	}
	t.Run("a name within a custom MaxNameLength passes", func(t *testing.T) {
		assert.NoError(t, Config{Self: Identity{Name: "abcde"}, MaxNameLength: 5}.Validate())
	})
}

// recorder keeps every byte written to and read from a connection.
type recorder struct {
	net.Conn
	written, read []byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.written = append(r.written, p...)
	return r.Conn.Write(p)
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.read = append(r.read, p[:n]...)
	return n, err
}
