package node_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node"
)

// Every benchmark measures Regent and its baseline on the same b.N in the
// same run and reports the baseline's ns/op and the ratio x-baseline
// (Regent's time divided by the baseline's).

// compare times baseline(n) by hand and subject(n) with the benchmark timer.
func compare(b *testing.B, baseline, subject func(n int)) {
	b.StopTimer()
	start := time.Now()
	baseline(b.N)
	base := time.Since(start)
	b.StartTimer()
	b.ResetTimer()
	subject(b.N)
	b.StopTimer()
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(b.Elapsed())/float64(base), "x-baseline")
}

// counter counts the messages it gets and signals when it reaches want.
type counter struct {
	act.Actor
	got  *atomic.Int64
	want *atomic.Int64
	done chan struct{}
}

func (c *counter) HandleMessage(from gen.PID, message any) error {
	if c.got.Add(1) == c.want.Load() {
		c.done <- struct{}{}
	}
	return nil
}

func (c *counter) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	return request, nil
}

func spawnCounter(b *testing.B, n gen.Node) (gen.PID, *counter) {
	c := &counter{got: new(atomic.Int64), want: new(atomic.Int64), done: make(chan struct{}, 1)}
	pid, err := n.Spawn(func() gen.ProcessBehavior { return c }, gen.ProcessOptions{})
	require.NoError(b, err)
	return pid, c
}

// expect arms the counter for n more messages.
func (c *counter) expect(n int) {
	c.got.Store(0)
	c.want.Store(int64(n))
}

func benchNode(b *testing.B, name gen.Atom, mode gen.NetworkMode) gen.Node {
	opts := gen.NodeOptions{Network: gen.NetworkOptions{Mode: mode, Cookie: testCookie}, Log: gen.LogOptions{Level: gen.LogLevelError}}
	n, err := node.Start(name, opts)
	require.NoError(b, err)
	b.Cleanup(n.Stop)
	require.NoError(b, n.Network().RegisterTypes([]any{ping{}, pong{}}))
	return n
}

func BenchmarkLocalSend(b *testing.B) {
	n := benchNode(b, "bench-local@localhost", gen.NetworkModeDisabled)
	pid, c := spawnCounter(b, n)
	msg := ping{Seq: 1, Text: "hello"}
	compare(b, func(count int) {
		ch := make(chan any, 1024)
		done := make(chan struct{})
		go func() {
			for i := 0; i < count; i++ {
				<-ch
			}
			close(done)
		}()
		for i := 0; i < count; i++ {
			ch <- msg
		}
		<-done
	}, func(count int) {
		c.expect(count)
		for i := 0; i < count; i++ {
			if err := n.Send(pid, msg); err != nil {
				b.Fatal(err)
			}
		}
		<-c.done
	})
}

