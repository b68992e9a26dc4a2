package modelcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Result is what one search did and found.
type Result struct {
	// Config describes the search in one line.
	Config string
	// Depth is the deepest level explored completely (actions after the
	// Prefix); Complete says whether that is MaxDepth, or the whole
	// reachable space ended earlier, rather than MaxStates cutting it short.
	Depth    int
	Complete bool
	// States counts the distinct states found, the initial one included;
	// PerDepth how many were new at each depth from 0.
	States   int
	PerDepth []int
	// Transitions counts the actions applied while expanding states,
	// including those that led to a state already seen.
	Transitions int
	Elapsed     time.Duration
	// Violation is the first broken invariant found, on a shortest path
	// (searches go breadth first); nil when none was.
	Violation *Violation
	// Goals lists Config.Goals in order, each with where it was first
	// reached.
	Goals []GoalResult
}

// Goal is a state a search is meant to reach, as evidence that it exercised
// what it names.
type Goal struct {
	Name    string
	Reached func(s *State) bool
}

// GoalResult says whether and where a search reached a Goal.
type GoalResult struct {
	Name    string
	Reached bool
	// Path is a shortest path (after the Prefix) to a state that reached it.
	Path []Action
}

// Missed lists the goals the search did not reach.
func (r Result) Missed() []string {
	var out []string
	for _, g := range r.Goals {
		if !g.Reached {
			out = append(out, g.Name)
		}
	}
	return out
}

// StatesPerSecond is the search's speed.
func (r Result) StatesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.States) / r.Elapsed.Seconds()
}

// String gives the figures in one line.
func (r Result) String() string {
	done := "complete"
	switch {
	case r.Violation != nil:
		done = fmt.Sprintf("stopped by a violation at depth %d", len(r.Violation.Path))
	case !r.Complete:
		done = fmt.Sprintf("cut by MaxStates at depth %d", r.Depth+1)
	}
	var goals []string
	for _, g := range r.Goals {
		if g.Reached {
			goals = append(goals, fmt.Sprintf("%q at depth %d", g.Name, len(g.Path)))
		} else {
			goals = append(goals, fmt.Sprintf("%q not reached", g.Name))
		}
	}
	out := fmt.Sprintf("depth %d (%s), %d states, %d transitions, %s, %.0f states/s, per depth %v",
		r.Depth, done, r.States, r.Transitions, r.Elapsed.Round(time.Millisecond), r.StatesPerSecond(), r.PerDepth)
	if len(goals) > 0 {
		out += "; goals: " + strings.Join(goals, ", ")
	}
	return out
}

// Violation is a broken invariant and the path that breaks it.
type Violation struct {
	Invariant string
	Err       error
	// Path is the actions after the Prefix; Replay(cfg, Path) reproduces it.
	Path []Action
	// Trace is the Prefix and the Path, one action per line, each with
	// every member's role, term and view size after it.
	Trace []string
}

// Error gives the invariant, what broke it and the trace.
func (v *Violation) Error() string {
	return fmt.Sprintf("invariant %q broken after %d actions: %v\n%s", v.Invariant, len(v.Path), v.Err, strings.Join(v.Trace, "\n"))
}

// treeNode is a state of the search tree, kept as the action that reached
// it: states themselves are rebuilt by replaying the tree from the root, so
// a search holds in memory only the states on one path.
type treeNode struct {
	parent   *treeNode
	act      Action
	children []*treeNode
	// sleep lists the actions not to take from this state: each leads to a
	// state that another order of the same independent actions reaches.
	sleep []actionID
}

func (n *treeNode) path() []Action {
	var out []Action
	for ; n.parent != nil; n = n.parent {
		out = append(out, n.act)
	}
	slices.Reverse(out)
	return out
}

