//go:build unix

package mmfcell

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockAndMap validates f, initialising it first when create is set and it is
// empty, under an advisory lock so that a concurrent Create never shows a
// half-written header, then maps it.
func lockAndMap(f *os.File, path string, create bool) ([]byte, error) {
	lock := unix.LOCK_SH
	if create {
		lock = unix.LOCK_EX
	}
	if err := flock(f, lock); err != nil {
		return nil, fmt.Errorf("mmfcell: lock %s: %w", path, err)
	}
	if err := prepare(f, path, create); err != nil {
		return nil, errors.Join(err, unlock(f, path))
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, HeaderSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("mmfcell: map %s: %w", path, err), unlock(f, path))
	}
	if err := unlock(f, path); err != nil {
		return nil, errors.Join(err, munmap(mem, path))
	}
	return mem, nil
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func unlock(f *os.File, path string) error {
	if err := flock(f, unix.LOCK_UN); err != nil {
		return fmt.Errorf("mmfcell: unlock %s: %w", path, err)
	}
	return nil
}

func munmap(mem []byte, path string) error {
	if err := unix.Munmap(mem); err != nil {
		return fmt.Errorf("mmfcell: unmap %s: %w", path, err)
	}
	return nil
}
