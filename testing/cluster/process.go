package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/cluster/internal/memberproc"
	"github.com/regent-go/regent/testing/history"
	"github.com/regent-go/regent/testing/loopback"
)

// memberPackage is the main the harness builds for OS-process members.
const memberPackage = "github.com/regent-go/regent/testing/cluster/internal/membernode"

// Bounds of the OS-process machinery's own waits.
const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
)

// pollKeys are the inspection keys the OS-mode history is built from.
var pollKeys = []string{"ergo:state", "ergo:term", "ergo:leader_node", "ergo:view_size", "ergo:quorum", "ergo:min_cluster_size", "ergo:votes_count",
	"ergo:protocol_leader", "ergo:view_lineage", "ergo:view_term", "ergo:view_epoch", "ergo:view_agreed", "ergo:view_members"}

// processes runs members as OS processes and builds their history by
// polling their inspection from a harness-owned node.
type processes struct {
	c       *Cluster
	dir     string
	binary  string
	harness gen.Node
	stop    chan struct{}
	done    chan struct{}
}

// osProcess is one member process. Its standard input is a pipe the
// harness holds open: when the harness dies, the member sees EOF and aborts.
type osProcess struct {
	cmd *exec.Cmd
	// exited is closed once the process has been waited for.
	exited chan struct{}
	// exitErr is what Wait returned; it is written before exited is closed
	// and read only after.
	exitErr error
}

// startProcesses builds the member program and starts the harness node and
// the history poller.
func startProcesses(c *Cluster) (*processes, error) {
	dir, err := os.MkdirTemp("", "regent-cluster-")
	if err != nil {
		return nil, fmt.Errorf("cluster: temp dir for the member program: %w", err)
	}
	p := &processes{c: c, dir: dir, binary: filepath.Join(dir, "membernode"), stop: make(chan struct{}), done: make(chan struct{})}
	build := exec.Command("go", "build", "-o", p.binary, memberPackage)
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cluster: building %s: %v\n%s", memberPackage, err, out)
	}
	harness, err := loopback.StartNode(gen.Atom("harness-"+c.cfg.NodePrefix+"@127.0.0.1"), loopback.Options{
		Network: c.cfg.networkOptions(nil),
		Log:     gen.LogOptions{Level: c.cfg.LogLevel},
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cluster: starting the harness node: %w", err)
	}
	p.harness = harness
	go p.poll()
	return p, nil
}

// launch starts one member process and waits for its READY line.
func (p *processes) launch(m *member, life int, opts leader.Options) (*osProcess, gen.PID, error) {
	c := p.c
	netOpts := c.cfg.networkOptions(nil)
	spec := memberproc.Spec{
		Name: m.name, Register: c.cfg.Name, Cookie: c.cfg.Cookie, Routes: maps.Clone(m.routes),
		KeepAlivePeriod: netOpts.KeepAlivePeriod, KeepAliveTimeout: netOpts.KeepAliveTimeout,
		HandshakeTimeout: netOpts.HandshakeTimeout, BackoffMin: netOpts.ReconnectBackoffMin, BackoffMax: netOpts.ReconnectBackoffMax,
		LogLevel: c.cfg.LogLevel, Options: opts,
	}
	if w := c.cfg.Worker; w != nil {
		spec.Worker = &memberproc.Worker{Record: actFile(w.Dir, c.cfg.label(m.index), life), Every: w.Every, Block: w.Block, ConfirmDelay: w.ConfirmDelay}
	}
	env, err := spec.Encode()
	if err != nil {
		return nil, gen.PID{}, err
	}
	cmd := exec.Command(p.binary)
	cmd.Env = append(os.Environ(), memberproc.EnvSpec+"="+env)
	cmd.Stderr = os.Stderr
	if _, err := cmd.StdinPipe(); err != nil {
		return nil, gen.PID{}, fmt.Errorf("stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, gen.PID{}, fmt.Errorf("stdout pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, gen.PID{}, fmt.Errorf("starting %s: %w", p.binary, err)
	}
	proc := &osProcess{cmd: cmd, exited: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		if line, err := r.ReadString('\n'); err == nil {
			ready <- line
		}
		_, _ = io.Copy(io.Discard, r) // nothing else is expected; drain until the process exits
		proc.exitErr = cmd.Wait()     // judged by halt: a kill is expected, a failed stop is not
		close(proc.exited)
	}()
	var line string
	select {
	case line = <-ready:
	case <-proc.exited:
		return nil, gen.PID{}, fmt.Errorf("member process exited before it was ready (%v): %w", proc.exitErr, gen.ErrNodeTerminated)
	case <-time.After(readyTimeout):
		return nil, gen.PID{}, errors.Join(fmt.Errorf("member process not ready within %v: %w", readyTimeout, gen.ErrTimeout), proc.halt(true))
	}
	pid, addr, err := parseReady(m.name, line)
	if err != nil {
		return nil, gen.PID{}, errors.Join(err, proc.halt(true))
	}
	if err := c.mesh.SetTarget(m.name, addr); err != nil {
		return nil, gen.PID{}, errors.Join(err, proc.halt(true))
	}
	// The harness reaches members directly, bypassing the proxies, so its
	// inspection sees through partitions; AddRoute replaces an old route.
	if err := p.harness.Network().AddRoute(m.name, addr); err != nil {
		return nil, gen.PID{}, errors.Join(fmt.Errorf("harness route: %w", err), proc.halt(true))
	}
	return proc, pid, nil
}

// parseReady reads "READY <id> <creation> <addr>".
func parseReady(name gen.Atom, line string) (gen.PID, string, error) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "READY" {
		return gen.PID{}, "", fmt.Errorf("member said %q, not READY: %w", line, gen.ErrMalformed)
	}
	id, err1 := strconv.ParseUint(f[1], 10, 64)
	creation, err2 := strconv.ParseInt(f[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return gen.PID{}, "", fmt.Errorf("member said %q: %v: %w", line, err, gen.ErrMalformed)
	}
	return gen.PID{Node: name, ID: id, Creation: creation}, f[3], nil
}

// halt ends the process: SIGKILL when abrupt, else SIGTERM (and SIGKILL if
// it does not exit within stopTimeout).
func (o *osProcess) halt(abrupt bool) error {
	sig := syscall.SIGTERM
	if abrupt {
		sig = syscall.SIGKILL
	}
	if err := o.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("cluster: signalling member process: %w", err)
	}
	select {
	case <-o.exited:
	case <-time.After(stopTimeout):
		if err := o.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("cluster: killing member process: %w", err)
		}
		<-o.exited
	}
	if !abrupt && o.exitErr != nil {
		// A graceful stop ends with status 0; anything else (a crash before
		// the stop, a failed shutdown) is the member's fault, not the harness's.
		return fmt.Errorf("cluster: member process did not stop cleanly: %w", o.exitErr)
	}
	return nil // Wait closed the stdin pipe
}

