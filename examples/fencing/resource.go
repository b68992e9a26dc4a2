package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// errStaleToken is the resource's answer to a writer whose token is older than
// one it has already accepted: a newer leader exists, and the writer must stop.
var errStaleToken = errors.New("fencing: stale token")

// resource is a ledger file guarded by a fencing token kept beside it. Updates
// from several processes are serialised by an flock on the token file, so the
// check and the write are one step, as in
// UPDATE ... WHERE owner_token IS NULL OR owner_token <= :token.
type resource struct {
	dir string
}

func (r resource) tokenPath() string  { return filepath.Join(r.dir, "owner_token") }
func (r resource) ledgerPath() string { return filepath.Join(r.dir, "ledger") }

// write appends entry to the ledger if token is not older than the newest
// token the resource has accepted, and records token as the newest.
func (r resource) write(token uint64, who, entry string) (err error) {
	f, err := os.OpenFile(r.tokenPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("fencing: opening the token: %w", err)
	}
	defer func() {
		// Closing the file also releases the lock; a failed close may have
		// lost the token write, so it is an error too.
		if cerr := f.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("fencing: closing the token: %w", cerr))
		}
	}()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("fencing: locking the token: %w", err)
	}
	raw, err := os.ReadFile(r.tokenPath())
	if err != nil {
		return fmt.Errorf("fencing: reading the token: %w", err)
	}
	var newest uint64
	if s := strings.TrimSpace(string(raw)); s != "" {
		if newest, err = strconv.ParseUint(s, 10, 64); err != nil {
			return fmt.Errorf("fencing: the token file holds %q: %w", s, err)
		}
	}
	if token == 0 || token < newest {
		return fmt.Errorf("%w: %d is older than %d (%s must stop)", errStaleToken, token, newest, who)
	}
	ledger, err := os.OpenFile(r.ledgerPath(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("fencing: opening the ledger: %w", err)
	}
	if _, err := fmt.Fprintf(ledger, "%d %s %s\n", token, who, entry); err != nil {
		ledger.Close()
		return fmt.Errorf("fencing: appending to the ledger: %w", err)
	}
	if err := ledger.Close(); err != nil {
		return fmt.Errorf("fencing: closing the ledger: %w", err)
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("fencing: resetting the token: %w", err)
	}
	if _, err := f.WriteAt([]byte(strconv.FormatUint(token, 10)), 0); err != nil {
		return fmt.Errorf("fencing: recording the token: %w", err)
	}
	return nil
}

// entries reads the ledger's lines.
func (r resource) entries() ([]string, error) {
	raw, err := os.ReadFile(r.ledgerPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fencing: reading the ledger: %w", err)
	}
	return strings.Split(strings.TrimSpace(string(raw)), "\n"), nil
}
