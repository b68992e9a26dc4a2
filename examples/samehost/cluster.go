package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// pollEvery is how often a wait re-checks what it cannot learn from
// notifications (the cell's holder) and retries a subscription.
const pollEvery = 5 * time.Millisecond

// resubscribeEvery is how long a subscription may stay unanswered before it
// is sent again.
const resubscribeEvery = 500 * time.Millisecond

// sighting is one notification a member sent the parent's observer.
type sighting struct {
	at  time.Time
	msg leader.MessageLeaderChanged
}

// observer runs on the parent's node and hands every MessageLeaderChanged to
// the main goroutine.
type observer struct {
	act.Actor
	events chan<- sighting
	done   <-chan struct{}
}

func (o *observer) HandleMessage(from gen.PID, message any) error {
	m, ok := message.(leader.MessageLeaderChanged)
	if !ok {
		o.Log().Warning("samehost: observer ignored %T from %s", message, from)
		return nil
	}
	select {
	case o.events <- sighting{at: time.Now(), msg: m}:
	case <-o.done:
	}
	return nil
}

// child is one member's OS process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// cluster is the parent's side: the members' OS processes, its own node with
// the observer, and what each member last said. Only the main goroutine uses
// it.
type cluster struct {
	ctx      context.Context // cancelled when the program is interrupted
	cfg      config
	dir      string // temporary directory holding the cell
	cell     string // the cell's path; empty without the shortcut
	self     string // the executable re-run as each member
	names    []gen.Atom
	children []*child // nil for a member that is not running
	node     gen.Node
	observer gen.PID
	events   chan sighting
	done     chan struct{}
	latest   map[gen.Atom]leader.MessageLeaderChanged
	dead     map[gen.PID]bool // members of killed processes, whose late news is ignored
	pids     []int            // every child's OS PID, for the caller to check they are gone
}

// lowestPort is the bottom of the range freePorts picks from.
const lowestPort = 10000

// freePorts finds n free loopback ports, each checked by listening on it and
// closing. It picks them below the kernel's ephemeral range when it can read
// it: a port from that range (what listening on port 0 returns) can be taken
// as the local port of any outgoing connection, the members' own included,
// before a member binds it or when a killed member restarts.
func freePorts(n int) ([]int, error) {
	top := ephemeralStart()
	out := make([]int, 0, n)
	seen := map[int]bool{}
	for attempt := 0; len(out) < n; attempt++ {
		port := 0
		if top > lowestPort {
			if attempt > 100*n {
				return nil, fmt.Errorf("samehost: no free port below %d: %w", top, gen.ErrTimeout)
			}
			port = lowestPort + rand.IntN(top-lowestPort)
			if seen[port] {
				continue
			}
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			if port == 0 {
				return nil, fmt.Errorf("samehost: picking a free port: %w", err)
			}
			continue
		}
		port = l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return nil, fmt.Errorf("samehost: releasing port %d: %w", port, err)
		}
		if !seen[port] {
			seen[port] = true
			out = append(out, port)
		}
	}
	return out, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range, 0 when
// it cannot be read (outside Linux).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	lo, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return lo
}

// startCluster starts the parent's node and cfg.members children, and
// subscribes to each. On error it stops what it started.
func startCluster(ctx context.Context, cfg config) (c *cluster, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("samehost: finding this executable: %w", err)
	}
	dir, err := os.MkdirTemp("", "regent-samehost-")
	if err != nil {
		return nil, fmt.Errorf("samehost: creating the temporary directory: %w", err)
	}
	c = &cluster{
		ctx: ctx, cfg: cfg, dir: dir, self: self,
		events: make(chan sighting, 1024), done: make(chan struct{}),
		latest: map[gen.Atom]leader.MessageLeaderChanged{}, dead: map[gen.PID]bool{},
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.stop())
			c = nil
		}
	}()
	if cfg.shortcut {
		c.cell = filepath.Join(dir, "cell")
	}
	ports, err := freePorts(cfg.members + 1)
	if err != nil {
		return c, err
	}
	for i := range cfg.members {
		c.names = append(c.names, gen.Atom(fmt.Sprintf("s%d@127.0.0.1:%d", i+1, ports[i])))
	}
	c.children = make([]*child, cfg.members)
	if c.node, err = startNode(gen.Atom(fmt.Sprintf("observer@127.0.0.1:%d", ports[cfg.members]))); err != nil {
		return c, err
	}
	if c.observer, err = c.node.Spawn(func() gen.ProcessBehavior {
		return &observer{events: c.events, done: c.done}
	}, gen.ProcessOptions{}); err != nil {
		return c, fmt.Errorf("samehost: spawning the observer: %w", err)
	}
	for i := range c.names {
		if err := c.startChild(i); err != nil {
			return c, err
		}
	}
	for i := range c.names {
		if err := c.subscribe(i); err != nil {
			return c, err
		}
	}
	return c, nil
}

