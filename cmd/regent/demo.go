package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/observer"
)

// settleTimeout bounds every wait of a schedule for an election outcome.
const settleTimeout = 30 * time.Second

const demoSynopsis = `demo [flags]

Starts five members in this process on loopback TCP, prints every election as
it happens, then on a schedule kills the leader's node, restarts it, partitions
the cluster {3}|{2} with the leader in the minority, heals it, kills the
leader's process and hands leadership over, printing each failover time and
term. Serves the observer page meanwhile. Ctrl-C stops it cleanly. Its nodes
talk over loopback with a random cookie of their own.

Examples:
  regent demo
  regent demo --once --step 1s --observer 127.0.0.1:0
  regent demo --log-format json`

// defaultObserver is where the demo serves its page unless told otherwise;
// when it is taken the demo picks a free port.
const defaultObserver = "127.0.0.1:8480"

// demoConfig is the demo's command line.
type demoConfig struct {
	size      int
	step      time.Duration
	once      bool
	duration  time.Duration
	observer  string
	logFormat string
	noColor   bool
	verbose   bool
}

func runDemo(ctx context.Context, args []string, env *environment) error {
	var cfg demoConfig
	fs := newFlags(env, "demo", demoSynopsis)
	fs.IntVar(&cfg.size, "size", 5, "number of members (at least 3)")
	fs.DurationVar(&cfg.step, "step", 4*time.Second, "pause between the schedule's steps")
	fs.BoolVar(&cfg.once, "once", false, "exit after the schedule instead of running until Ctrl-C")
	fs.DurationVar(&cfg.duration, "duration", 0, "exit after this long even if the schedule is not finished (0: no limit)")
	fs.StringVar(&cfg.observer, "observer", defaultObserver, "address of the observer page (empty: none; port 0: any free port)")
	fs.StringVar(&cfg.logFormat, "log-format", logText, "log format: `text|json` (readable lines for a terminal, or one JSON object a line)")
	fs.BoolVar(&cfg.noColor, "no-color", false, "never color the log")
	fs.BoolVar(&cfg.verbose, "v", false, "also print every follower's change of leader")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if cfg.size < 3 {
		return usageError("--size %d: a cluster needs at least 3 members", cfg.size)
	}
	if cfg.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	p, err := newPrinter(env.stdout, cfg.logFormat, cfg.noColor)
	if err != nil {
		return err
	}
	d := newDemo(cfg, p)
	err = d.run(ctx)
	if stopErr := d.stop(); stopErr != nil {
		err = errors.Join(err, stopErr)
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		d.p.say("stopped; every node is down")
		return nil
	}
	if err == nil {
		d.p.say("schedule complete; every node is down")
	}
	return err
}

// demo is one run of the demo; its schedule runs on one goroutine, the
// printer is shared with the members' OnTransition calls.
type demo struct {
	cfg    demoConfig
	p      *printer
	c      *localCluster
	obs    *observer.Server
	obsOn  int          // index of the node serving the observer
	fault  atomic.Int64 // unix nanoseconds of the last injected fault, 0 when none pending
	quiet  atomic.Bool  // set while stopping: shutdown transitions are not news
	quorum int
}

func newDemo(cfg demoConfig, p *printer) *demo {
	d := &demo{cfg: cfg, p: p, quorum: cfg.size/2 + 1}
	rec := newRecorder(d.transition)
	d.c = newLocalCluster(cfg.size, "m", leader.Options{ClusterID: "demo"}, true, rec)
	d.c.log = p.nodeLog(gen.LogLevelError)
	return d
}

