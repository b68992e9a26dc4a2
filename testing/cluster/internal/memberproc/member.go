package memberproc

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

// EnvSpec is the environment variable that carries the JSON Spec.
const EnvSpec = "REGENT_MEMBER"

// Spec is everything a member process needs to know.
type Spec struct {
	Name             gen.Atom
	Register         gen.Atom
	Cookie           string
	Routes           map[gen.Atom]string
	KeepAlivePeriod  time.Duration
	KeepAliveTimeout time.Duration
	HandshakeTimeout time.Duration
	BackoffMin       time.Duration
	BackoffMax       time.Duration
	LogLevel         gen.LogLevel
	// Options are the member's options; their func fields (OnTransition,
	// a PreferFunc's Less) do not cross the process boundary.
	Options leader.Options
	// Worker, when set, makes the member's actor a Worker instead of a
	// plain leader actor.
	Worker *Worker `json:",omitempty"`
}

// Encode returns s as the value of EnvSpec.
func (s Spec) Encode() (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("memberproc: encoding spec: %w", err)
	}
	return string(b), nil
}

// Decode parses the value of EnvSpec.
func Decode(v string) (Spec, error) {
	var s Spec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, fmt.Errorf("memberproc: decoding spec %q: %v: %w", v, err, gen.ErrMalformed)
	}
	return s, nil
}

type plain struct {
	leader.Actor
	opts leader.Options
}

func (p *plain) Init(args ...any) (leader.Options, error) { return p.opts, nil }

// Run starts the member described by s, reports READY on out, and serves
// until stop (graceful) or abort (abrupt) is closed. Each value on block
// makes a Worker's next work message block for Worker.Block.
func Run(s Spec, out io.Writer, stop, abort <-chan struct{}, block <-chan struct{}) error {
	n, err := loopback.StartNode(s.Name, loopback.Options{
		Cookie: s.Cookie,
		Network: gen.NetworkOptions{
			Acceptor:            gen.AcceptorOptions{Host: loopback.Host},
			Routes:              s.Routes,
			KeepAlivePeriod:     s.KeepAlivePeriod,
			KeepAliveTimeout:    s.KeepAliveTimeout,
			HandshakeTimeout:    s.HandshakeTimeout,
			ReconnectBackoffMin: s.BackoffMin,
			ReconnectBackoffMax: s.BackoffMax,
		},
		Log: gen.LogOptions{Level: s.LogLevel},
	})
	if err != nil {
		return fmt.Errorf("memberproc: %w", err)
	}
	opts := s.Options
	factory := func() gen.ProcessBehavior { return &plain{opts: opts} }
	if s.Worker != nil {
		f, err := os.OpenFile(s.Worker.Record, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			n.StopForce()
			return fmt.Errorf("memberproc: %w", err)
		}
		factory = func() gen.ProcessBehavior { return &worker{opts: opts, spec: *s.Worker, out: f} }
	}
	pid, err := n.SpawnRegister(s.Register, factory, gen.ProcessOptions{})
	if err != nil {
		n.StopForce()
		return fmt.Errorf("memberproc: spawning %s: %w", s.Register, err)
	}
	if s.Worker != nil {
		done := make(chan struct{})
		defer close(done)
		go feed(n, pid, s.Worker.Every, done)
		go func() {
			for {
				select {
				case <-done:
					return
				case <-block:
					_ = n.Send(pid, blockNext{})
				}
			}
		}()
	}
	if _, err := fmt.Fprintf(out, "READY %d %d %s\n", pid.ID, pid.Creation, n.Network().AcceptorAddress()); err != nil {
		n.StopForce()
		return fmt.Errorf("memberproc: reporting ready: %w", err)
	}
	select {
	case <-stop:
		n.Stop()
	case <-abort:
		n.StopForce()
		n.Wait()
	}
	return nil
}