// observed is what the poller last saw of one member's life.
type observed struct {
	life                     int
	role, leader             string
	term                     uint64
	view, quorum, min, votes int
	protocol, agreed         bool
	lineage                  string
	members                  string // viewLabels joined by commas, so observed stays comparable
	viewTerm, viewEpoch      uint64
}

// event is o as a KindState event of member at.
func (c *Cluster) event(at time.Duration, member string, o observed) history.Event {
	e := history.Event{
		At: at, Kind: history.KindState, Member: member, Life: o.life, Role: o.role, Term: o.term,
		Leader: o.leader, ViewSize: o.view, Quorum: o.quorum, MinClusterSize: o.min, VotesGranted: o.votes,
		ProtocolLeader: o.protocol, Lineage: o.lineage, ViewTerm: o.viewTerm, ViewEpoch: o.viewEpoch, Agreed: o.agreed,
	}
	if o.lineage != "" {
		e.View = strings.Split(o.members, ",")
		if o.agreed {
			e.AgreedSize, e.AgreedQuorum = len(e.View), len(e.View)/2+1
		}
	}
	return e
}

// viewLabels names the members of a view as the history does: a member of
// the cluster by its label, anything else (another registered name on a
// member's node) as a ProcessID.
func (c *Cluster) viewLabels(members []gen.ProcessID) []string {
	out := make([]string, 0, len(members))
	for _, m := range members {
		if i, known := c.byNode[m.Node]; known && m.Name == c.cfg.Name {
			out = append(out, c.cfg.label(i))
		} else {
			out = append(out, m.String())
		}
	}
	return out
}

// poll records a KindState event whenever a member's inspected state
// changes, until stop is closed. Its resolution is PollInterval: a state
// that lasts less may be missed.
func (p *processes) poll() {
	defer close(p.done)
	c := p.c
	last := make([]observed, len(c.members))
	ticker := time.NewTicker(c.cfg.PollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-ticker.C:
		}
		for i, m := range c.members {
			c.mu.Lock()
			alive, life, pid := m.alive, m.life, m.pid
			c.mu.Unlock()
			if !alive {
				continue
			}
			v, err := leader.ReadInspection(p.harness, pid, pollKeys...)
			if err != nil {
				continue // it died or is restarting (the lifecycle events say which), or answered garbage
			}
			o := observed{
				life: life, role: string(v.Role), term: v.Term, leader: c.labelOf(v.LeaderNode),
				view: v.ViewSize, quorum: v.Quorum, min: v.MinClusterSize, votes: v.VotesCount,
				protocol: v.ProtocolLeader, agreed: v.ViewAgreed, lineage: v.ViewLineage,
				members: strings.Join(c.viewLabels(v.ViewMembers), ","), viewTerm: v.ViewTerm, viewEpoch: v.ViewEpoch,
			}
			if last[i] == o {
				continue
			}
			last[i] = o
			c.hist.Append(c.event(c.now(), c.cfg.label(i), o))
		}
	}
}

// close stops the poller and the harness node and removes the program.
func (p *processes) close() error {
	close(p.stop)
	<-p.done
	p.harness.Stop()
	return os.RemoveAll(p.dir)
}
