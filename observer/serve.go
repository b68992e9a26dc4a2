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
// NewHandler(node, opts...) there until Close.
func Serve(node gen.Node, address string, opts ...Option) (*Server, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("observer: listening on %s: %w", address, err)
	}
	h := NewHandler(node, opts...)
	base, cancel := context.WithCancel(context.Background())
	s := &Server{
		handler:  h,
		listener: ln,
		served:   make(chan error, 1),
		cancel:   cancel,
		http: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
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