// startChild starts member i's OS process and waits for its ready line.
func (c *cluster) startChild(i int) error {
	var peers []string
	for j, n := range c.names {
		if j != i {
			peers = append(peers, string(n))
		}
	}
	cmd := exec.Command(c.self)
	cmd.Env = append(os.Environ(), envNode+"="+string(c.names[i]), envPeers+"="+strings.Join(peers, ","), envCell+"="+c.cell)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("samehost: %s: %w", c.names[i], err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("samehost: %s: %w", c.names[i], err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("samehost: starting %s: %w", c.names[i], err)
	}
	c.children[i] = &child{cmd: cmd, stdin: stdin}
	c.pids = append(c.pids, cmd.Process.Pid)
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n') // a failed read is an empty line, reported below
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s != readyLine {
			return fmt.Errorf("samehost: %s exited before its member ran: %w", c.names[i], gen.ErrProcessTerminated)
		}
		return nil
	case <-time.After(c.cfg.settle):
		err := c.kill(i)
		<-line
		return errors.Join(fmt.Errorf("samehost: %s not ready within %s: %w", c.names[i], c.cfg.settle, gen.ErrTimeout), err)
	}
}

// kill ends member i's process with SIGKILL and reaps it; it returns when the
// process is gone.
func (c *cluster) kill(i int) error {
	ch := c.children[i]
	if ch == nil {
		return nil
	}
	c.children[i] = nil
	if m, ok := c.latest[c.names[i]]; ok {
		c.dead[m.Member] = true
		delete(c.latest, c.names[i])
	}
	if err := ch.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("samehost: killing %s: %w", c.names[i], err)
	}
	return reaped(c.names[i], ch.cmd.Wait())
}

// reaped accepts the exit of a killed or stopped child and reports any other failure.
func reaped(name gen.Atom, err error) error {
	var exit *exec.ExitError
	if err == nil || errors.As(err, &exit) {
		return nil
	}
	return fmt.Errorf("samehost: reaping %s: %w", name, err)
}

// stop ends every child (closing its standard input, SIGKILL after settle),
// stops the parent's node and removes the temporary directory.
func (c *cluster) stop() error {
	var errs []error
	for _, ch := range c.children {
		if ch != nil {
			errs = append(errs, ch.stdin.Close())
		}
	}
	for i, ch := range c.children {
		if ch == nil {
			continue
		}
		exited := make(chan error, 1)
		go func() { exited <- ch.cmd.Wait() }()
		select {
		case err := <-exited:
			errs = append(errs, reaped(c.names[i], err))
		case <-time.After(c.cfg.settle):
			if err := ch.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, fmt.Errorf("samehost: killing %s: %w", c.names[i], err))
			}
			errs = append(errs, reaped(c.names[i], <-exited))
		}
		c.children[i] = nil
	}
	close(c.done)
	if c.node != nil {
		c.node.Stop()
	}
	errs = append(errs, os.RemoveAll(c.dir))
	return errors.Join(errs...)
}

// subscribe asks member i for its news and waits for the first.
func (c *cluster) subscribe(i int) error {
	name := c.names[i]
	last := time.Time{}
	_, err := c.await(func() bool { _, ok := c.latest[name]; return ok }, func() {
		if time.Since(last) < resubscribeEvery {
			return
		}
		last = time.Now()
		// A send can fail while the node still backs off from dialling a
		// restarted member; the next retry covers it.
		if err := c.node.Send(gen.ProcessID{Name: memberName, Node: name}, leader.MessageSubscribe{Subscriber: c.observer}); err != nil {
			c.node.Log().Info("samehost: subscribing to %s: %v", name, err)
		}
	})
	if err != nil {
		return fmt.Errorf("samehost: subscribing to %s: %w", name, err)
	}
	return nil
}