func BenchmarkLocalCall(b *testing.B) {
	n := benchNode(b, "bench-call@localhost", gen.NetworkModeDisabled)
	pid, _ := spawnCounter(b, n)
	msg := ping{Seq: 1, Text: "hello"}
	compare(b, func(count int) {
		req, resp := make(chan any), make(chan any)
		go func() {
			for v := range req {
				resp <- v
			}
		}()
		for i := 0; i < count; i++ {
			req <- msg
			<-resp
		}
		close(req)
	}, func(count int) {
		for i := 0; i < count; i++ {
			if _, err := n.Call(pid, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchPair starts two networked nodes on loopback, connected.
func benchPair(b *testing.B) (gen.Node, gen.Node) {
	a := benchNode(b, "bench-a@127.0.0.1", gen.NetworkModeEnabled)
	z := benchNode(b, "bench-b@127.0.0.1", gen.NetworkModeEnabled)
	require.NoError(b, a.Network().AddRoute(z.Name(), z.Network().AcceptorAddress()))
	return a, z
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(b *testing.B) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	dialled, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(b, err)
	server := <-accepted
	require.NotNil(b, server)
	b.Cleanup(func() { dialled.Close(); server.Close() })
	return dialled, server
}

// frameOf is a length-prefixed payload the size of Regent's frame for msg.
func frameOf(size int) []byte {
	f := binary.BigEndian.AppendUint32(nil, uint32(size))
	return append(f, make([]byte, size)...)
}

// readFrames reads count length-prefixed frames.
func readFrames(r *bufio.Reader, count int) error {
	var hdr [4]byte
	buf := make([]byte, 1024)
	for i := 0; i < count; i++ {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		if _, err := io.ReadFull(r, buf[:binary.BigEndian.Uint32(hdr[:])]); err != nil {
			return err
		}
	}
	return nil
}

// regentFrameSize is the size of the frame Regent writes for one Send of
// msg to pid, measured from the network counters.
func regentFrameSize(b *testing.B, a gen.Node, pid gen.PID, c *counter, msg any) int {
	c.expect(1)
	before := a.Network().Stats().BytesOut
	require.NoError(b, a.Send(pid, msg))
	<-c.done
	require.Eventually(b, func() bool { return a.Network().Stats().BytesOut > before }, wait, time.Millisecond)
	return int(a.Network().Stats().BytesOut-before) - 4
}

func BenchmarkRemoteSend(b *testing.B) {
	a, z := benchPair(b)
	pid, c := spawnCounter(b, z)
	msg := ping{Seq: 1, Text: "hello"}
	size := regentFrameSize(b, a, pid, c, msg)
	b.SetBytes(int64(size + 4))
	compare(b, func(count int) {
		w, r := tcpPair(b)
		done := make(chan error, 1)
		go func() { done <- readFrames(bufio.NewReader(r), count) }()
		bw := bufio.NewWriter(w)
		f := frameOf(size)
		for i := 0; i < count; i++ {
			if _, err := bw.Write(f); err != nil {
				b.Fatal(err)
			}
		}
		require.NoError(b, bw.Flush())
		require.NoError(b, <-done)
	}, func(count int) {
		c.expect(count)
		for i := 0; i < count; i++ {
			if err := a.Send(pid, msg); err != nil {
				b.Fatal(err)
			}
		}
		<-c.done
	})
}

func BenchmarkRemoteCall(b *testing.B) {
	a, z := benchPair(b)
	pid, c := spawnCounter(b, z)
	msg := ping{Seq: 1, Text: "hello"}
	size := regentFrameSize(b, a, pid, c, msg)
	compare(b, func(count int) {
		client, server := tcpPair(b)
		go func() {
			r := bufio.NewReader(server)
			var hdr [4]byte
			buf := make([]byte, 1024)
			for {
				if _, err := io.ReadFull(r, hdr[:]); err != nil {
					return
				}
				n := binary.BigEndian.Uint32(hdr[:])
				if _, err := io.ReadFull(r, buf[:n]); err != nil {
					return
				}
				if _, err := server.Write(append(hdr[:], buf[:n]...)); err != nil {
					return
				}
			}
		}()
		r := bufio.NewReader(client)
		f := frameOf(size)
		for i := 0; i < count; i++ {
			if _, err := client.Write(f); err != nil {
				b.Fatal(err)
			}
			if err := readFrames(r, 1); err != nil {
				b.Fatal(err)
			}
		}
	}, func(count int) {
		for i := 0; i < count; i++ {
			if _, err := a.Call(pid, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// idle is the smallest actor: it embeds act.Actor and adds nothing.
type idle struct{ act.Actor }

// BenchmarkIdleProcessMemory spawns 100,000 processes and reports the heap
// each one holds while idle, beside a parked goroutine with a channel (the
// goroutine-per-process baseline). Run it with -benchtime=1x.
func BenchmarkIdleProcessMemory(b *testing.B) {
	const count = 100_000
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc + m.StackInuse
	}
	for i := 0; i < b.N; i++ {
		before := heap()
		stop := make(chan struct{})
		chans := make([]chan any, count)
		for j := range chans {
			chans[j] = make(chan any, 1)
			go func(ch chan any) {
				select {
				case <-ch:
				case <-stop:
				}
			}(chans[j])
		}
		baseline := float64(heap()-before) / count
		close(stop)
		chans = nil

		n, err := node.Start("bench-idle@localhost", gen.NodeOptions{Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled}})
		require.NoError(b, err)
		before = heap()
		for j := 0; j < count; j++ {
			if _, err := n.Spawn(func() gen.ProcessBehavior { return &idle{} }, gen.ProcessOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		perProcess := float64(heap()-before) / count
		b.ReportMetric(perProcess, "bytes/process")
		b.ReportMetric(baseline, "baseline-bytes/goroutine")
		b.ReportMetric(perProcess/baseline, "x-baseline")
		n.Stop()
	}
}