// transition logs one member's change; it runs on that member's goroutine.
// A new leader's line gives its votes against the quorum of its own view,
// which may be smaller than the cluster while a dead member is still a ghost.
func (d *demo) transition(t leader.Transition, prev view) {
	if d.quiet.Load() {
		return
	}
	who := slog.String("member", shortNode(t.Member.Node))
	term := slog.Uint64("term", t.Term)
	role := slog.String("role", string(t.Role))
	switch {
	case t.Role == leader.RoleLeader:
		attrs := []slog.Attr{who, role, term, slog.Int("votes", t.VotesGranted), slog.Int("quorum", t.Quorum), slog.Int("view", t.ViewSize)}
		if at := d.fault.Load(); at != 0 {
			attrs = append(attrs, slog.Duration("after", t.At.Sub(time.Unix(0, at))))
		}
		d.p.event(t.At, "LEADER", attrs...)
	case prev.role == leader.RoleLeader:
		d.p.event(t.At, "STEPDOWN", who, role, term)
	case t.Role == leader.RoleCandidate && (prev.role != t.Role || prev.term != t.Term):
		// A candidate that won leads hidden until its view commits at its
		// term: that report, and any view change meanwhile, are not news.
		d.p.event(t.At, "CANDIDATE", who, role, term)
	case t.Role == leader.RoleFollower && d.cfg.verbose:
		d.p.event(t.At, "FOLLOWER", who, role, term, slog.String("follows", orNone(t.Leader)))
	case t.Role == leader.RoleUnclustered && t.Role != prev.role:
		d.p.event(t.At, "UNCLUSTERED", who, role, term, slog.Int("view", t.ViewSize), slog.Int("min_cluster_size", t.MinClusterSize))
	}
}

func (d *demo) run(ctx context.Context) error {
	d.p.say("starting %d members on loopback TCP: %s", d.cfg.size, strings.Join(d.shortNames(), " "))
	t0 := time.Now()
	d.fault.Store(t0.UnixNano())
	if err := d.c.start(ctx); err != nil {
		return err
	}
	if d.cfg.observer != "" {
		if err := d.serveObserver(0); err != nil {
			return err
		}
		d.p.say("observer page: %s", d.obs.URL())
	}
	first, err := d.settle(ctx, 0, gen.PID{}, d.quorum)
	if err != nil {
		return err
	}
	d.report("cold start", first, first.At.Sub(t0))

	cur := first
	for _, f := range d.faults() {
		if err := d.pause(ctx); err != nil {
			return err
		}
		if cur, err = d.inflict(ctx, cur, f); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if d.cfg.once {
		return nil
	}
	d.p.say("schedule done; the cluster keeps running (Ctrl-C to stop)")
	<-ctx.Done()
	return ctx.Err()
}

// fault is one step of the schedule: what it does to the leader (index i),
// and how it repairs the damage afterwards (nil: nothing to repair).
type fault struct {
	name   string
	inject func(i int) error
	repair func(ctx context.Context, i int) error
}

// faults lists the schedule: node kill, silent partition with the leader in
// the minority, process kill, planned handover.
func (d *demo) faults() []fault {
	return []fault{
		{
			name: "failover after node kill",
			inject: func(i int) error {
				if err := d.avoidObserverOn(i); err != nil {
					return err
				}
				d.p.say("killing node %s (the leader) with StopForce: its peers see the connection drop", d.c.short(i))
				d.markFault()
				d.c.stopNode(i)
				return nil
			},
			repair: func(ctx context.Context, i int) error {
				if err := d.pause(ctx); err != nil {
					return err
				}
				d.p.say("restarting node %s on a new port", d.c.short(i))
				return d.c.restart(ctx, i)
			},
		},
		{
			name: "failover after a silent partition",
			inject: func(i int) error {
				minority, majority := d.split(i)
				d.p.say("partition {%s} | {%s}: traffic between the sides stalls, no connection drops", joinShort(majority), joinShort(minority))
				d.markFault()
				d.c.mesh.Partition(majority, minority)
				return nil
			},
			repair: func(ctx context.Context, _ int) error {
				if err := d.pause(ctx); err != nil {
					return err
				}
				d.p.say("healing the partition")
				d.c.mesh.Heal()
				return nil
			},
		},
		{
			name: "failover after process kill",
			inject: func(i int) error {
				d.p.say("killing the leader's process on %s (its node stays up): peers see a real exit reason", d.c.short(i))
				d.markFault()
				return d.c.killMember(i)
			},
			repair: func(ctx context.Context, i int) error {
				d.p.say("respawning the member on %s", d.c.short(i))
				return d.c.spawn(ctx, i)
			},
		},
		{
			name: "planned handover",
			inject: func(i int) error {
				d.p.say("asking %s to hand leadership over (StepDown)", d.c.short(i))
				d.markFault()
				return leader.StepDownLeader(d.c.node(i), d.c.pids[i])
			},
		},
	}
}

// inflict runs one fault against cur's leader, reports the failover to a
// majority, repairs, and waits until every member follows one leader.
func (d *demo) inflict(ctx context.Context, cur leader.Agreement, f fault) (leader.Agreement, error) {
	i := d.c.index(cur.LeaderPID)
	t0 := time.Now()
	if err := f.inject(i); err != nil {
		return cur, err
	}
	next, err := d.settle(ctx, cur.Term, cur.LeaderPID, d.quorum)
	if err != nil {
		return cur, err
	}
	d.report(f.name, next, next.At.Sub(t0))
	if f.repair == nil {
		return next, nil
	}
	if err := f.repair(ctx, i); err != nil {
		return next, err
	}
	return d.settleAll(ctx, next)
}

// split puts member li and the fewest others needed into a minority.
func (d *demo) split(li int) (minority, majority []gen.Atom) {
	minority = []gen.Atom{d.c.names[li]}
	for i, name := range d.c.names {
		switch {
		case i == li:
		case len(minority) < d.cfg.size-d.quorum:
			minority = append(minority, name)
		default:
			majority = append(majority, name)
		}
	}
	return minority, majority
}

// settle waits, within settleTimeout, for quorum members to agree on a leader
// above term other than not.
func (d *demo) settle(ctx context.Context, term uint64, not gen.PID, quorum int) (leader.Agreement, error) {
	wctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	a, err := d.c.rec.waitAgreed(wctx, term, not, quorum)
	if err != nil && ctx.Err() != nil {
		return a, ctx.Err()
	}
	return a, err
}

// settleAll waits until every member follows one leader, at cur's term or later.
func (d *demo) settleAll(ctx context.Context, cur leader.Agreement) (leader.Agreement, error) {
	all, err := d.settle(ctx, cur.Term-1, gen.PID{}, d.cfg.size)
	if err != nil {
		return cur, err
	}
	d.fault.Store(0)
	d.p.say("all %d members follow %s at term %d", d.cfg.size, shortNode(all.Leader), all.Term)
	return all, nil
}

func (d *demo) report(what string, a leader.Agreement, took time.Duration) {
	d.fault.Store(0)
	d.p.say("%s: %s leads at term %d, recognised by %d of the %d members (a majority) in %s",
		what, shortNode(a.Leader), a.Term, len(a.Members), d.cfg.size, millis(took))
}

func (d *demo) markFault() {
	d.fault.Store(time.Now().UnixNano())
}

func (d *demo) pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d.cfg.step):
		return nil
	}
}

