package observer

import (
	"net"
	"sync"
)

// cappedListener accepts at most cap connections at a time: Accept waits
// until an accepted connection is closed before taking the next from the
// kernel's backlog, where a waiting client costs this process no file
// descriptor.
type cappedListener struct {
	net.Listener
	slots chan struct{} // one token per open connection
	done  chan struct{} // closed by Close, so a waiting Accept returns
	once  sync.Once
}

func newCappedListener(l net.Listener, capacity int) *cappedListener {
	return &cappedListener{Listener: l, slots: make(chan struct{}, capacity), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *cappedListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	conn, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: conn, release: func() { <-l.slots }}, nil
}

// Close closes the listener and releases a waiting Accept.
func (l *cappedListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// slotConn gives its slot back when closed, once however often Close is called.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