// Check explores every path of up to cfg.MaxDepth actions from the state
// cfg.Prefix leads to, breadth first, merging states with equal keys, and
// checks the invariants on every state found. Errors wrap gen.ErrIncorrect
// for a config or Prefix that cannot run; a broken invariant is a finding,
// reported in Result.Violation.
//
// Sleep sets spare it most transitions between states already found: of
// two independent actions (feeding different cores), once the order a, b
// was taken from a state, b, a is not. That prunes no state: each state of
// a layer is expanded once with the intersection of the sleep sets it was
// reached with, and a state on a shortest path is reached first in the
// layer of its depth, which is what the reduction's proof needs.
func Check(cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	x := &search{cfg: &cfg, began: time.Now(), seen: map[uint64]struct{}{}}
	x.res = Result{Config: cfg.String(), Complete: true}
	root, v, err := prefix(&cfg)
	if err != nil {
		return x.res, err
	}
	if v != nil {
		x.res.Violation, x.res.Elapsed = v, time.Since(x.began)
		return x.res, nil
	}
	x.seen[root.hash(&x.sc)] = struct{}{}
	x.res.States, x.res.PerDepth = 1, []int{1}
	for _, g := range cfg.Goals {
		x.res.Goals = append(x.res.Goals, GoalResult{Name: g.Name})
	}
	tree := &treeNode{}
	x.reach(root, tree, nil)
	for depth := 0; depth < cfg.MaxDepth && !x.stopped; depth++ {
		x.depth, x.found, x.layer = depth, 0, map[uint64]*treeNode{}
		if err := x.walk(tree, root, 0); err != nil {
			return x.res, err
		}
		x.res.PerDepth = append(x.res.PerDepth, x.found)
		if !x.stopped {
			x.res.Depth = depth + 1
		}
		if x.found == 0 {
			break // nothing new: deeper levels hold nothing either
		}
	}
	x.res.Elapsed = time.Since(x.began)
	if x.failed != nil {
		path := append(x.failed.path(), x.failedAct)
		trace, err := Trace(cfg, path)
		if err != nil {
			return x.res, err
		}
		x.res.Violation = &Violation{Invariant: x.failedRule, Err: x.failure, Path: path, Trace: trace}
	}
	return x.res, nil
}

// search is one run of Check.
type search struct {
	cfg   *Config
	began time.Time
	res   Result
	seen  map[uint64]struct{}
	sc    scratch
	// depth is the layer being expanded; found counts its new states and
	// layer indexes the nodes made for them, to merge their sleep sets.
	depth   int
	found   int
	layer   map[uint64]*treeNode
	acts    []Action
	stopped bool
	// The first violation: the node it was reached from and how.
	failed     *treeNode
	failedAct  Action
	failure    error
	failedRule string
}

// walk replays the tree from n (whose state is s, at depth d) down to the
// layer being expanded, and expands it.
func (x *search) walk(n *treeNode, s *State, d int) error {
	if d == x.depth {
		return x.expand(n, s)
	}
	for _, c := range n.children {
		if x.stopped {
			return nil
		}
		cs := s.fork()
		if err := cs.step(c.act); err != nil {
			return fmt.Errorf("modelcheck: replaying %s: %w", c.act.Kind, err)
		}
		cs.raiseFloors()
		if err := x.walk(c, cs, d+1); err != nil {
			return err
		}
	}
	return nil
}

// expand takes every enabled action of s not in n's sleep set, checks the
// invariants on each new state and, unless it is at MaxDepth, keeps a node
// for it.
func (x *search) expand(n *treeNode, s *State) error {
	keep := x.depth+1 < x.cfg.MaxDepth
	x.acts = s.actions(x.acts)
	sleep := n.sleep
	n.sleep = nil // not needed once expanded
	var done []actionID
	for _, a := range x.acts {
		id := s.id(a)
		if !x.cfg.fullSearch && slices.Contains(sleep, id) {
			continue
		}
		cs := s.fork()
		if err := cs.step(a); err != nil {
			return fmt.Errorf("modelcheck: applying %s: %w", a.Kind, err)
		}
		x.res.Transitions++
		var childSleep []actionID
		if keep && !x.cfg.fullSearch {
			for _, u := range slices.Concat(sleep, done) {
				if independent(u, id) {
					childSleep = append(childSleep, u)
				}
			}
		}
		done = append(done, id)
		h := cs.hash(&x.sc)
		if _, dup := x.seen[h]; dup {
			if c := x.layer[h]; c != nil {
				c.sleep = slices.DeleteFunc(c.sleep, func(u actionID) bool { return !slices.Contains(childSleep, u) })
			}
			continue
		}
		x.seen[h] = struct{}{}
		x.res.States++
		x.found++
		x.reach(cs, n, &a)
		if rule, err := cs.check(); err != nil {
			x.failed, x.failedAct, x.failure, x.failedRule = n, a, err, rule
			x.stopped = true
			return nil
		}
		cs.raiseFloors()
		if keep {
			c := &treeNode{parent: n, act: a, sleep: childSleep}
			n.children = append(n.children, c)
			x.layer[h] = c
		}
		if x.cfg.MaxStates > 0 && x.res.States >= x.cfg.MaxStates {
			x.stopped, x.res.Complete = true, false
			return nil
		}
	}
	return nil
}

