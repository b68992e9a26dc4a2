package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"sync"
	"time"
)

// The idle floor: what the frames of a steady row cost with nothing but Go
// and loopback TCP. A steady coalesced cluster set sends, per heartbeat
// tick, one pair beat from each leader node to each node its members are
// on, and one PairAck back. The floor does the same with the least code
// that can: per beating node one ticker goroutine that writes, each tick,
// its frames (of the row's mean size) to each of its peers in one write
// per peer, and per connection a reader that answers each frame with one
// of the same size at once, the frames that came together in one write. Its
// CPU share, measured in the same run once the row's nodes are stopped, is
// the cost of the row's frames alone; the row's CPU over it is what the
// runtime, the coalescer and the election add.

// idleFloorSpan bounds how long the floor is measured.
const idleFloorSpan = 10 * time.Second

// floorPair is one directed pair of the floor: a beating node's end and
// the answering node's end of one loopback connection, and the frames it
// beats per tick.
type floorPair struct {
	beater, answerer net.Conn
	perTick          int
}

// idleFloor measures the floor of row's traffic over span (at most
// idleFloorSpan): nodes nodes, ticking every interval. It reports 0 when
// the row sent no frames.
func idleFloor(ctx context.Context, row scaleRow, nodes int, interval time.Duration, span time.Duration) (float64, error) {
	span = min(span, idleFloorSpan)
	ticks := span.Seconds() / interval.Seconds()
	beats := int(math.Round(row.FramesPerSec * interval.Seconds() / 2)) // beats per tick, each answered
	if beats <= 0 || row.FramesPerSec <= 0 || ticks < 1 {
		return 0, nil
	}
	// Without coalescing a pair carries many frames per tick: the beats
	// are spread over every directed pair, each writing its share.
	pairs := min(beats, nodes*(nodes-1))
	size := int(math.Round(row.BytesPerPair / row.FramesPerPair))
	size = max(size-4, 1) // the length prefix is part of the frame's bytes
	// The row's garbage is collected, and its idle workers end, first.
	runtime.GC()
	time.Sleep(300 * time.Millisecond)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("idle floor: %w", err)
	}
	defer ln.Close()
	// The beating nodes, fullest first: beats go out from as few nodes as
	// they can, as a few leader nodes' grids send them.
	bySource := make([][]floorPair, nodes)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for k := range pairs {
		beater, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return 0, fmt.Errorf("idle floor: %w", err)
		}
		conns = append(conns, beater)
		answerer, err := ln.Accept()
		if err != nil {
			return 0, fmt.Errorf("idle floor: %w", err)
		}
		conns = append(conns, answerer)
		src := k / (nodes - 1)
		share := beats / pairs
		if k < beats%pairs {
			share++
		}
		bySource[src] = append(bySource[src], floorPair{beater, answerer, share})
	}

	frame := binary.BigEndian.AppendUint32(nil, uint32(size))
	frame = append(frame, make([]byte, size)...)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2*pairs+nodes)
	for _, pairs := range bySource {
		if len(pairs) == 0 {
			continue
		}
		wg.Add(1)
		// An error once stop is closed comes from closing the connections.
		report := func(err error) {
			select {
			case <-stop:
			default:
				errs <- err
			}
		}
		go func() {
			defer wg.Done()
			report(floorBeater(pairs, frame, interval, stop))
		}()
		for _, p := range pairs {
			wg.Add(2)
			go func() {
				defer wg.Done()
				report(floorRead(p.answerer, frame))
			}()
			go func() {
				defer wg.Done()
				report(floorRead(p.beater, nil))
			}()
		}
	}
	cpu0, err := cpuTime()
	if err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(span):
		}
	}
	cpu1, err1 := cpuTime()
	close(stop)
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	if err = errors.Join(err, err1); err != nil {
		return 0, fmt.Errorf("idle floor: %w", err)
	}
	return float64(cpu1-cpu0) / float64(span), nil
}

// floorBeater writes each of its pairs' frames of a tick to its
// connection every interval, in one write per pair, until stop.
func floorBeater(pairs []floorPair, frame []byte, interval time.Duration, stop <-chan struct{}) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
		for _, p := range pairs {
			if _, err := p.beater.Write(bytes.Repeat(frame, p.perTick)); err != nil {
				return err
			}
		}
	}
}

// floorRead reads length-prefixed frames from c and, with an answer,
// answers each with it: those that arrived together in one write.
func floorRead(c net.Conn, answer []byte) error {
	r := bufio.NewReaderSize(c, 64<<10)
	var hdr [4]byte
	buf := make([]byte, 0, 1024)
	owed := 0
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return err
		}
		if answer == nil {
			continue
		}
		if owed++; r.Buffered() == 0 {
			if _, err := c.Write(bytes.Repeat(answer, owed)); err != nil {
				return err
			}
			owed = 0
		}
	}
}
