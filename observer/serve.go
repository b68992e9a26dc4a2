package observer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
)

// shutdownGrace bounds how long Close waits for cancelled requests to return
// before it closes their connections.
const shutdownGrace = time.Second

// Limits of the server Serve runs. The observer has no authentication, so
// these are what keep an unauthenticated client from starving the node: a
// connection that sends nothing is closed after readHeaderTimeout, an idle
// keep-alive after idleTimeout, and no more than the connection cap (see
// WithMaxConnections) hold file descriptors at once; further ones wait in
// the kernel's backlog, costing the process nothing.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 30 * time.Second
)

// Server is an HTTP server running a Handler, made by Serve.
type Server struct {
	handler  *Handler
	http     *http.Server
	listener net.Listener
	served   chan error // receives what http.Server.Serve returned
	// cancel ends the context every request's context derives from.
	cancel   context.CancelFunc
	once     sync.Once
	closeErr error
}

// Serve listens on address (host:port; port 0 picks a free port) and serves
// NewHandler(node, opts...) there until Close. The server has no
// authentication: bind it to a loopback or otherwise trusted address. It
// bounds what a client can hold (timeouts, and at most
// DefaultMaxConnections connections unless WithMaxConnections says
// otherwise), so a flood of idle connections cannot take the file
// descriptors the node needs for its peers.
func Serve(node gen.Node, address string, opts ...Option) (*Server, error) {
	cfg := resolve(opts)
	raw, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("observer: listening on %s: %w", address, err)
	}
	ln := newCappedListener(raw, cfg.maxConnections)
	h := NewHandler(node, opts...)
	base, cancel := context.WithCancel(context.Background())
	s := &Server{
		handler:  h,
		listener: ln,
		served:   make(chan error, 1),
		cancel:   cancel,
		http: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			ErrorLog:          slog.NewLogLogger(node.Log().Logger().Handler(), slog.LevelWarn),
			BaseContext:       func(net.Listener) context.Context { return base },
		},
	}
	go func() { s.served <- s.http.Serve(ln) }()
	return s, nil
}

// Addr returns the address the server listens on, host:port, with the real
// port when Serve was given port 0.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// URL returns the page's address, http://host:port/.
func (s *Server) URL() string { return "http://" + s.Addr() + "/" }

// Handler returns the handler the server runs.
func (s *Server) Handler() *Handler { return s.handler }

// Close stops the sampler, cancels the context of every request in flight (so
// event streams and MCP streams end), closes the listener and every
// connection, and returns when the server's goroutines have ended. Later calls
// return the first call's result.
func (s *Server) Close() error {
	s.once.Do(func() {
		var errs []error
		if err := s.handler.Close(); err != nil {
			errs = append(errs, err)
		}
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			// Past the grace: a connection a client opened but never used
			// counts as busy for several seconds; close it.
			if !errors.Is(err, context.DeadlineExceeded) {
				errs = append(errs, fmt.Errorf("observer: shutting down %s: %w", s.Addr(), err))
			}
			if err := s.http.Close(); err != nil {
				errs = append(errs, fmt.Errorf("observer: closing %s: %w", s.Addr(), err))
			}
		}
		if err := <-s.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("observer: serving %s: %w", s.Addr(), err))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