// await applies notifications until cond holds, calling tick (when not nil)
// every pollEvery; it returns the arrival time of the notification that made
// cond hold, or now when tick did. It fails after cfg.settle.
func (c *cluster) await(cond func() bool, tick func()) (time.Time, error) {
	deadline := time.NewTimer(c.cfg.settle)
	defer deadline.Stop()
	ticker := time.NewTicker(pollEvery)
	defer ticker.Stop()
	if tick != nil {
		tick()
	}
	if cond() {
		return time.Now(), nil
	}
	for {
		select {
		case s := <-c.events:
			c.apply(s)
			if cond() {
				return s.at, nil
			}
		case <-ticker.C:
			if tick != nil {
				tick()
			}
			if cond() {
				return time.Now(), nil
			}
		case <-deadline.C:
			return time.Time{}, fmt.Errorf("samehost: no outcome within %s: %w", c.cfg.settle, gen.ErrTimeout)
		case <-c.ctx.Done():
			return time.Time{}, fmt.Errorf("samehost: interrupted: %w", c.ctx.Err())
		}
	}
}

func (c *cluster) apply(s sighting) {
	if c.dead[s.msg.Member] {
		return
	}
	c.latest[s.msg.Member.Node] = s.msg
}

// running lists the members whose process runs.
func (c *cluster) running() []int {
	var out []int
	for i, ch := range c.children {
		if ch != nil {
			out = append(out, i)
		}
	}
	return out
}

// quorum is a majority of the cluster's full size.
func (c *cluster) quorum() int { return len(c.names)/2 + 1 }

// following is the leader that the most running members follow at a term
// above after (leader.Agree over their latest notifications, a dead leader's
// left out), and how many follow it.
func (c *cluster) following(after uint64) (leader.Agreement, int) {
	var beliefs []leader.Belief
	for _, i := range c.running() {
		m, ok := c.latest[c.names[i]]
		if ok && m.Term > after && !c.dead[m.Leader] {
			beliefs = append(beliefs, m.Belief())
		}
	}
	a, _ := leader.Agree(beliefs, 1)
	return a, len(a.Members)
}

// agreed reports whether every running member follows one live leader at a
// term above after.
func (c *cluster) agreed(after uint64) bool {
	_, n := c.following(after)
	return n == len(c.running())
}

// index returns the member index of a node name, -1 when unknown.
func (c *cluster) index(n gen.Atom) int {
	for i, name := range c.names {
		if name == n {
			return i
		}
	}
	return -1
}

// inspect reads keys of running member i through its latest known PID.
func (c *cluster) inspect(i int, keys ...string) (leader.Inspection, error) {
	m, ok := c.latest[c.names[i]]
	if !ok {
		return leader.Inspection{}, fmt.Errorf("samehost: no PID known for %s: %w", c.names[i], gen.ErrProcessUnknown)
	}
	in, err := leader.ReadInspection(c.node, m.Member, keys...)
	if err != nil {
		return leader.Inspection{}, fmt.Errorf("samehost: inspecting %s: %w", c.names[i], err)
	}
	return in, nil
}

// holder reads the OS PID recorded in the cell as member i sees it (0: none).
func (c *cluster) holder(i int) (int, error) {
	in, err := c.inspect(i, "ergo:same_host")
	if err != nil {
		return 0, err
	}
	if !in.SameHost.Enabled {
		return 0, fmt.Errorf("samehost: %s runs without a same-host cell: %w", c.names[i], gen.ErrIncorrect)
	}
	return in.SameHost.Holder, nil
}

// ownerOf returns the member whose process has OS PID pid, -1 when none runs.
func (c *cluster) ownerOf(pid int) int {
	for i, ch := range c.children {
		if ch != nil && ch.cmd.Process.Pid == pid {
			return i
		}
	}
	return -1
}

// electionsStarted reads how many elections running member i has started.
func (c *cluster) electionsStarted(i int) (uint64, error) {
	in, err := c.inspect(i, "ergo:elections_started")
	return in.ElectionsStarted, err
}

// framesOut reads member i's node's FramesOut through its stats helper.
func (c *cluster) framesOut(i int) (uint64, error) {
	v, err := c.node.Call(gen.ProcessID{Name: statsName, Node: c.names[i]}, statsRequest)
	if err != nil {
		return 0, fmt.Errorf("samehost: reading %s's frame counters: %w", c.names[i], err)
	}
	m, ok := v.(map[string]string)
	if !ok {
		return 0, fmt.Errorf("samehost: %s's stats helper answered %T: %w", c.names[i], v, gen.ErrMalformed)
	}
	n, err := strconv.ParseUint(m["frames_out"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("samehost: %s: frames_out %q: %w", c.names[i], m["frames_out"], gen.ErrMalformed)
	}
	return n, nil
}
