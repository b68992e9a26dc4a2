package mmfcell

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/regent-go/regent/gen"
)

// HeaderSize is the exact size in bytes of a cell file: one cache line.
const HeaderSize = 64

// Version is the layout version this package writes and accepts.
const Version = 1

// magic identifies a cell file; it occupies bytes 0..3.
const magic = "RGNC"

// Byte offsets of the header fields; see the package documentation.
const (
	offVersion  = 4
	offLeader   = 8
	offBeat     = 16
	offEpoch    = 24
	offIdentity = 32
	offAdvance  = 40
	offOwner    = 48
)

// ErrBadFile is wrapped by every refusal of a file that is not a valid cell:
// wrong size, wrong magic or an unsupported version. It wraps gen.ErrMalformed.
var ErrBadFile = fmt.Errorf("mmfcell: not a valid cell file: %w", gen.ErrMalformed)

// ErrOtherOwner is returned by Create and Open given WithOwner for a cell
// already bound to another owner. It wraps gen.ErrIncorrect.
var ErrOtherOwner = fmt.Errorf("mmfcell: cell is bound to another owner: %w", gen.ErrIncorrect)

// ErrClosed is returned by Close on a cell that is already closed. It wraps
// gen.ErrNotAllowed.
var ErrClosed = fmt.Errorf("mmfcell: cell is closed: %w", gen.ErrNotAllowed)

// Cell is one process's mapping of a cell file. Its state lives in the shared
// mapping and is touched only through atomic operations, so a Cell needs no
// lock and may be used from many goroutines; only Close must not overlap
// other calls.
type Cell struct {
	path  string
	mem   []byte
	probe Probe
	self  uint32
	// selfPrint is the fingerprint of this process, read once when opened.
	selfPrint uint32

	leader   *atomic.Uint64
	beat     *atomic.Uint64
	epoch    *atomic.Uint64
	identity *atomic.Uint64
	advance  *atomic.Uint64
}

// Option adjusts how Create and Open set up a Cell.
type Option func(*config)

type config struct {
	probe Probe
	mode  fs.FileMode
	owner uint64
}

// WithOwner binds the cell to owner, a key of what it serves (the leader
// package uses a hash of the cluster's ID): a cell bound to no owner is
// bound to it, and one bound to another owner is refused with an error
// wrapping ErrOtherOwner, so two users of one path on a host are told
// instead of sharing one holder. Zero binds nothing and checks nothing.
func WithOwner(owner uint64) Option {
	return func(c *config) { c.owner = owner }
}

// WithProbe replaces the liveness and identity check (SystemProbe by
// default); tests use it to run the election with fake PIDs.
func WithProbe(p Probe) Option {
	return func(c *config) { c.probe = p }
}

// WithFileMode sets the permissions Create gives a new file (0600 by
// default); members running as different users need a wider mode.
func WithFileMode(mode fs.FileMode) Option {
	return func(c *config) { c.mode = mode }
}

// Create opens the cell file at path, creating and initialising it when it
// does not exist or is empty. An existing valid cell is opened as it is,
// never reset; anything else is refused with an error wrapping ErrBadFile.
func Create(path string, opts ...Option) (*Cell, error) {
	cfg := newConfig(opts)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, cfg.mode)
	if err != nil {
		return nil, fmt.Errorf("mmfcell: create %s: %w", path, err)
	}
	return mapFile(f, path, cfg, true)
}

// Open maps an existing cell file at path. A missing file is an error
// wrapping fs.ErrNotExist; a file that is not a valid cell is refused with an
// error wrapping ErrBadFile.
func Open(path string, opts ...Option) (*Cell, error) {
	cfg := newConfig(opts)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("mmfcell: open %s: %w", path, err)
	}
	return mapFile(f, path, cfg, false)
}

func newConfig(opts []Option) config {
	cfg := config{probe: SystemProbe, mode: 0o600}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// mapFile maps the cell file f and closes f.
func mapFile(f *os.File, path string, cfg config, create bool) (*Cell, error) {
	mem, err := lockAndMap(f, path, create)
	// The mapping outlives the descriptor, so the file is closed either way.
	if cerr := closeFile(f, path); cerr != nil {
		if err == nil {
			err = errors.Join(cerr, munmap(mem, path))
		} else {
			err = errors.Join(err, cerr)
		}
	}
	if err != nil {
		return nil, err
	}
	if owner := word(mem, offOwner); cfg.owner != 0 && !owner.CompareAndSwap(0, cfg.owner) && owner.Load() != cfg.owner {
		err := fmt.Errorf("%w: %s is bound to owner %#x, not %#x", ErrOtherOwner, path, owner.Load(), cfg.owner)
		return nil, errors.Join(err, munmap(mem, path))
	}
	self := uint32(os.Getpid())
	return &Cell{
		path:      path,
		mem:       mem,
		probe:     cfg.probe,
		self:      self,
		selfPrint: cfg.probe(self).Fingerprint,
		leader:    word(mem, offLeader),
		beat:      word(mem, offBeat),
		epoch:     word(mem, offEpoch),
		identity:  word(mem, offIdentity),
		advance:   word(mem, offAdvance),
	}, nil
}

// prepare checks the header of f, writing a fresh one first when create is
// set and the file is empty. The caller holds the file lock.
func prepare(f *os.File, path string, create bool) error {
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("mmfcell: stat %s: %w", path, err)
	}
	if create && info.Size() == 0 {
		if _, err := f.WriteAt(freshHeader(), 0); err != nil {
			return fmt.Errorf("mmfcell: initialise %s: %w", path, err)
		}
		return nil
	}
	if info.Size() != HeaderSize {
		return fmt.Errorf("%w: %s is %d bytes, want %d", ErrBadFile, path, info.Size(), HeaderSize)
	}
	head := make([]byte, HeaderSize)
	if _, err := f.ReadAt(head, 0); err != nil {
		return fmt.Errorf("mmfcell: read %s: %w", path, err)
	}
	return checkHeader(head, path)
}

func freshHeader() []byte {
	head := make([]byte, HeaderSize)
	copy(head, magic)
	binary.NativeEndian.PutUint32(head[offVersion:], Version)
	return head
}

func checkHeader(head []byte, path string) error {
	if string(head[:len(magic)]) != magic {
		return fmt.Errorf("%w: %s has magic %q, want %q", ErrBadFile, path, head[:len(magic)], magic)
	}
	if v := binary.NativeEndian.Uint32(head[offVersion:]); v != Version {
		return fmt.Errorf("%w: %s has layout version %d, this package reads %d", ErrBadFile, path, v, Version)
	}
	return nil
}

// word returns the atomic 8-byte word at off in the mapping; off is a
// multiple of 8 and the mapping is page aligned.
func word(mem []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&mem[off]))
}

// Close unmaps the cell. The cell's state stays in the file for other
// members. A second Close returns ErrClosed.
func (c *Cell) Close() error {
	if c.mem == nil {
		return ErrClosed
	}
	err := munmap(c.mem, c.path)
	c.mem = nil
	c.leader, c.beat, c.epoch, c.identity, c.advance = nil, nil, nil, nil, nil
	return err
}

// Path returns the file the cell was opened from.
func (c *Cell) Path() string { return c.path }

// Self returns this process's PID in the width the cell stores, for passing
// to TryClaim, Beat and StepDown.
func (c *Cell) Self() uint32 { return c.self }

func closeFile(f *os.File, path string) error {
	if err := f.Close(); err != nil {
		return fmt.Errorf("mmfcell: close %s: %w", path, err)
	}
	return nil
}