// reach marks the goals s reaches, s being the state that a (nil for none)
// leads to from n.
func (x *search) reach(s *State, n *treeNode, a *Action) {
	for k, g := range x.cfg.Goals {
		if x.res.Goals[k].Reached || !g.Reached(s) {
			continue
		}
		x.res.Goals[k].Reached = true
		x.res.Goals[k].Path = n.path()
		if a != nil {
			x.res.Goals[k].Path = append(x.res.Goals[k].Path, *a)
		}
	}
}

// prefix builds the initial state and plays cfg.Prefix on it, checking the
// invariants after every action.
func prefix(cfg *Config) (*State, *Violation, error) {
	s, err := initial(cfg)
	if err != nil {
		return nil, nil, err
	}
	check := func(done int) *Violation {
		rule, err := s.check()
		if err == nil {
			s.raiseFloors()
			return nil
		}
		played := *cfg
		played.Prefix = cfg.Prefix[:done]
		trace, _ := Trace(played, nil) // the same actions played once already
		return &Violation{Invariant: rule, Err: err, Trace: trace}
	}
	if v := check(0); v != nil {
		return nil, v, nil
	}
	for k, a := range cfg.Prefix {
		s = s.fork()
		if err := s.step(a); err != nil {
			return nil, nil, fmt.Errorf("modelcheck: prefix action %d: %w", k+1, err)
		}
		if v := check(k + 1); v != nil {
			return nil, v, nil
		}
	}
	return s, nil, nil
}

// check runs the invariants on s, returning the first broken one's name
// and error.
func (s *State) check() (string, error) {
	for _, inv := range s.cfg.Invariants {
		if err := inv.Check(s); err != nil {
			return inv.Name, err
		}
	}
	return "", nil
}

// Replay plays cfg.Prefix and then path from the initial state, checking
// the invariants after every action, and returns the state it ends in and
// the first violation, nil when none. Errors wrap gen.ErrIncorrect for an
// action that is not enabled where it is played.
func Replay(cfg Config, path []Action) (*State, *Violation, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	s, v, err := prefix(&cfg)
	if err != nil || v != nil {
		return s, v, err
	}
	for k, a := range path {
		s = s.fork()
		if err := s.step(a); err != nil {
			return nil, nil, fmt.Errorf("modelcheck: action %d: %w", k+1, err)
		}
		if rule, err := s.check(); err != nil {
			trace, terr := Trace(cfg, path[:k+1])
			if terr != nil {
				return nil, nil, terr
			}
			return s, &Violation{Invariant: rule, Err: err, Path: slices.Clone(path[:k+1]), Trace: trace}, nil
		}
		s.raiseFloors()
	}
	return s, nil, nil
}

// Trace describes cfg.Prefix and then path, one line per action, each with
// every member's role, term and view size after it.
func Trace(cfg Config, path []Action) ([]string, error) {
	cfg = cfg.withDefaults()
	s, err := initial(&cfg)
	if err != nil {
		return nil, err
	}
	lines := []string{fmt.Sprintf("    start: %s", s.summary())}
	play := func(label string, a Action) error {
		next := s.fork() // s itself is left as it was, to describe a
		if err := next.step(a); err != nil {
			return fmt.Errorf("modelcheck: %s %s: %w", label, a.Kind, err)
		}
		what := s.describe(a)
		s = next
		s.raiseFloors()
		lines = append(lines, fmt.Sprintf("%5s %-72s => %s", label, what, s.summary()))
		return nil
	}
	for k, a := range cfg.Prefix {
		if err := play(fmt.Sprintf("p%d.", k+1), a); err != nil {
			return nil, err
		}
	}
	for k, a := range path {
		if err := play(fmt.Sprintf("%d.", k+1), a); err != nil {
			return nil, err
		}
	}
	return lines, nil
}
