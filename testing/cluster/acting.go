package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/regent-go/regent/gen"
)

// What a user relies on is not the election's state but what IsLeader says
// when its code is about to act. In OS-process mode with Config.Worker,
// every member records each act (ReadActs), and ActingOverlaps finds where
// the acts of two leaderships interleave in wall-clock time: one host, one
// clock.

// Act is one record of a member acting as leader.
type Act struct {
	Member string
	Life   int
	// Term is the member's term and Token its FencingToken, read after
	// IsLeader said yes (a Token of 0 means the evidence lapsed in between).
	Term, Token uint64
	// Before is just before the IsLeader that said yes; At just after it,
	// the instant the user acts.
	Before, At time.Time
}

// actFile is where member label records its acts in life.
func actFile(dir, label string, life int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.%d", label, life))
}

// ReadActs reads every member's records from dir, ordered by At.
func ReadActs(dir string) ([]Act, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.*"))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var acts []Act
	for _, name := range files {
		label, lifeText, _ := strings.Cut(filepath.Base(name), ".")
		life, err := strconv.Atoi(lifeText)
		if err != nil {
			continue // not a record file
		}
		got, err := readActFile(name, label, life)
		if err != nil {
			return nil, err
		}
		acts = append(acts, got...)
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].At.Before(acts[j].At) })
	return acts, nil
}

func readActFile(name, label string, life int) ([]Act, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	defer f.Close()
	var acts []Act
	s := bufio.NewScanner(f)
	for s.Scan() {
		var term, token uint64
		var before, at int64
		if _, err := fmt.Sscanf(s.Text(), "ACT %d %d %d %d", &term, &token, &before, &at); err != nil {
			// Only a kill in the middle of the last write leaves a torn line.
			return nil, fmt.Errorf("cluster: %s: record %q: %v: %w", name, s.Text(), err, gen.ErrMalformed)
		}
		acts = append(acts, Act{Member: label, Life: life, Term: term, Token: token, Before: time.Unix(0, before), At: time.Unix(0, at)})
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", name, err)
	}
	return acts, nil
}

// Overlap is the worst interleaving of two leaderships' acts: Older (of the
// lower term) acted By after Newer (of the higher term) had first acted.
type Overlap struct {
	Older, Newer Act
	By           time.Duration
}

func (o Overlap) String() string {
	return fmt.Sprintf("%s (life %d, term %d) acted %v after %s (life %d, term %d) first did, at %s",
		o.Older.Member, o.Older.Life, o.Older.Term, o.By, o.Newer.Member, o.Newer.Life, o.Newer.Term, o.Newer.At.Format("15:04:05.000000"))
}

// leadership is the span of one member's acts in one life and term.
type leadership struct {
	first, last Act
}

// ActingOverlaps compares every two leaderships (a member's acts in one life
// and term) of different terms and returns each pair whose acts overlap in
// time, worst first: the last act of the older term came after the first
// act of the newer one. Two leaderships of one term by different members
// are an error (at most one leader per term).
func ActingOverlaps(acts []Act) ([]Overlap, error) {
	type key struct {
		member string
		life   int
		term   uint64
	}
	spans := map[key]*leadership{}
	var keys []key
	for _, a := range acts {
		k := key{a.Member, a.Life, a.Term}
		s, ok := spans[k]
		if !ok {
			s = &leadership{first: a, last: a}
			spans[k] = s
			keys = append(keys, k)
		}
		if a.At.Before(s.first.At) {
			s.first = a
		}
		if a.At.After(s.last.At) {
			s.last = a
		}
	}
	var out []Overlap
	var errs []error
	for i, ki := range keys {
		for _, kj := range keys[i+1:] {
			a, b := spans[ki], spans[kj]
			switch {
			case ki.term == kj.term && ki.member != kj.member:
				errs = append(errs, fmt.Errorf("cluster: %s and %s both acted in term %d: %w", ki.member, kj.member, ki.term, gen.ErrIncorrect))
				continue
			case ki.term == kj.term:
				continue // one member's two lives in one term: no restart keeps acting
			case ki.term > kj.term:
				a, b = b, a
			}
			if by := a.last.At.Sub(b.first.At); by >= 0 {
				out = append(out, Overlap{Older: a.last, Newer: b.first, By: by})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].By > out[j].By })
	return out, errors.Join(errs...)
}

// Pause stops member i's process (SIGSTOP), as a long GC pause or a frozen
// VM would: its connections stay open and silent. OS-process mode only.
func (c *Cluster) Pause(i int) error { return c.signal(i, syscall.SIGSTOP, "pause") }

// Resume continues member i's process after Pause (SIGCONT).
func (c *Cluster) Resume(i int) error { return c.signal(i, syscall.SIGCONT, "resume") }

// BlockHandler makes member i's worker block its next handler for
// WorkerConfig.Block (SIGUSR1): user code that runs long.
func (c *Cluster) BlockHandler(i int) error {
	return c.signal(i, syscall.SIGUSR1, "block the handler of")
}

func (c *Cluster) signal(i int, sig syscall.Signal, what string) error {
	c.ops.Lock()
	defer c.ops.Unlock()
	m, err := c.member(i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	proc, alive := m.proc, m.alive
	c.mu.Unlock()
	switch {
	case proc == nil && alive:
		return fmt.Errorf("cluster: %s member %d in in-process mode: %w", what, i, gen.ErrUnsupported)
	case !alive:
		return fmt.Errorf("cluster: %s member %d: it is down: %w", what, i, gen.ErrNotAllowed)
	}
	if err := proc.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("cluster: %s member %d: %w", what, i, err)
	}
	c.note(fmt.Sprintf("%s %s", what, c.cfg.label(i)))
	return nil
}