// serveObserver serves the observer page from node i, on the address it
// already has when it moves.
func (d *demo) serveObserver(i int) error {
	addr := d.cfg.observer
	if d.obs != nil {
		addr = d.obs.Addr()
		if err := d.obs.Close(); err != nil {
			return fmt.Errorf("moving the observer: %w", err)
		}
	}
	s, err := observer.Serve(d.c.node(i), addr, observer.WithSampleInterval(100*time.Millisecond))
	if err != nil && d.obs == nil && addr == defaultObserver {
		d.p.say("%v; serving the observer on a free port instead", err)
		s, err = observer.Serve(d.c.node(i), "127.0.0.1:0", observer.WithSampleInterval(100*time.Millisecond))
	}
	if err != nil {
		return err
	}
	d.obs, d.obsOn = s, i
	return nil
}

// avoidObserverOn moves the observer off node i before that node is killed.
func (d *demo) avoidObserverOn(i int) error {
	if d.obs == nil || d.obsOn != i {
		return nil
	}
	for _, j := range d.c.live() {
		if j != i {
			return d.serveObserver(j)
		}
	}
	return nil
}

func (d *demo) stop() error {
	d.quiet.Store(true)
	var errs []error
	if d.obs != nil {
		errs = append(errs, d.obs.Close())
	}
	errs = append(errs, d.c.stop())
	return errors.Join(errs...)
}

func (d *demo) shortNames() []string {
	out := make([]string, len(d.c.names))
	for i := range d.c.names {
		out[i] = d.c.short(i)
	}
	return out
}

// shortNode is a node name without its host.
func shortNode(n gen.Atom) string {
	s := string(n)
	if i := strings.IndexByte(s, '@'); i >= 0 {
		return s[:i]
	}
	return s
}

func joinShort(names []gen.Atom) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = shortNode(n)
	}
	return strings.Join(out, " ")
}

func orNone(pid gen.PID) string {
	if pid == (gen.PID{}) {
		return "nobody"
	}
	return shortNode(pid.Node)
}
